// Sees writes that other Redis clients make straight to Redis, through server-assisted
// client-side caching: one connection per process runs CLIENT TRACKING in BCAST mode for the
// prefixes of redis-origin policies, redirected to itself and subscribed to __redis__:invalidate.
// The connection is an upstream::Connection; each step of the handshake is one awaited call.
#pragma once

#include <utility>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "stampede/hot/hot_link_name.hpp"

namespace corral::upstream {
class Connection;
}

namespace corral::stampede {

class CacheRuntime;
class HotCache;
struct PolicySet;

// The prefixes a tracking connection asks Redis to watch for `policies` (redis-origin and shared
// policies, and the tag keys when some policy is http): what a flush of the tracked keys covers.
std::vector<std::string> tracked_prefixes(const PolicySet& policies);

class InvalidationListener : public std::enable_shared_from_this<InvalidationListener> {
 public:
  // Which of the tracked keys the upstream holds; a flush (tracking re-established, FLUSHALL
  // upstream) drops only those. A cluster node's listener passes "the key's slot is one the node
  // owns now": the other nodes' keys were tracked meanwhile.
  using KeyScope = std::function<std::function<bool(std::string_view)>()>;

  // A cluster node's listener, one per io thread (see ClusterInvalidation).
  struct NodeRole {
    KeyScope scope;
    // Drops only what this io thread filled (cache::Store::invalidate_filled_here): the other
    // threads' listeners read the same message for theirs.
    bool this_thread_only = false;
    bool counts = true;  // the one listener of the node that counts invalidations
    // The node's hot-key link (one listener per node in the process): the node's hot-key fill
    // connections redirect their tracking here, registered in the HotCache under `server`.
    bool hot_link = false;
    std::string server;  // "host:port"
  };

  // `invalidated` is called (on `executor`) for each key a tracking message dropped.
  InvalidationListener(const boost::asio::any_io_executor& executor,
                       const config::UpstreamSettings& upstream, CacheRuntime& runtime,
                       std::function<void(std::string_view)> invalidated = {},
                       std::optional<NodeRole> role = {}, HotLinkNaming naming = {});
  ~InvalidationListener();

  void start();
  void stop();
  // The policies changed: track the new prefix set on a new session, then close the old one.
  void restart();

  // The upstream's one server is now `server` (a Sentinel's new primary): the session moves
  // there. The gap between the two sessions is treated like any lost tracking link: cached
  // prefixes are revalidated on each read meanwhile, then flushed once the new session tracks.
  void serve_from(const config::Endpoint& server);

  // True while tracking is established (a gauge for metrics and CORRAL.STATS).
  bool tracking() const { return tracking_.load(std::memory_order_relaxed); }
  std::uint64_t reconnects() const { return reconnects_.load(std::memory_order_relaxed); }
  // True while some policy has prefixes to track (tracking() should then be true as well).
  bool wanted() const { return wanted_.load(std::memory_order_relaxed); }

 private:
  class Inbox;
  struct Session {
    std::shared_ptr<upstream::Connection> connection;
    std::shared_ptr<Inbox> inbox;
    std::shared_ptr<const std::vector<std::string>> prefixes;
    std::string client_id;  // hot-key fill connections redirect their tracking here

    bool live() const;  // subscribed and not ended
    void close() const;
  };

  boost::asio::awaitable<void> run();
  // A tracking session on a fresh connection, handshake done (nullopt if it failed).
  boost::asio::awaitable<std::optional<Session>> open(
      std::shared_ptr<const std::vector<std::string>> prefixes);
  void end_current();
  // Closes the running session so that run() opens the next one on upstream_ as it is now.
  void end_current_session();
  // PINGs the current session every tracking_timeout / 2 and closes it when nothing came back
  // for tracking_timeout: a link that is open but silent hides writes just like a lost one.
  boost::asio::awaitable<void> watch_liveness();
  void ping_current();
  void open_gap(std::shared_ptr<const std::vector<std::string>> prefixes);
  void close_gap();
  void apply(std::string_view message, const std::vector<std::string>& prefixes);
  void flush(const std::vector<std::string>& prefixes);
  // The process's hot-key cache, when this listener is a link of it (a single Redis, or the
  // node's hot link on a cluster); else null.
  HotCache* hot() const;
  // The server the hot cache knows this listener's link by ("" for a single Redis).
  const std::string& hot_server() const;

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings upstream_;
  CacheRuntime& runtime_;
  std::function<void(std::string_view)> invalidated_;
  std::optional<Session> current_;  // the session tracking now (or just ended)
  std::optional<NodeRole> role_;
  std::string hot_link_name_;  // the hot-key link's name in the HotCache (see hot_link_name())
  boost::asio::steady_timer backoff_timer_;
  boost::asio::steady_timer liveness_timer_;
  std::uint64_t gap_id_ = 0;  // the tracking gap this listener opened (0: none)
  bool stopping_ = false;
  bool restart_requested_ = false;
  std::atomic<bool> tracking_{false};
  std::atomic<bool> wanted_{false};
  std::atomic<std::uint64_t> reconnects_{0};
};

}  // namespace corral::stampede
