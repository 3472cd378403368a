// Corral's refusal list guards against mistakes; the boundary for scripts is the ACL of Corral's
// own upstream user. At start-up and on reload the upstream is asked (ACL DRYRUN) whether that
// user may run what Corral refuses; if so, one warning is logged and a gauge says how many.
#pragma once

#include <utility>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

namespace corral::upstream {
class Upstream;
}

namespace corral::proxy {

// The gauge's value when the upstream could not be asked (no ACL DRYRUN: Redis before 7.0, or a
// user without +acl|dryrun and +acl|whoami).
inline constexpr int kRefusalAuditUnknown = -1;

class RefusalAudit : public std::enable_shared_from_this<RefusalAudit> {
 public:
  // `runnable` receives the count of refused commands the user may run.
  RefusalAudit(const boost::asio::any_io_executor& executor, upstream::Upstream& upstream,
               std::atomic<int>& runnable);

  // On the executor's thread; a later call (a reload) supersedes a check still running. `allowed`
  // is client.allow_commands: what it lets through is not refused, so not reported.
  void start(std::vector<std::string> allowed);

 private:
  boost::asio::awaitable<void> run(std::vector<std::string> allowed, unsigned generation);

  boost::asio::any_io_executor executor_;
  upstream::Upstream& upstream_;
  std::atomic<int>& runnable_;
  unsigned generation_ = 0;
};

}  // namespace corral::proxy
