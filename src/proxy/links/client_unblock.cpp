// CLIENT UNBLOCK: Corral's client id mapped to Redis's id of that client's dedicated connection.
#include "proxy/links/client_unblock.hpp"

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <string>

#include "proxy/ascii.hpp"
#include "proxy/local/client_registry.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
constexpr std::string_view kClientIdCommand = "*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n";

// Records the answer to the CLIENT ID sent first on a client's new dedicated connection. A
// failure records nothing: the connection is gone, so there is nothing to unblock either.
class UpstreamIdNote : public upstream::ReplyTarget {
 public:
  UpstreamIdNote(std::uint64_t client_id, std::string node)
      : client_id_(client_id), node_(std::move(node)) {}
  void on_reply(std::uint64_t, std::string_view reply) override {
    // Not an id (an error): no CLIENT UNBLOCK may wait for one any longer.
    client_registry().set_upstream_client(
        client_id_, {std::max<std::int64_t>(0, parse_client_id_reply(reply)), node_, false});
  }
  void on_failure(std::uint64_t, std::string_view) override {
    client_registry().set_upstream_client(client_id_, {0, node_, false});
  }

 private:
  std::uint64_t client_id_;
  std::string node_;
};

bool parse_integer(std::string_view text, long long& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::int64_t parse_client_id_reply(std::string_view reply) {
  if (reply.size() < 4 || reply.front() != ':' || !reply.ends_with("\r\n")) return 0;
  long long id = 0;
  if (!parse_integer(reply.substr(1, reply.size() - 3), id) || id <= 0) return 0;
  return id;
}

void learn_upstream_client_id(std::uint64_t client_id, upstream::Link& connection,
                              std::string node) {
  client_registry().set_upstream_client(client_id, {0, node, true});
  if (!connection.send(kClientIdCommand, std::make_shared<UpstreamIdNote>(client_id, node), 0)) {
    client_registry().set_upstream_client(client_id, {0, std::move(node), false});
  }
}

void learn_upstream_client_id(const ClientState& client) {
  client.dedicated->follow_connections(
      [id = client.id](upstream::Link& connection, std::string server) {
        learn_upstream_client_id(id, connection, std::move(server));
      });
}

Action client_unblock(LocalCall& call) {
  const auto argv = call.argv;
  // Redis's checks, in Redis's order: the form, the reason, then the id.
  if (argv.size() > 4) {
    resp::append_error(call.reply, "ERR unknown subcommand or wrong number of arguments for '" +
                                       std::string(argv[1]) + "'. Try CLIENT HELP.");
    return Action::done;
  }
  if (argv.size() == 4 && !iequals(argv[3], "timeout") && !iequals(argv[3], "error")) {
    resp::append_error(call.reply, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
    return Action::done;
  }
  long long id = 0;
  if (!parse_integer(argv[2], id)) {
    resp::append_error(call.reply, "ERR value is not an integer or out of range");
    return Action::done;
  }
  // The caller is not blocked while it sends this (a pipelined request waits behind its block).
  const auto known = id > 0 && static_cast<std::uint64_t>(id) != call.client.id
                         ? client_registry().upstream_client(static_cast<std::uint64_t>(id))
                         : std::nullopt;
  // Its id is being learnt (the connection was just opened or moved): asked again in a moment,
  // in order with the caller's other commands (see Action::wait_then_retry).
  if (known && known->pending) return Action::wait_then_retry;
  if (!known || call.target == nullptr || call.upstream == nullptr) {
    resp::append_integer(call.reply, 0);
    return Action::done;
  }
  const std::string redis_id = std::to_string(known->redis_id);
  std::string command;
  if (argv.size() == 4) {
    const std::string_view unblock[] = {"CLIENT", "UNBLOCK", redis_id, argv[3]};
    resp::append_command(command, unblock);
  } else {
    const std::string_view unblock[] = {"CLIENT", "UNBLOCK", redis_id};
    resp::append_command(command, unblock);
  }
  const auto sent =
      call.upstream->send_to_server(known->node, command, call.client.database, call.client.id,
                                    call.client.protocol, call.tag, *call.target);
  if (sent == upstream::ServerSend::no_such_server) {
    // The server left the map: its connections, blocked ones included, are gone.
    resp::append_integer(call.reply, 0);
    return Action::done;
  }
  call.deferred = true;
  if (sent == upstream::ServerSend::unavailable) {
    (*call.target)->on_failure(call.tag, upstream::kErrUnavailable);
  }
  return Action::done;
}

}  // namespace corral::proxy
