// Upstream ACL users: the AUTH check on Corral's checker connection, then the user's upstream.
#include "proxy/upstream_user_auth.hpp"

#include "resp/encoder.hpp"
#include "upstream/link.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
constexpr std::string_view kUsersUnsupported =
    "ERR AUTH with a user name is not supported through Corral on this upstream: every "
    "client runs as upstream.username there";
constexpr std::string_view kTooManyUsers =
    "ERR too many upstream users in use on this Corral (upstream.max_user_pools)";
}  // namespace

std::string_view error_message(std::string_view reply) {
  if (reply.size() < 3 || reply.front() != '-' || !reply.ends_with("\r\n")) return {};
  return reply.substr(1, reply.size() - 3);
}

// Any server can check a password: the one of an unpartitioned upstream, or on a cluster the node
// serving slot 0 (every node of a cluster is configured with the same users, or clients could
// not reach all their keys as one user).
std::shared_ptr<upstream::Link> UpstreamUserAuth::open_checker() {
  const auto server = upstream_.server_of_key("");
  return server ? upstream_.open_own_link_to(*server, 0, 2) : nullptr;
}

bool UpstreamUserAuth::send_check(const std::shared_ptr<UserCheck>& check) {
  if (!checker_ || checker_->state() == upstream::Link::State::closed) {
    checker_ = open_checker();
    if (!checker_) return false;
  }
  std::string command;
  if (check->named) {
    const std::string_view argv[] = {"AUTH", check->user, check->password};
    resp::append_command(command, argv);
  } else {
    const std::string_view argv[] = {"AUTH", check->password};
    resp::append_command(command, argv);
  }
  return checker_->send(
      command, upstream::CallbackTarget::make([check](std::string_view reply, bool failed) {
        check->done = true;
        check->failed = failed;
        check->reply = reply;
      }),
      0);
}

UserAuthStep UpstreamUserAuth::authenticate(ClientState& client, std::string_view user,
                                            std::string_view password, bool named,
                                            bool admin_password_set, std::string& error) {
  auto& check = client.user_check;
  // A retried request finds its own check; any other AUTH starts afresh.
  if (check && (check->user != user || check->password != password || check->named != named)) {
    check.reset();
  }
  if (!check) {
    check = std::make_shared<UserCheck>();
    check->user = user;
    check->password = password;
    check->named = named;
    if (!send_check(check)) {
      check.reset();
      error = upstream::kErrUnavailable;
      return UserAuthStep::refused;
    }
    return UserAuthStep::pending;
  }
  if (!check->done) return UserAuthStep::pending;
  const auto outcome = std::move(check);
  if (outcome->failed) {
    error = outcome->reply;
    return UserAuthStep::refused;
  }
  if (const auto message = error_message(outcome->reply); !message.empty()) {
    error = message;
    return UserAuthStep::wrong_password;
  }
  auto result = upstream_.as_user(user, password, client.database);
  if (!result.upstream) {
    error = result.refusal == upstream::UserUpstreamRefusal::too_many_users ? kTooManyUsers
                                                                            : kUsersUnsupported;
    return UserAuthStep::refused;
  }
  client.user_upstream = std::move(result.upstream);
  client.upstream_user = user;
  client.authenticated = true;
  client.admin = !admin_password_set;
  return UserAuthStep::accepted;
}

}  // namespace corral::proxy
