// HotReads: hot-key hits, coalesced fills on the tracked fill connection of the key's server, and
// the rule that keeps a fill from storing a value an invalidation has already overtaken.
#include "stampede/hot/hot_reads.hpp"

#include <charconv>
#include <chrono>
#include <vector>

#include "cache/cache_key.hpp"
#include "origin/origin.hpp"
#include "resp/encoder.hpp"
#include "stampede/hot/hot_cache.hpp"
#include "upstream/connection.hpp"
#include "upstream/errors.hpp"

namespace corral::stampede {

namespace {
constexpr std::string_view kGet = "GET";
// A key without an expiry in Redis stays cached until it is written, cools down or is evicted;
// this only bounds an entry whose every other exit was somehow missed.
constexpr auto kNoExpiryLifetime = std::chrono::hours(24);

// PTTL's answer: milliseconds left, -1 (no expiry) or -2 (no key); nullopt if not an integer.
std::optional<long long> parse_pttl(std::string_view reply) {
  if (reply.size() < 4 || reply.front() != ':') return std::nullopt;
  long long value = 0;
  const auto digits = reply.substr(1, reply.size() - 3);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// Answers a server gives a command for a key it does not hold now (a cluster slot moved, is
// moving, or has no primary): the routed path follows or waits them out, a reader never sees them.
bool turned_away(std::string_view reply) {
  if (!reply.starts_with('-')) return false;
  const auto kind = upstream::classify_error_reply(reply);
  return kind == upstream::ErrorKind::moved || kind == upstream::ErrorKind::ask ||
         kind == upstream::ErrorKind::tryagain || kind == upstream::ErrorKind::clusterdown;
}

bool slot_moved(std::string_view reply) {
  if (!reply.starts_with('-')) return false;
  const auto kind = upstream::classify_error_reply(reply);
  return kind == upstream::ErrorKind::moved || kind == upstream::ErrorKind::ask;
}
}  // namespace

// The answer to CLIENT TRACKING on REDIRECT <id>: fills sent after it store only once it is OK.
class HotReads::TrackingConfirm final : public upstream::ReplyTarget {
 public:
  enum class State : std::uint8_t { pending, tracking, refused };

  void on_reply(std::uint64_t, std::string_view reply) override {
    state_ = !reply.empty() && reply.front() == '+' ? State::tracking : State::refused;
  }
  void on_failure(std::uint64_t, std::string_view) override { state_ = State::refused; }
  State state() const { return state_; }

 private:
  State state_ = State::pending;
};

// One fill: the GET's reply answers every reader that joined it; the PTTL's reply (right behind
// it on the connection) decides whether and for how long it is stored. A GET the server turned
// away, or lost with its connection, is asked again on the routed path and not stored.
class HotReads::Fill final : public upstream::ReplyTarget,
                             public std::enable_shared_from_this<HotReads::Fill> {
 public:
  Fill(std::weak_ptr<HotReads> owner, HotCache& hot, std::string key, std::uint64_t ticket,
       std::uint64_t generation, std::shared_ptr<TrackingConfirm> tracking)
      : owner_(std::move(owner)),
        hot_(hot),
        key_(std::move(key)),
        ticket_(ticket),
        generation_(generation),
        tracking_(std::move(tracking)) {}

  void join(std::uint64_t tag, std::shared_ptr<upstream::ReplyTarget> target) {
    readers_.push_back({tag, std::move(target)});
  }
  std::uint64_t ticket() const { return ticket_; }

  void on_reply(std::uint64_t, std::string_view reply) override {
    if (turned_away(reply) && reroute(slot_moved(reply))) return;
    outcome_ = origin::classify_reply(reply);
    value_.assign(reply);
    ended();
    for (const auto& reader : readers_) reader.target->on_reply(reader.tag, value_);
    readers_.clear();
  }
  void on_failure(std::uint64_t, std::string_view error) override {
    if (reroute(false)) return;
    ended();
    for (const auto& reader : readers_) reader.target->on_failure(reader.tag, error);
    readers_.clear();
  }

  // The PTTL of the key, read right after the GET.
  void expiry(std::string_view reply, const cache::Clock& clock) {
    const auto pttl = parse_pttl(reply);
    const bool coherent =
        tracking_->state() == TrackingConfirm::State::tracking && hot_.generation() == generation_;
    const bool cacheable = outcome_ == origin::Outcome::value || outcome_ == origin::Outcome::nil;
    if (!pttl || *pttl == 0 || !coherent || !cacheable || rerouted_) {
      hot_.count_fill(false);
      return;
    }
    const cache::Duration lifetime =
        *pttl > 0 ? cache::Duration(std::chrono::milliseconds(*pttl)) : kNoExpiryLifetime;
    const auto entry = cache::Entry::make(std::move(value_), clock.now(), {lifetime, {}, {}}, {},
                                          outcome_ == origin::Outcome::nil);
    const auto result = hot_.store().store({key_, kGet}, entry, ticket_);
    hot_.count_fill(result == cache::StoreResult::stored);
  }

 private:
  struct Reader {
    std::uint64_t tag;
    std::shared_ptr<upstream::ReplyTarget> target;
  };

  void ended() {
    if (const auto owner = owner_.lock()) owner->fill_ended(key_, this);
  }
  // Once only, and not while HotReads is going away (a shutdown fails what it had sent). A slot
  // that moved (MOVED, ASK) loses its hot entries: the server that tracked them holds them no
  // more, or is handing them over.
  bool reroute(bool moved) {
    const auto owner = owner_.lock();
    if (rerouted_ || !owner) return false;
    rerouted_ = true;
    if (moved) owner->drop_partition_of(key_);
    owner->reroute(key_, shared_from_this());
    return true;
  }

  std::weak_ptr<HotReads> owner_;
  HotCache& hot_;
  std::string key_;
  std::uint64_t ticket_;
  std::uint64_t generation_;
  std::shared_ptr<TrackingConfirm> tracking_;
  std::vector<Reader> readers_;
  origin::Outcome outcome_ = origin::Outcome::failure;
  std::string value_;
  bool rerouted_ = false;
};

namespace {
constexpr std::string_view kFillConnectionName = "corral-hot-fill";

// The end of a fill connection that was up: Redis forgets the keys a closed connection read, so
// no reply filled through it (on this thread) can be trusted to hear of its next write.
class FillConnectionWatch final : public upstream::ReplyTarget {
 public:
  explicit FillConnectionWatch(HotCache& hot) : hot_(hot) {}
  void on_reply(std::uint64_t, std::string_view) override {}
  void on_failure(std::uint64_t, std::string_view) override { hot_.flush(); }

 private:
  HotCache& hot_;
};

class ExpiryTarget final : public upstream::ReplyTarget {
 public:
  using Done = std::function<void(std::string_view)>;
  explicit ExpiryTarget(Done done) : done_(std::move(done)) {}
  void on_reply(std::uint64_t, std::string_view reply) override { done_(reply); }
  void on_failure(std::uint64_t, std::string_view) override { done_({}); }

 private:
  Done done_;
};
}  // namespace

HotReads::HotReads(HotCache& hot, HotFillRoutes routes, const cache::Clock& clock)
    : hot_(hot), routes_(std::move(routes)), clock_(clock) {}

HotReads::~HotReads() { close_fill_links(); }

void HotReads::close_fill_links() {
  for (auto& [server, link] : fill_links_) {
    link.connection->set_unsolicited_target(nullptr);  // ended here, not a lost connection
    link.connection->close();
  }
  fill_links_.clear();
}

bool HotReads::serve(std::string_view key, std::uint64_t tag,
                     const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (const auto version = hot_.version(); version != keys_version_) {
    keys_ = hot_.keys();
    keys_version_ = version;
  }
  if (keys_->empty() || !keys_->contains(key) || write_pending(key)) return false;
  const auto now = clock_.now();
  if (hot_.store().lookup({key, kGet}, now, entry_) &&
      entry_.state(now) == cache::EntryState::fresh) {
    hot_.count_hit();
    target->on_reply(tag, entry_.value);
    return true;
  }
  const auto joined = fills_.find(key);
  // A fill sent before a write landed may carry the old value: later readers do not join it.
  if (joined != fills_.end() && hot_.store().ticket_valid(key, joined->second->ticket())) {
    joined->second->join(tag, target);
    return true;
  }
  const auto fill = start_fill(key);
  if (!fill) return false;
  fill->join(tag, target);
  return true;
}

HotReads::FillLink* HotReads::fill_link(const std::string& server) {
  // A reload replaced the upstream: the fill connections of the previous one go.
  const auto epoch = routes_.upstream_epoch ? routes_.upstream_epoch() : 0;
  if (epoch != fill_links_epoch_) {
    close_fill_links();
    fill_links_epoch_ = epoch;
  }
  const auto found = fill_links_.find(server);
  if (found != fill_links_.end() &&
      found->second.connection->state() != upstream::Link::State::closed) {
    return &found->second;
  }
  // Servers that left the topology keep no closed connection here.
  std::erase_if(fill_links_, [](const auto& entry) {
    return entry.second.connection->state() == upstream::Link::State::closed;
  });
  auto connection = routes_.connect(server);
  if (!connection) return nullptr;
  connection->set_unsolicited_target(std::make_shared<FillConnectionWatch>(hot_));
  const std::string_view set_name[] = {"CLIENT", "SETNAME", kFillConnectionName};
  command_.clear();
  resp::append_command(command_, set_name);
  connection->send(command_, std::make_shared<upstream::DiscardTarget>(), 0);
  auto& link = fill_links_[server];
  link = FillLink{std::move(connection), {}, nullptr};
  return &link;
}

std::shared_ptr<HotReads::Fill> HotReads::start_fill(std::string_view key) {
  const auto server = routes_.server_of(key);
  if (!server) return nullptr;
  // The server's tracking link, and the generation it is valid in.
  const auto epoch = routes_.upstream_epoch ? routes_.upstream_epoch() : 0;
  const auto link = hot_.link(hot_link_name(epoch, *server));
  if (!link) return nullptr;
  auto* own = fill_link(*server);
  if (!own) return nullptr;
  auto& connection = *own->connection;
  if (own->tracking && own->tracking->state() == TrackingConfirm::State::refused) {
    own->redirect.clear();
  }
  if (own->redirect != link->client_id) {
    const std::string_view redirect[] = {"CLIENT", "TRACKING", "on", "REDIRECT", link->client_id};
    command_.clear();
    resp::append_command(command_, redirect);
    auto confirm = std::make_shared<TrackingConfirm>();
    if (!connection.send(command_, confirm, 0)) return nullptr;
    own->tracking = std::move(confirm);
    own->redirect = link->client_id;
  }
  // Taken before the read leaves: an invalidation of the key from now on voids this fill.
  const auto ticket = hot_.store().fill_ticket(key);
  auto fill = std::make_shared<Fill>(weak_from_this(), hot_, std::string(key), ticket,
                                     link->generation, own->tracking);
  const std::string_view get[] = {kGet, key};
  command_.clear();
  resp::append_command(command_, get);
  if (!connection.send(command_, fill, 0)) return nullptr;
  const std::string_view pttl[] = {"PTTL", key};
  command_.clear();
  resp::append_command(command_, pttl);
  const auto expiry = std::make_shared<ExpiryTarget>(
      [fill, &clock = clock_](std::string_view reply) { fill->expiry(reply, clock); });
  // Refused (a full queue): the GET still answers its readers, and is simply not stored.
  if (!connection.send(command_, expiry, 0)) hot_.count_fill(false);
  fills_[std::string(key)] = fill;
  return fill;
}

void HotReads::reroute(std::string_view key, std::shared_ptr<upstream::ReplyTarget> fill) {
  routes_.reroute(key, std::move(fill));
}

void HotReads::drop_partition_of(std::string_view key) {
  const int partition = routes_.partition_of(key);
  hot_.drop_matching(
      [&](std::string_view cached) { return routes_.partition_of(cached) == partition; });
}

void HotReads::fill_ended(const std::string& key, const Fill* fill) {
  const auto found = fills_.find(key);
  if (found != fills_.end() && found->second.get() == fill) fills_.erase(found);
}

bool HotReads::write_pending(std::string_view key) const {
  return !pending_writes_.empty() && pending_writes_.contains(std::hash<std::string_view>{}(key));
}

void HotReads::write_sent(std::string_view key) {
  ++pending_writes_[std::hash<std::string_view>{}(key)];
}

void HotReads::write_done(std::string_view key) {
  const auto found = pending_writes_.find(std::hash<std::string_view>{}(key));
  if (found != pending_writes_.end() && --found->second == 0) pending_writes_.erase(found);
}

}  // namespace corral::stampede
