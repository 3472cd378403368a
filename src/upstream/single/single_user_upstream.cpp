// One Redis, logged in as an upstream ACL user: a Pool of that user and the SingleUpstream over it.
#include "upstream/single/single_user_upstream.hpp"

#include "upstream/single/pool.hpp"
#include "upstream/single/single_upstream.hpp"

namespace corral::upstream {

namespace {

class SingleUserUpstream final : public UserUpstream {
 public:
  SingleUserUpstream(const boost::asio::any_io_executor& executor,
                     const config::UpstreamSettings& settings, metrics::ThreadStats* stats,
                     UserLogin login)
      : pool_(executor, settings, stats, nullptr, std::move(login)),
        upstream_(executor, pool_, settings.database) {}
  ~SingleUserUpstream() override { pool_.close(); }

  Upstream& upstream() override { return upstream_; }
  bool refused() const override { return pool_.refused(); }

 private:
  Pool pool_;
  SingleUpstream upstream_;
};

}  // namespace

std::unique_ptr<UserUpstream> make_single_user_upstream(
    const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
    metrics::ThreadStats* stats, UserLogin login) {
  return std::make_unique<SingleUserUpstream>(executor, settings, stats, std::move(login));
}

}  // namespace corral::upstream
