// A Sentinel-managed primary, logged in as an upstream ACL user: links that follow the thread's own
// through failovers, and the single-Redis upstream over them. Its reads go to the primary: the
// replica reads run as Corral's own user, which would widen the user's rights.
#include "upstream/sentinel/sentinel_user_upstream.hpp"

#include "upstream/sentinel/sentinel_links.hpp"
#include "upstream/single/single_upstream.hpp"

namespace corral::upstream {

namespace {

class SentinelUserUpstream final : public UserUpstream {
 public:
  SentinelUserUpstream(const boost::asio::any_io_executor& executor, int database,
                       SentinelLinks& leader, UserLogin login)
      : links_(leader.follower(std::move(login))), upstream_(executor, *links_, database) {}
  ~SentinelUserUpstream() override { links_->close(); }

  Upstream& upstream() override { return upstream_; }
  bool refused() const override { return links_->refused(); }

 private:
  std::shared_ptr<SentinelLinks> links_;
  SingleUpstream upstream_;
};

}  // namespace

std::unique_ptr<UserUpstream> make_sentinel_user_upstream(
    const boost::asio::any_io_executor& executor, int database, SentinelLinks& leader,
    UserLogin login) {
  return std::make_unique<SentinelUserUpstream>(executor, database, leader, std::move(login));
}

}  // namespace corral::upstream
