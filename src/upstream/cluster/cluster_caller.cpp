// Corral's own keyed calls on a Redis Cluster: a ClusterCommand per call, routed by the key's
// slot.
#include "upstream/cluster/cluster_caller.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "config/values.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::upstream {

namespace {

class ClusterCaller final : public KeyedCaller {
 public:
  ClusterCaller(const boost::asio::any_io_executor& executor, ClusterLinks& links,
                const KeyedCallerOptions& options, int max_redirects)
      : executor_(executor), links_(links) {
    options_.max_redirects = max_redirects;
    options_.unreachable_retries = options.failover_retries;
    // CLUSTERDOWN means nothing ran: always safe to ask again.
    options_.clusterdown_retries = std::max(options.failover_retries, kClusterDownRetries);
  }

  const boost::asio::any_io_executor& executor() const override { return executor_; }
  bool send(std::string_view key, std::string command, std::shared_ptr<ReplyTarget> target,
            std::uint64_t tag) override {
    auto options = options_;
    options.slot = static_cast<int>(key_slot(key));
    start(options, std::move(command), std::move(target), tag);
    return true;
  }
  bool by_slot() const override { return true; }
  std::vector<std::string> primaries() override {
    const auto& routes = links_.routes();
    std::vector<std::string> names;
    for (const int p : routes.primaries)
      names.push_back(config::format_endpoint(routes.nodes[p].endpoint));
    return names;
  }
  bool send_to_primary(std::string_view primary, std::string command,
                       std::shared_ptr<ReplyTarget> target, std::uint64_t tag) override {
    boost::asio::post(
        executor_, [self = std::static_pointer_cast<ClusterCaller>(shared_from_this()),
                    name = std::string(primary), command = std::move(command),
                    target = std::move(target), tag]() mutable {
          const int node = self->find_primary(name);
          if (node < 0) {
            return target->on_failure(tag, "ERR cluster node " + name + " is no longer a primary");
          }
          auto options = self->options_;
          options.node = node;
          options.unreachable_retries = 0;  // a node that went away is not coming back as this one
          std::make_shared<ClusterCommand>(self->links_, std::move(command), options,
                                           std::move(target), tag)
              ->start();
        });
    return true;
  }

 private:
  static constexpr int kClusterDownRetries = 30;

  int find_primary(std::string_view name) {
    const auto& routes = links_.routes();
    for (const int p : routes.primaries) {
      if (config::format_endpoint(routes.nodes[p].endpoint) == name) return p;
    }
    return -1;
  }

  // From the event loop: a command without a node for its slot fails at once, and the contract
  // forbids answering from within send().
  void start(const ClusterCommandOptions& options, std::string command,
             std::shared_ptr<ReplyTarget> target, std::uint64_t tag) {
    auto cluster_command = std::make_shared<ClusterCommand>(links_, std::move(command), options,
                                                            std::move(target), tag);
    boost::asio::post(executor_, [cluster_command] { cluster_command->start(); });
  }

  boost::asio::any_io_executor executor_;
  ClusterLinks& links_;
  ClusterCommandOptions options_;
};

}  // namespace

std::shared_ptr<KeyedCaller> make_cluster_caller(const boost::asio::any_io_executor& executor,
                                                 ClusterLinks& links,
                                                 const KeyedCallerOptions& options,
                                                 int max_redirects) {
  return std::make_shared<ClusterCaller>(executor, links, options, max_redirects);
}

}  // namespace corral::upstream
