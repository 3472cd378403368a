// The upstream seam the proxy's dispatcher talks through: a Link is one upstream connection as a
// client request sees it, Links hands them out. Pool/Connection are the production pair; unit
// tests put a recorder here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "upstream/reply_target.hpp"

namespace corral::upstream {

// The probes' and the tracking links' liveness question, in RESP.
inline constexpr std::string_view kPingCommand = "*1\r\n$4\r\nPING\r\n";

// What a client's command on its own link is, for a link that follows its keys' server: how it
// answers when the keys moved to another server during the session.
enum class SessionCommand : std::uint8_t {
  blocking,  // outside MULTI: sent again to the keys' new server (the block starts over)
  exec,      // EXEC: -EXECABORT naming the move (Redis discarded the transaction)
  other,     // queued in MULTI, WATCH, commands while watching: an error naming the move
};

// Told of each server connection a link uses: the connection and its server ("host:port", ""
// for the one server of an unpartitioned upstream).
using ConnectionObserver = std::function<void(class Link& connection, std::string server)>;

// Contract: send() either queues the command, whose outcome then reaches target->on_*(tag)
// exactly once, or returns false without queueing it (the caller answers for it). Replies that
// match no tracked command go to the unsolicited target with tag 0.
class Link {
 public:
  enum class State { connecting, ready, backoff, closed };

  virtual ~Link() = default;

  virtual bool send(std::string_view command, std::shared_ptr<ReplyTarget> target,
                    std::uint64_t tag, bool exempt_from_timeout = false) = 0;
  virtual bool send_untracked(std::string_view command) = 0;
  virtual void set_unsolicited_target(std::shared_ptr<ReplyTarget> target) = 0;
  virtual State state() const = 0;
  virtual std::size_t in_flight() const = 0;
  // Whether the link ever got as far as a server that could run a command (connected, handshake
  // done). A session link that never did held no state there, whatever the client sent on it.
  virtual bool reached_server() const { return true; }
  // Fails every pending command and stops for good.
  virtual void close() = 0;

  // A client's command on its own link (see SessionCommand); a plain connection just sends it.
  virtual bool send_in_session(SessionCommand /*kind*/, std::string_view command,
                               std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                               bool exempt_from_timeout) {
    return send(command, std::move(target), tag, exempt_from_timeout);
  }
  // Calls `observer` for the connection in use now and, on a link that moves between servers,
  // for each one it moves to, before anything else is sent on it.
  virtual void follow_connections(ConnectionObserver observer) { observer(*this, {}); }
  // Where a link stands after start_raw_relay(): the server's verdict on the SYNC/PSYNC is due,
  // it accepted (relaying), or it refused and the link is an ordinary one again (off).
  enum class RelayState : std::uint8_t { off, awaiting_verdict, relaying };

  // SYNC / PSYNC, sent next with send_untracked(): every byte the server sends reaches the
  // unsolicited target (tag 0) as it arrives. Once the server accepted (relay_state() relaying
  // before its first byte is delivered), those bytes are unframed (an RDB payload is no RESP
  // reply), and send_untracked() carries the replica's bytes as they are; the end of the
  // connection reaches that target as an error. Bare "\n" keep-alives before the verdict are
  // delivered as they come. An error line instead is the last thing that target gets (relay_state()
  // off by then): the link frames replies again and has no unsolicited target. Only with nothing
  // in flight. False, changing nothing, on a link that cannot: one that moves between servers (a
  // cluster's), whose stream would come from several.
  virtual bool start_raw_relay() { return false; }
  virtual RelayState relay_state() const { return RelayState::off; }
  // Relay mode: while held, the server's bytes stay in the socket (the client is behind on what
  // it got), so that TCP slows the server down rather than Corral buffering without bound.
  virtual void hold_raw_relay(bool /*held*/) {}
  // Relay mode, the other way: true when more than `limit` bytes sent with send_untracked() wait
  // unwritten (the server takes the replica's bytes slower than it sends them); `resume` then runs
  // once they are all written or the connection breaks, and the client's bytes wait in its socket
  // meanwhile, so that TCP slows the replica down rather than Corral buffering without bound.
  virtual bool hold_relay_input(std::size_t /*limit*/, std::function<void()> /*resume*/) {
    return false;
  }
};

// One io thread's upstream as the dispatcher sees it. The shared path is one call (one virtual
// dispatch per command), not a lookup followed by a send.
class Links {
 public:
  virtual ~Links() = default;

  // Link::send on a shared connection of `database`. A client always passes the same `affinity`
  // (its id), so its commands travel one connection and Redis runs them in the order it sent them.
  // `protocol` (2 or 3) is the client's: a RESP3 client's replies come from a RESP3 connection.
  virtual bool send_shared(int database, std::size_t affinity, std::string_view command,
                           std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                           int protocol) = 0;
  // A new connection owned by one client; it does not reconnect.
  virtual std::shared_ptr<Link> dedicated_link(int database, int protocol) = 0;
  // A link from dedicated_link whose client left it idle and clean (ready, nothing in flight, no
  // state in Redis but `database` and `protocol`): kept as the next dedicated_link, or closed.
  virtual void recycle_dedicated(std::shared_ptr<Link> link, int /*database*/, int /*protocol*/) {
    link->close();
  }
  // Changes when the server may have changed behind the address (a reconnect).
  virtual std::uint64_t server_epoch() { return 0; }
};

}  // namespace corral::upstream
