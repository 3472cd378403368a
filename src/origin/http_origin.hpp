// The `http` origin: a miss or a refresh is one HTTP/1.1 GET to a URL built from the key, over a
// keep-alive connection pool; 200 is the value, 404 is nil, 304 (to a conditional GET) keeps the
// stored value, anything else is a failure. Responses carry their HTTP caching (response_caching).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "cache/clock.hpp"
#include "config/settings.hpp"
#include "origin/origin.hpp"

namespace corral::origin {

namespace http_detail {
class Pool;
}

// One per policy per io thread; fetch() only on that executor's thread. Serves GET, EXISTS,
// STRLEN and GETRANGE on one key. At most `max_connections` are open; further fetches wait in a
// bounded queue. `timeout` bounds a fetch from the call to the answer (queueing and retries
// included), `connect_timeout` each connection attempt. Connection failures, and a reused
// connection lost before any response byte, are retried up to `retries` times; timeouts and bad
// statuses never are. Destroy it on the executor's thread (or once that no longer runs): the
// fetches still pending fail (their callbacks run later on the executor, or are dropped with it).
class HttpOrigin final : public Origin {
 public:
  HttpOrigin(const boost::asio::any_io_executor& executor, std::string prefix,
             const config::HttpOriginSettings& settings, const cache::Clock& clock);
  ~HttpOrigin() override;
  HttpOrigin(const HttpOrigin&) = delete;
  HttpOrigin& operator=(const HttpOrigin&) = delete;

  std::string_view name() const override { return "http"; }
  void fetch(std::span<const std::string_view> argv, FetchCallback done) override;
  // A conditional GET (If-None-Match / If-Modified-Since); a 304 answers not_modified.
  void revalidate(std::span<const std::string_view> argv, FetchReason reason,
                  std::string_view validators, FetchCallback done) override;

 private:
  // Shared with the connections and timers, so it outlives the origin until they finish.
  std::shared_ptr<http_detail::Pool> pool_;
};

}  // namespace corral::origin
