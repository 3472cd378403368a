// The seam between the I/O layer and whatever answers requests: a session frames requests, keeps
// their replies in order and writes them; a Handler decides what each request means. Only the
// wiring next to main.cpp names a concrete Handler; tests and the I/O benchmark use a trivial one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "resp/request.hpp"
#include "session/client_buffers.hpp"
#include "upstream/reply_target.hpp"

namespace corral::session {

enum class Action {
  done,               // answered or forwarded: the reply fills the request's slot
  close_after_reply,  // answered: close the connection once the reply is written
  drain_then_retry,   // the client's earlier replies must arrive first; then call handle() again
  wait_then_retry,    // held (CLIENT PAUSE): call handle() again a little later, in order
  // The request (SYNC, PSYNC) took no reply slot and may make the connection a raw byte relay:
  // the client's later bytes wait unread until relay_verdict() is no longer due. Accepted, every
  // byte the client sends from then on goes to relay_input(), unparsed, and every byte that
  // reaches the session with tag 0 goes to the client as it is, until either side closes.
  // Refused, the bytes with tag 0 that told it are the request's reply, and the waiting bytes
  // are requests again. Only when no earlier reply is still due (the handler asks for a drain).
  relay,
};

// After Action::relay: whether the server took the client for a replica. Asked at once and at
// each arrival of bytes with tag 0 (those before the verdict, keep-alives, go to the client too).
// refused_unanswered: refused while the client's CLIENT REPLY mode withholds the refusal, as Redis
// withholds its error then; the stream itself, had it come, would have been written anyway.
enum class RelayVerdict : std::uint8_t { due, accepted, refused, refused_unanswered };

// Who a client is, as its session knows it at open_session.
struct Peer {
  std::string addr;   // the client's address, "ip:port"
  std::string laddr;  // the address it connected to, "ip:port"
  // Asks the session to disconnect the client. Callable from any thread (it posts to the
  // session's own), and harmless once the session has ended.
  std::function<void()> close;
  // Disconnects the client if nothing came from it or was written to it for `idle`, and no reply
  // is pending (client.idle_timeout; a blocked BLPOP is not idle). Callable from any thread.
  std::function<void(std::chrono::milliseconds idle)> close_if_idle;
  // Runs `deliver` on the session's io thread with the session as the target of bytes that answer
  // no request (tag 0: a push, a pub/sub message, a MONITOR line; past client.max_output_buffer
  // such bytes disconnect the client), unless the client has left by then. Callable from any
  // thread: how MONITOR lines and another client's tracking invalidations reach this one.
  std::function<void(std::function<void(upstream::ReplyTarget& out)> deliver)> post;
  // The session's buffers, for CLIENT LIST / INFO (readable from any thread), and how to bring
  // them up to date: only from the session's own thread, within a call of its handler.
  std::shared_ptr<const ClientBuffers> buffers;
  std::function<void()> show_buffers;
};

// What the handler learned of a request before handling it. The session keeps the metric id (for
// per-command latency) and hands the rest back unread; `command`/`detail` mean what the handler
// wants them to (the proxy keeps its command table rows there, so a request is looked up once).
struct Classified {
  std::uint32_t metric_id = 0;
  const void* command = nullptr;
  const void* detail = nullptr;
};

// One client's conversation with the handler; the session owns it and calls it on its io thread.
// Contract: for every handle() that returns done or close_after_reply, exactly one reply for `tag`
// reaches `target` (on_reply or on_failure), now or later, in any order across tags.
class ClientHandler {
 public:
  virtual ~ClientHandler() = default;

  virtual std::uint64_t client_id() const = 0;
  // For the slowlog: the client's address ("ip:port") and CLIENT SETNAME name, as Redis shows them.
  virtual std::string client_addr() const { return {}; }
  virtual std::string client_name() const { return {}; }
  virtual Classified classify(const resp::Request& request) = 0;
  // `awaiting` counts the client's earlier requests whose replies have not been written yet.
  virtual Action handle(const resp::Request& request, const Classified& classified,
                        std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                        std::size_t awaiting) = 0;

  // Tunnel mode (RESP2 subscribed): requests get no reply slots and every reply arrives
  // unsolicited (tag 0). A `reply` handle_tunnel fills is the handler's own answer, written at
  // once; with close_after_reply it is the last thing the client gets. drain_then_retry: nothing
  // was done, ask again once settling() is false (the request may not be tunneled by then).
  virtual bool tunneling() const = 0;
  virtual Action handle_tunnel(const resp::Request& request, std::string& reply) = 0;
  // While true, the client's next request waits (a reply the handler itself asked for in tunnel
  // mode is due): the session asks again after each takes_unsolicited() that returned true.
  virtual bool settling() const { return false; }
  // True when a reply that matched no request answers the handler's own request: the client
  // does not see it.
  virtual bool takes_unsolicited(std::string_view /*reply*/) { return false; }
  // A reply that matched no request was forwarded to the client (a push, a message).
  virtual void on_unsolicited(std::string_view reply) = 0;
  // After Action::relay (see RelayVerdict); a handler that relays without asking anyone relays
  // at once.
  virtual RelayVerdict relay_verdict() { return RelayVerdict::accepted; }
  // Relay mode (Action::relay): the client's bytes, as they come. False when they cannot be
  // passed on (the upstream connection is gone): the session then closes.
  virtual bool relay_input(std::string_view /*bytes*/) { return false; }
  // Relay mode: the client is past client.max_output_buffer (held) or back under it; the
  // upstream's bytes should wait meanwhile.
  virtual void hold_relay(bool /*held*/) {}
  // Relay mode: true when more than `limit` of the client's bytes wait unwritten upstream; the
  // session then reads no more until `resume` runs (see upstream::Link::hold_relay_input).
  virtual bool hold_relay_input(std::size_t /*limit*/, std::function<void()> /*resume*/) {
    return false;
  }
  // False while the client still has to AUTH: its requests then get Redis 6.2's small limits.
  virtual bool authenticated() const { return true; }

  // The client is gone: release whatever the handler holds for it.
  virtual void end_session() = 0;
  // No request will follow (the process drains, or the client closed its side). End what would
  // never answer by itself (a blocked command, subscriptions), keep what will (a transaction's
  // EXEC in flight).
  virtual void drain() {}
  // True while a command of the client's is blocked upstream (BLPOP & co.). A client that closes
  // its side then is closed at once, as Redis frees it: the commands that end with the block
  // answer nobody.
  virtual bool blocked() const { return false; }
};

// One per io thread: opens a ClientHandler for each accepted client of that thread.
class Handler {
 public:
  virtual ~Handler() = default;
  virtual std::unique_ptr<ClientHandler> open_session() = 0;
  // With the client's addresses and a way to close it (CLIENT LIST / KILL); handlers that need
  // neither keep the default.
  virtual std::unique_ptr<ClientHandler> open_session(const Peer& /*peer*/) {
    return open_session();
  }
  // The metric id that counts requests the session refused itself (protocol errors).
  virtual std::uint32_t protocol_error_metric() const = 0;
};

}  // namespace corral::session
