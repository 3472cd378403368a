// A one-command connection: the reply target owns the link until the reply arrives, then
// closes it, so nothing outlives the command.
#include "upstream/out_of_band.hpp"

#include <utility>

namespace corral::upstream {
namespace {

class OneShot : public ReplyTarget {
 public:
  explicit OneShot(std::shared_ptr<ReplyTarget> client) : client_(std::move(client)) {}
  void hold(std::shared_ptr<Link> link) { link_ = std::move(link); }
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    client_->on_reply(tag, reply);
    finish();
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
    finish();
  }

 private:
  // Closing from inside the link's own callback is safe: close() stops its delivery loop, and
  // the moved-out pointer keeps the link alive until this returns.
  void finish() {
    if (auto link = std::move(link_)) link->close();
  }

  std::shared_ptr<ReplyTarget> client_;
  std::shared_ptr<Link> link_;  // a cycle with the link's queue, broken by finish()
};

}  // namespace

bool send_once(std::shared_ptr<Link> link, std::string_view command,
               const std::shared_ptr<ReplyTarget>& target, std::uint64_t tag) {
  if (!link) return false;
  auto one_shot = std::make_shared<OneShot>(target);
  one_shot->hold(link);
  if (!link->send(command, one_shot, tag)) {
    link->close();
    one_shot->hold(nullptr);
    return false;
  }
  return true;
}

}  // namespace corral::upstream
