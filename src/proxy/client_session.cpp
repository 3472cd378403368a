// ClientSession: the session seam's calls mapped onto the dispatcher, with the client's state.
#include "proxy/client_session.hpp"

namespace corral::proxy {

ClientSession::ClientSession(Dispatcher& dispatcher, std::uint64_t id) : dispatcher_(dispatcher) {
  const auto& client = dispatcher_.settings().client;
  state_.id = id;
  state_.authenticated = client.password.empty();
  state_.admin = client.admin_password.empty();
}

session::Classified ClientSession::classify(const Request& request) {
  const Resolved resolved = dispatcher_.resolve(request);
  return {static_cast<std::uint32_t>(resolved.metric_id), resolved.spec, resolved.sub};
}

Action ClientSession::handle(const Request& request, const session::Classified& classified,
                             std::uint64_t tag,
                             const std::shared_ptr<upstream::ReplyTarget>& target,
                             std::size_t awaiting) {
  const Resolved resolved{static_cast<const CommandSpec*>(classified.command),
                          static_cast<const CommandSpec*>(classified.detail), classified.metric_id};
  return dispatcher_.handle(state_, request, resolved, tag, target, awaiting);
}

Action ClientSession::handle_tunnel(const Request& request, std::string& reply) {
  return dispatcher_.handle_tunnel(state_, request, reply);
}

void ClientSession::on_unsolicited(std::string_view reply) {
  dispatcher_.on_unsolicited(state_, reply);
}

void ClientSession::end_session() { dispatcher_.end_session(state_); }

}  // namespace corral::proxy
