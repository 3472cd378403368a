// UpstreamSwitch: the session links each upstream handed out, so a drain deadline can end them,
// and the keyed caller that follows the switch.
#include "upstream/upstream_switch.hpp"

#include <algorithm>
#include <utility>

namespace corral::upstream {

namespace {

// Each send goes to the keyed caller of the upstream in use, asked again after a switch.
class FollowingKeyedCaller final : public KeyedCaller {
 public:
  FollowingKeyedCaller(const UpstreamSwitch& owner, KeyedCallerOptions options)
      : owner_(owner), options_(options) {}

  const boost::asio::any_io_executor& executor() const override { return inner().executor(); }
  bool send(std::string_view key, std::string command, std::shared_ptr<ReplyTarget> target,
            std::uint64_t tag) override {
    return inner().send(key, std::move(command), std::move(target), tag);
  }
  std::vector<std::string> primaries() override { return inner().primaries(); }
  bool by_slot() const override { return inner().by_slot(); }
  bool send_to_primary(std::string_view primary, std::string command,
                       std::shared_ptr<ReplyTarget> target, std::uint64_t tag) override {
    return inner().send_to_primary(primary, std::move(command), std::move(target), tag);
  }

 private:
  KeyedCaller& inner() const {
    if (!inner_ || generation_ != owner_.generation()) {
      inner_ = owner_.current().keyed_caller(options_);
      generation_ = owner_.generation();
    }
    return *inner_;
  }

  const UpstreamSwitch& owner_;
  KeyedCallerOptions options_;
  mutable std::shared_ptr<KeyedCaller> inner_;
  mutable std::uint64_t generation_ = 0;
};

void drop_ended(std::vector<std::weak_ptr<Link>>& links) {
  std::erase_if(links, [](const std::weak_ptr<Link>& link) { return link.expired(); });
}

}  // namespace

void UpstreamSwitch::switch_to(std::shared_ptr<Upstream> next) {
  drop_ended(links_);
  previous_.push_back({generation_, std::exchange(current_, std::move(next)), std::move(links_)});
  links_.clear();
  ++generation_;
}

std::size_t UpstreamSwitch::retire_previous(std::uint64_t generation) {
  std::size_t closed = 0;
  for (auto& previous : previous_) {
    if (previous.generation >= generation) continue;
    for (auto& weak : previous.links) {
      if (auto link = weak.lock(); link && link->state() != Link::State::closed) {
        link->close();
        ++closed;
      }
    }
  }
  std::erase_if(previous_, [generation](const Previous& p) { return p.generation < generation; });
  return closed;
}

SessionLinkResult UpstreamSwitch::open_session_link(int partition, const Routed& command) {
  auto result = current_->open_session_link(partition, command);
  if (result.link) remember(result.link);
  return result;
}

boost::asio::awaitable<CallResult> UpstreamSwitch::call_server(std::string command) {
  // The upstream asked stays alive for the whole call, switched away from or not.
  const auto asked = current_;
  co_return co_await asked->call_server(std::move(command));
}

std::shared_ptr<Link> UpstreamSwitch::open_own_link(int database, int protocol) {
  return remember(current_->open_own_link(database, protocol));
}

std::shared_ptr<Link> UpstreamSwitch::open_own_link_to(std::string_view server, int database,
                                                       int protocol) {
  return remember(current_->open_own_link_to(server, database, protocol));
}

std::shared_ptr<KeyedCaller> UpstreamSwitch::keyed_caller(const KeyedCallerOptions& options) {
  return std::make_shared<FollowingKeyedCaller>(*this, options);
}

std::shared_ptr<Link> UpstreamSwitch::remember(std::shared_ptr<Link> link) {
  if (!link) return link;
  // Bounded by the links alive: ended ones are dropped whenever the list doubles.
  if (links_.size() >= 64 && links_.size() == links_.capacity()) drop_ended(links_);
  links_.push_back(link);
  return link;
}

}  // namespace corral::upstream
