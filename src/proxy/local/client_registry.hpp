// Every client of the process, for CLIENT LIST / INFO / KILL, and the CLIENT PAUSE state. Io
// threads touch their own records with relaxed atomic stores (no lock on the command path); the
// lock guards membership and names, which change rarely.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/commands/command_table.hpp"
#include "session/client_buffers.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

// One client as CLIENT LIST shows it. Written by the client's io thread, read by any thread.
struct ClientRecord {
  std::uint64_t id = 0;
  std::string addr;
  std::string laddr;
  std::function<void()> close;  // disconnects the client; callable from any thread
  std::function<void(std::chrono::milliseconds)> close_if_idle;           // see session::Peer
  std::function<void(std::function<void(upstream::ReplyTarget&)>)> post;  // see session::Peer
  std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();
  std::atomic<std::int64_t> last_active_ms{0};  // steady clock, milliseconds
  std::atomic<int> database{0};
  std::atomic<int> protocol{2};                           // HELLO 2|3
  std::atomic<const CommandSpec*> last_command{nullptr};  // a table row: static storage
  std::atomic<bool> pubsub{false};                        // subscribed or MONITOR
  std::atomic<bool> monitoring{false};                    // MONITOR (flags=O)
  std::atomic<bool> replica{false};      // relays a replication stream: SYNC/PSYNC (flags=S)
  std::atomic<bool> tracking{false};     // CLIENT TRACKING on (flags=t)
  std::atomic<bool> no_evict{false};     // CLIENT NO-EVICT on (flags=e)
  std::atomic<int> blocked_commands{0};  // blocking commands Redis holds (flags=b)
  std::atomic<int> queued_in_multi{-1};  // commands queued in the open transaction; -1: none open
  std::atomic<int> channels{0};          // subscriptions: sub=, psub=, ssub=
  std::atomic<int> patterns{0};
  std::atomic<int> shard_channels{0};
  std::atomic<bool> held_by_pause{false};                 // a command waits for CLIENT PAUSE to end
  std::shared_ptr<const session::ClientBuffers> buffers;  // null for sessions without one
  std::function<void()> show_buffers;  // see session::Peer: the client's own thread only
};

// The Redis side of a client's dedicated upstream connection, for CLIENT UNBLOCK: Redis's id for
// that connection and, on a cluster, the node ("host:port") it is open to.
struct UpstreamClient {
  std::int64_t redis_id = 0;
  std::string node;
  // A CLIENT ID is on its way for a connection just opened (or moved to another node): Redis may
  // already show the client blocked there before Corral has read its id.
  bool pending = false;
};

// What CLIENT KILL / CLIENT LIST select. Empty fields match every client.
struct ClientFilter {
  std::vector<std::uint64_t> ids;
  std::string addr;
  std::string laddr;
  std::string user;           // "default": Corral's own; else an upstream ACL user
  std::string type;           // normal | pubsub | master | replica (lower case)
  std::uint64_t skip_id = 0;  // SKIPME yes: the caller
  long long max_age_seconds = 0;
};

class ClientRegistry {
 public:
  std::shared_ptr<ClientRecord> add(
      std::uint64_t id, std::string addr, std::string laddr, std::function<void()> close,
      std::function<void(std::chrono::milliseconds)> close_if_idle,
      std::function<void(std::function<void(upstream::ReplyTarget&)>)> post = {},
      std::shared_ptr<const session::ClientBuffers> buffers = {},
      std::function<void()> show_buffers = {});
  void remove(std::uint64_t id);
  // The record of client `id`, or null once it has left (or never was).
  std::shared_ptr<ClientRecord> find(std::uint64_t id) const;
  void set_name(std::uint64_t id, std::string_view name);
  // The upstream ACL user the client authenticated as ("" or "default": Corral's own user).
  void set_user(std::uint64_t id, std::string_view user);

  // CLIENT LIST lines ("id=... resp=2\n") of the matching clients, in id order.
  std::string list(const ClientFilter& filter) const;
  // The CLIENT INFO line of one client ("" when unknown).
  std::string info(std::uint64_t id) const;
  // Asks every matching client to close; returns how many.
  std::size_t kill(const ClientFilter& filter) const;
  // client.idle_timeout, as Redis's `timeout`: asks each client that sent no command for `idle`
  // to close unless it is subscribed or awaits a reply (its session decides); returns how many
  // were asked.
  std::size_t close_idle(std::chrono::milliseconds idle) const;

  // CLIENT PAUSE: until `until` (steady clock), writes only or everything.
  void pause(std::chrono::steady_clock::time_point until, bool all);
  void unpause();
  // True when a command with these flags must wait now. One relaxed load when not paused.
  bool holds(std::uint32_t flags) const;
  // True while a pause is in force (of either kind).
  bool paused() const;
  // Clients whose command waits for the pause to end: Redis counts them in blocked_clients.
  std::size_t held_by_pause() const;
  // Whether client `id`'s command waits, given whether the pause holds it now (`held_now`).
  // Clients once held go on in the order they were first held, as Redis unblocks its paused
  // clients: one whose pause ended still waits while a client held before it waits. Call it
  // only when held_now or while it last answered true (the caller keeps that): it locks.
  bool waits_for_pause(std::uint64_t id, bool held_now);

  // CLIENT UNBLOCK: what Redis calls client `id`'s dedicated connection; set once Redis named it,
  // cleared when the connection is released. Nothing when unknown or none.
  void set_upstream_client(std::uint64_t id, UpstreamClient upstream);
  void clear_upstream_client(std::uint64_t id);
  std::optional<UpstreamClient> upstream_client(std::uint64_t id) const;

  static std::int64_t now_ms();

 private:
  struct Entry {
    std::shared_ptr<ClientRecord> record;
    std::string name;
    std::string user;               // empty: "default"
    UpstreamClient upstream;        // redis_id 0: no dedicated connection Redis has named
    std::uint64_t hold_ticket = 0;  // its place in held_order_ (0: not held)
  };
  bool matches(const Entry& entry, const ClientFilter& filter) const;
  void append_line(std::string& out, const Entry& entry) const;

  mutable std::mutex mutex_;
  std::map<std::uint64_t, Entry> clients_;
  std::map<std::uint64_t, std::uint64_t> held_order_;  // hold ticket -> client id, oldest first
  std::uint64_t last_hold_ticket_ = 0;
  std::atomic<std::int64_t> paused_until_ms_{0};
  std::atomic<bool> pause_all_{false};
};

// The process's registry. A process has one set of clients, whichever io thread serves them.
ClientRegistry& client_registry();

}  // namespace corral::proxy
