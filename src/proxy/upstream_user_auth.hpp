// AUTH user pass (and HELLO ... AUTH user pass) for the upstream's own ACL users: the upstream
// verifies the pair, and the client's commands then run as that user on connections of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/client_state.hpp"

namespace corral::upstream {
class Link;
class Upstream;
}  // namespace corral::upstream

namespace corral::proxy {

// Redis's answer to `AUTH password` when `default` has no password: Corral's too when it cannot
// ask the upstream (a Redis Cluster) and has no password of its own.
inline constexpr std::string_view kErrNoDefaultPassword =
    "ERR AUTH <password> called without any password configured for the default user. Are you "
    "sure your configuration is correct?";

// One client's question to the upstream, kept on the client while the answer is due.
struct UserCheck {
  std::string user;
  std::string password;
  bool named = true;  // false: `AUTH password`, which Redis checks against `default`
  bool done = false;
  bool failed = false;  // no answer (the upstream is unavailable): not a wrong password
  std::string reply;    // the upstream's RESP reply, or the failure's text
};

enum class UserAuthStep : std::uint8_t {
  pending,         // the upstream has not answered yet: ask again (Action::wait_then_retry)
  accepted,        // the client now runs as the user
  wrong_password,  // the upstream refused the pair: `error` holds its error
  refused,         // could not check or not allowed here: `error` says why
};

// One per io thread. Checks run on a connection of Corral's own kept for them: AUTH changes the
// user of the connection it runs on, so it never runs on one that serves commands.
class UpstreamUserAuth {
 public:
  // `upstream` is Corral's own (logged in as upstream.username); it must outlive this.
  explicit UpstreamUserAuth(upstream::Upstream& upstream) : upstream_(upstream) {}

  // Starts the check of (user, password) for `client`, or reads its outcome once it is in. On
  // acceptance the client is authenticated and its `user_upstream` set. `error` gets an error
  // message without the leading '-' (Redis's own WRONGPASS when the upstream refused). Not
  // `named`, the check is `AUTH password` (user is `default`), so that Redis answers that form.
  UserAuthStep authenticate(ClientState& client, std::string_view user, std::string_view password,
                            bool named, bool admin_password_set, std::string& error);

 private:
  bool send_check(const std::shared_ptr<UserCheck>& check);
  std::shared_ptr<upstream::Link> open_checker();

  upstream::Upstream& upstream_;
  std::shared_ptr<upstream::Link> checker_;
};

// The message of a RESP error reply ("-WRONGPASS ...\r\n" -> "WRONGPASS ..."), or empty when
// `reply` is not an error.
std::string_view error_message(std::string_view reply);

}  // namespace corral::proxy
