// The replication offsets a replica poller reads: one reconnecting connection per node it
// polls, INFO replication asked over it. Shared by the Sentinel and the cluster replica pollers;
// runs on one io thread.
#pragma once

#include <utility>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "config/settings.hpp"

namespace corral::upstream {

class Connection;

class OffsetProbe {
 public:
  OffsetProbe(const boost::asio::any_io_executor& executor,
              const config::UpstreamSettings& settings)
      : executor_(executor), settings_(settings) {}
  ~OffsetProbe() { close(); }

  // A primary's master_repl_offset; nullopt when it does not answer.
  boost::asio::awaitable<std::optional<std::uint64_t>> primary_offset(
      const config::Endpoint& primary);
  // A replica's slave_repl_offset; nullopt when it does not answer or its link to its primary
  // is down.
  boost::asio::awaitable<std::optional<std::uint64_t>> replica_offset(
      const config::Endpoint& replica);
  // Closes the connections to every node but `kept` ("host:port").
  void keep_only(const std::vector<std::string>& kept);
  void close();

 private:
  std::shared_ptr<Connection> node(const config::Endpoint& address);

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  std::map<std::string, std::shared_ptr<Connection>> nodes_;  // by "host:port"
};

}  // namespace corral::upstream
