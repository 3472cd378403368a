// The tracking session: CLIENT SETNAME, CLIENT ID, CLIENT TRACKING ... BCAST PREFIX ...,
// SUBSCRIBE __redis__:invalidate, then invalidation messages; tracked prefixes are flushed
// whenever tracking is (re)established after a gap, since writes made while nobody tracked went
// unseen. A policy reload opens the new session before closing the old one: no gap, no flush.
#include "stampede/tracking/invalidation_listener.hpp"

#include <algorithm>
#include <functional>
#include <optional>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "resp/reply.hpp"
#include "stampede/hot/hot_cache.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "upstream/async_event.hpp"
#include "upstream/call.hpp"
#include "upstream/connection.hpp"
#include "upstream/link.hpp"
#include "upstream/server_pause.hpp"

namespace corral::stampede {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

namespace {
constexpr std::string_view kChannel = "__redis__:invalidate";
constexpr std::string_view kConnectionName = "corral-tracking";

bool tracks_tags(const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [](const std::string& p) { return kTagKeyPrefix.starts_with(p); });
}

// One connection per session, never reconnecting by itself: run() owns the backoff, and a new
// session must flush what the gap may have hidden. Database 0: tracking is not per database.
upstream::ConnectionOptions session_options(const config::UpstreamSettings& upstream) {
  return upstream::connection_options(upstream, 0, false);
}

// Redis refuses the whole CLIENT TRACKING command when two BCAST prefixes overlap, which would
// leave every policy untracked. Nested policies ("user:" and "user:session:") are allowed, and
// the outer prefix already brings the inner one's invalidations: keep the outermost only. (Keys
// of an untracked policy under a tracked prefix are then invalidated too: extra, never missed.)
std::vector<std::string> outermost(std::vector<std::string> prefixes) {
  // Sorted, a prefix comes right before the strings it is a prefix of.
  std::sort(prefixes.begin(), prefixes.end());
  std::vector<std::string> kept;
  for (auto& prefix : prefixes) {
    if (kept.empty() || !prefix.starts_with(kept.back())) kept.push_back(std::move(prefix));
  }
  return kept;
}
}  // namespace

std::vector<std::string> tracked_prefixes(const PolicySet& policies) {
  std::vector<std::string> prefixes;
  bool tagged = false;
  for (const auto& policy : policies.settings) {
    // Fleet mode keeps http values in Redis too: a refresh by another process lands there.
    if (policy.origin == config::OriginKind::redis || policy.shared) {
      prefixes.push_back(policy.prefix);
    }
    tagged = tagged || policy.origin == config::OriginKind::http;
  }
  prefixes = outermost(std::move(prefixes));
  if (!tagged) return prefixes;
  // Tag purges of any process of the fleet (CORRAL.INVALIDATE TAG INCRs the tag's key). Redis
  // refuses overlapping BCAST prefixes: a policy prefix covering the tag keys ("corral:") already
  // brings their invalidations, and one under it ("corral:tag:x") is covered by the tag prefix.
  const auto covers_tags = [](const std::string& p) { return kTagKeyPrefix.starts_with(p); };
  if (std::any_of(prefixes.begin(), prefixes.end(), covers_tags)) return prefixes;
  std::erase_if(prefixes, [](const std::string& p) { return p.starts_with(kTagKeyPrefix); });
  prefixes.emplace_back(kTagKeyPrefix);
  return prefixes;
}

// The subscribed connection's pushes (replies no command asked for), applied as they are read:
// a hop through the event loop would let a client's read cache a value whose invalidation had
// already arrived. Also tells when the connection has ended, or when run() should look again.
class InvalidationListener::Inbox final : public upstream::ReplyTarget {
 public:
  Inbox(const asio::any_io_executor& executor, std::function<void(std::string_view)> apply)
      : wake_(executor), apply_(std::move(apply)) {}

  void on_reply(std::uint64_t, std::string_view message) override {
    ++heard_;
    apply_(message);
  }
  void on_failure(std::uint64_t, std::string_view) override {
    ended_ = true;
    wake_.notify();
  }

  bool ended() const { return ended_; }
  // Replies read so far (messages and PING answers): what the liveness watch compares.
  std::uint64_t heard() const { return heard_; }
  void wake() { wake_.notify(); }
  awaitable<void> woken() { co_await wake_.wait(); }

 private:
  upstream::AsyncEvent wake_;
  bool ended_ = false;
  std::uint64_t heard_ = 0;
  std::function<void(std::string_view)> apply_;
};

bool InvalidationListener::Session::live() const { return inbox && !inbox->ended(); }

void InvalidationListener::Session::close() const {
  if (connection) connection->close();
}

InvalidationListener::InvalidationListener(const asio::any_io_executor& executor,
                                           const config::UpstreamSettings& upstream,
                                           CacheRuntime& runtime,
                                           std::function<void(std::string_view)> invalidated,
                                           std::optional<NodeRole> role, HotLinkNaming naming)
    : executor_(executor),
      upstream_(upstream),
      runtime_(runtime),
      invalidated_(std::move(invalidated)),
      role_(std::move(role)),
      hot_link_name_(naming.name(role_ ? role_->server : std::string())),
      backoff_timer_(executor),
      liveness_timer_(executor) {}

InvalidationListener::~InvalidationListener() = default;

void InvalidationListener::start() {
  runtime_.fleet_wakeups().source_added();
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->run(); }, asio::detached);
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->watch_liveness(); }, asio::detached);
}

void InvalidationListener::stop() {
  stopping_ = true;
  // Here, not when the session ends later: the other listeners' liveness must not count for us.
  if (tracking_.exchange(false)) runtime_.fleet_wakeups().source_live(false);
  runtime_.fleet_wakeups().source_removed();
  backoff_timer_.cancel();
  liveness_timer_.cancel();
  // A listener retired with its node (failover, reshard) leaves no gap behind: the moved slots'
  // entries were dropped with the move.
  close_gap();
  if (auto* hot_cache = hot()) hot_cache->link_down(hot_server());
  if (current_) {
    current_->close();
    if (current_->inbox) current_->inbox->wake();
  }
}

void InvalidationListener::restart() {
  // The running session stays until its successor tracks the new prefix set (run()).
  restart_requested_ = true;
  backoff_timer_.cancel();
  if (current_ && current_->inbox) current_->inbox->wake();
}

void InvalidationListener::serve_from(const config::Endpoint& server) {
  if (!upstream_.servers.empty() && upstream_.servers.front().host == server.host &&
      upstream_.servers.front().port == server.port) {
    return;
  }
  upstream_.servers = {server};
  end_current_session();
}

void InvalidationListener::end_current_session() {
  backoff_timer_.cancel();
  if (current_) {
    current_->close();
    if (current_->inbox) current_->inbox->wake();
  }
}

awaitable<void> InvalidationListener::run() {
  auto backoff = upstream_.reconnect_backoff_min;
  while (!stopping_) {
    restart_requested_ = false;
    const auto prefixes =
        std::make_shared<const std::vector<std::string>>(tracked_prefixes(*runtime_.policies()));
    wanted_.store(!prefixes->empty() || hot() != nullptr, std::memory_order_relaxed);
    if (prefixes->empty() && hot() == nullptr) {
      end_current();
      close_gap();  // no policy left to serve from cache: nothing to keep coherent
      // Nothing to track: wait for a reload to restart us.
      backoff_timer_.expires_at(asio::steady_timer::time_point::max());
    } else if (auto next = co_await open(prefixes)) {
      // Make before break: when the previous session was still tracking until this one was, no
      // write went unseen and nothing needs flushing (a policy reload keeps the cache warm).
      const bool seamless = current_ && current_->live();
      if (current_) current_->close();
      current_ = std::move(next);
      runtime_.invalidation_mark().note();
      if (!seamless) flush(*prefixes);
      // Hot keys read under the previous session's id report to a connection that is going.
      if (auto* hot_cache = hot()) hot_cache->link_up(hot_server(), current_->client_id);
      close_gap();
      // Fleet waiters may now rely on pushes (once every primary's listener is live); any that
      // waited meanwhile look again at once.
      if (!tracking_.exchange(true)) runtime_.fleet_wakeups().source_live(true);
      runtime_.fleet_wakeups().notify_all();
      spdlog::info("tracking {} prefixes on the upstream for invalidation{}", prefixes->size(),
                   seamless ? " (handed over from the previous session)" : "");
      backoff = upstream_.reconnect_backoff_min;
      while (!restart_requested_ && !stopping_ && current_->live())
        co_await current_->inbox->woken();
      if (!current_->live()) {
        end_current();
        reconnects_.fetch_add(1, std::memory_order_relaxed);
      }
      if (restart_requested_ || stopping_) continue;
      backoff_timer_.expires_after(backoff);
    } else {
      // The handshake failed; a still-live previous session keeps tracking meanwhile.
      if (current_ && !current_->live()) end_current();
      reconnects_.fetch_add(1, std::memory_order_relaxed);
      backoff_timer_.expires_after(backoff);
      backoff = std::min(backoff * 2, upstream_.reconnect_backoff_max);
    }
    if (stopping_ || restart_requested_) continue;
    error_code ignored;
    co_await backoff_timer_.async_wait(asio::redirect_error(use_awaitable, ignored));
  }
  end_current();
}

void InvalidationListener::end_current() {
  if (!current_) return;
  const Session ended = std::move(*current_);
  current_.reset();
  ended.close();
  // Unlike the policies' copies, hot entries are not kept for stale-if-error: they go now.
  if (auto* hot_cache = hot()) hot_cache->link_down(hot_server());
  // The tracked prefixes are flushed when tracking is re-established, not now: if Redis itself
  // went away, the cached copies are what stale-if-error serves meanwhile.
  if (tracking_.exchange(false)) {
    runtime_.fleet_wakeups().source_live(false);
    if (!stopping_) {
      open_gap(ended.prefixes);
      spdlog::warn(
          "tracking connection lost; cached prefixes are revalidated on each read until it is "
          "back, then flushed");
    }
  }
}

void InvalidationListener::open_gap(std::shared_ptr<const std::vector<std::string>> prefixes) {
  if (gap_id_ != 0 || !prefixes) return;
  auto in_scope = role_ && role_->scope ? role_->scope() : std::function<bool(std::string_view)>{};
  gap_id_ = runtime_.tracking_gaps().open([prefixes = std::move(prefixes),
                                           in_scope = std::move(in_scope)](std::string_view key) {
    const bool tracked = std::any_of(prefixes->begin(), prefixes->end(),
                                     [key](const std::string& p) { return key.starts_with(p); });
    return tracked && (!in_scope || in_scope(key));
  });
}

void InvalidationListener::close_gap() {
  if (gap_id_ == 0) return;
  runtime_.tracking_gaps().close(gap_id_);
  gap_id_ = 0;
}

awaitable<void> InvalidationListener::watch_liveness() {
  auto self = shared_from_this();
  const auto interval = std::max(upstream_.tracking_timeout / 2, config::Duration(5));
  std::shared_ptr<Inbox> watched;
  std::uint64_t heard = 0;
  int quiet_intervals = 0;
  while (!stopping_) {
    liveness_timer_.expires_after(interval);
    error_code ec;
    co_await liveness_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
    if (stopping_) break;
    if (!current_ || !current_->live()) {
      watched.reset();
      continue;
    }
    if (current_->inbox != watched || current_->inbox->heard() != heard) {
      watched = current_->inbox;
      heard = watched->heard();
      quiet_intervals = 0;
    } else if (upstream::server_pause().in_force()) {
      // A forwarded CLIENT PAUSE ALL holds the PING in Redis until its end, and a reconnect's
      // handshake with it: silence is the pause's, and no write it could hide runs meanwhile.
      quiet_intervals = 0;
    } else if (++quiet_intervals >= 2) {
      spdlog::warn("tracking connection to {}:{} answered nothing for {} ms; reopening it",
                   upstream_.servers.front().host, upstream_.servers.front().port,
                   upstream_.tracking_timeout.count());
      runtime_.tracking_gaps().count_silence();
      // run() sees the session end, opens the gap, and reconnects.
      current_->close();
      watched.reset();
      continue;
    }
    ping_current();
  }
}

void InvalidationListener::ping_current() {
  // The inbox takes the answer: in subscribed RESP2 a pong and an invalidation message are both
  // arrays, so whichever arrives first may take the PING's slot; both are read by apply().
  current_->connection->send(upstream::kPingCommand, current_->inbox, 0,
                             /*exempt_from_timeout=*/true);
}

awaitable<std::optional<InvalidationListener::Session>> InvalidationListener::open(
    std::shared_ptr<const std::vector<std::string>> prefixes) {
  Session session{
      std::make_shared<upstream::Connection>(executor_, session_options(upstream_), nullptr),
      nullptr,
      prefixes,
      {}};
  session.connection->start();
  auto& connection = *session.connection;
  // Named arrays, not braced temporaries: g++ 12 miscompiles those inside co_await operands.
  const std::string_view set_name[] = {"CLIENT", "SETNAME", kConnectionName};
  const std::string_view client_id[] = {"CLIENT", "ID"};
  const std::string_view subscribe[] = {"SUBSCRIBE", kChannel};
  const auto failed = [&session]() -> std::optional<Session> {
    session.close();
    return std::nullopt;
  };
  if (!(co_await upstream::call(connection, set_name)).ok()) co_return failed();
  const auto id = co_await upstream::call(connection, client_id);
  if (!id.ok() || id.reply.front() != ':') co_return failed();
  const std::string own_id = id.reply.substr(1, id.reply.size() - 3);

  session.client_id = own_id;
  // With no policy prefix, the session only receives the hot-key fills' redirected messages.
  if (!prefixes->empty()) {
    std::vector<std::string_view> tracking{"CLIENT", "TRACKING", "on", "REDIRECT", own_id, "BCAST"};
    for (const auto& prefix : *prefixes) {
      tracking.push_back("PREFIX");
      tracking.push_back(prefix);
    }
    const auto tracked = co_await upstream::call(connection, tracking);
    if (!tracked.ok() || tracked.redis_error()) {
      spdlog::error("CLIENT TRACKING refused: {}", tracked.ok() ? tracked.reply : tracked.error);
      co_return failed();
    }
  }
  // Set before SUBSCRIBE: a message may follow its confirmation in the same read.
  session.inbox = std::make_shared<Inbox>(
      executor_, [this, prefixes](std::string_view message) { apply(message, *prefixes); });
  connection.set_unsolicited_target(session.inbox);
  if (!(co_await upstream::call(connection, subscribe)).ok()) co_return failed();
  co_return session;
}

void InvalidationListener::apply(std::string_view message,
                                 const std::vector<std::string>& prefixes) {
  const auto decoded = resp::decode_reply(message);
  if (!decoded || decoded->type != resp::Reply::Type::array || decoded->elements.size() != 3 ||
      decoded->elements[0].text != "message") {
    return;  // subscription confirmations and the like
  }
  runtime_.invalidation_mark().note();
  const auto& keys = decoded->elements[2];
  if (keys.type == resp::Reply::Type::null) {
    flush(prefixes);  // FLUSHALL / FLUSHDB upstream
    runtime_.fleet_wakeups().notify_all();
    return;
  }
  for (const auto& key : keys.elements) {
    // A tag key is a purge; it may also be cached under a policy whose prefix covers it.
    if (const auto tag = tag_of_key(key.text)) runtime_.tags().purge(*tag);
    if (role_ && role_->this_thread_only) {
      runtime_.invalidate_key_filled_here(key.text, InvalidationSource::tracking, role_->counts);
    } else {
      runtime_.invalidate_key(key.text, InvalidationSource::tracking);
    }
    runtime_.fleet_wakeups().notify(key.text);
    if (invalidated_) invalidated_(key.text);
  }
}

HotCache* InvalidationListener::hot() const {
  return !role_ || role_->hot_link ? runtime_.hot() : nullptr;
}

const std::string& InvalidationListener::hot_server() const { return hot_link_name_; }

void InvalidationListener::flush(const std::vector<std::string>& prefixes) {
  if (auto* hot_cache = hot()) hot_cache->flush();
  // Purges announced while nobody tracked went unseen: every tagged entry goes.
  if (tracks_tags(prefixes)) runtime_.tags().purge_all();
  if (role_ && role_->scope) {
    runtime_.invalidate_in_scope(prefixes, role_->scope(), InvalidationSource::tracking);
    return;
  }
  for (const auto& prefix : prefixes) {
    if (prefix == kTagKeyPrefix) continue;  // holds no cached key, only purge counts
    runtime_.invalidate_prefix(prefix, InvalidationSource::tracking);
  }
}

}  // namespace corral::stampede
