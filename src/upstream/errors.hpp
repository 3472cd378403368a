// The error texts Corral answers when the upstream cannot: one place, so clients and tests see one
// wording. Texts carry no leading '-' (ReplyTarget::on_failure's convention).
#pragma once

#include <string_view>

namespace corral::upstream {

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
