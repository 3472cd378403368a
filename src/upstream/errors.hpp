// The error texts Corral answers when the upstream cannot: one place, so clients and tests see one
// wording. Texts carry no leading '-' (ReplyTarget::on_failure's convention).
#pragma once

#include <cstdint>
#include <string_view>

namespace corral::upstream {

// What went wrong, as a value: decided once, where it happened (a connection, a redirect, the
// server's error reply), and compared by kind from then on. The text travels beside it.
enum class ErrorKind : std::uint8_t {
  upstream_unavailable,  // nothing was sent: no connection could take the command
  connection_lost,       // sent, then the connection died: it may or may not have run
  timeout,               // sent, no reply in time: the connection was reset
  closed,                // the connection was closed on purpose with the command pending
  state_lost,            // a session link died with state Redis has now forgotten
  cross_slot,            // keys on several servers of a partitioned upstream
  moved,                 // -MOVED: the slot lives elsewhere now
  ask,                   // -ASK: this once, elsewhere
  tryagain,              // -TRYAGAIN: a slot being migrated
  clusterdown,           // -CLUSTERDOWN
  failing_over,  // nothing sent: the server for these keys is failing; its replacement is due
  busy,          // -BUSY: a script or function is running
  notbusy,       // -NOTBUSY: SCRIPT/FUNCTION KILL found nothing to kill
  protocol,      // the upstream broke the protocol
  refused,       // the server refused the connection (AUTH, TLS)
  server,        // any other error reply of the server
};

inline constexpr std::string_view kErrPrimaryFailing =
    "CLUSTERDOWN The slot's primary is failing; waiting for a replica to take over";

// A multi-key command whose keys live on several servers (Redis Cluster's words).
inline constexpr std::string_view kErrCrossSlot =
    "CROSSSLOT Keys in request don't hash to the same slot";

// The kind of a server's error reply ("-MOVED 1 h:p\r\n", "-BUSY ..."): the one place a reply's
// error text is read to decide what happened.
ErrorKind classify_error_reply(std::string_view reply);

// Nothing was sent: no connection could take the command.
inline constexpr std::string_view kErrUnavailable = "ERR upstream unavailable";
// Sent, then the connection died before its reply: the command may or may not have run.
inline constexpr std::string_view kErrConnectionLost = "ERR upstream connection lost";
// Sent, and no reply within the command timeout: the connection was reset. The connection adds
// " after <n>ms; the connection was reset", so compare with starts_with.
inline constexpr std::string_view kErrTimedOut = "ERR upstream command timed out";
// The connection was closed on purpose (shutdown, reload) with the command pending.
inline constexpr std::string_view kErrClosed = "ERR upstream connection closed";
// A dedicated connection died while it held session state Redis has now forgotten.
inline constexpr std::string_view kErrStateLost =
    "ERR upstream connection lost; the transaction, WATCH or tracking state was discarded";

}  // namespace corral::upstream
