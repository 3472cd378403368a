// A RESP2 subscribed client's tunnel: its requests have no reply slots, every reply reaches it
// unsolicited, and a barrier (proxy/links/tunnel_barrier.hpp) settles whether Redis still holds it
// subscribed before anything but a subscription command or PING is sent.
#include "proxy/dispatcher.hpp"
#include "proxy/errors.hpp"
#include "proxy/links/subscriptions.hpp"
#include "proxy/links/tunnel_barrier.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"

namespace corral::proxy {
namespace {

Action connection_lost(std::string& reply) {
  resp::append_error(reply, upstream::kErrConnectionLost);
  return Action::close_after_reply;
}

}  // namespace

Action Dispatcher::handle_tunnel(ClientState& client, const Request& request, std::string& reply) {
  const Action action = tunnel_request(client, request, reply);
  // CLIENT REPLY OFF, sent before SUBSCRIBE (a RESP2 subscriber may not send CLIENT), withholds
  // Corral's own answers too, as Redis withholds every reply but the pushed confirmations; RESET,
  // which leaves OFF before it answers, is answered after the tunnel (drain_then_retry).
  if (client.reply_mode == ReplyMode::off && action != Action::drain_then_retry) reply.clear();
  return action;
}

Action Dispatcher::tunnel_request(ClientState& client, const Request& request, std::string& reply) {
  const Resolved resolved = resolve(request);
  if (resolved.spec != nullptr && resolved.row().change == StateChange::quit) {
    resp::append_simple(reply, "OK");
    return Action::close_after_reply;
  }
  if (!client.dedicated) return connection_lost(reply);
  if (resolved.spec != nullptr && resolved.row().change == StateChange::reset) {
    // Corral runs RESET (local_commands.cpp) once Redis has answered what came before it.
    client.mode.ended_subscriptions();
    return send_tunnel_barrier(client) ? Action::drain_then_retry : connection_lost(reply);
  }
  if (resolved.spec == nullptr || !allowed_while_subscribed(resolved.row().name)) {
    // Never sent as it is: if an earlier request ended the subscriptions, Redis would run it on
    // a connection Corral still takes for subscribed. The barrier settles that first.
    if (!client.tunnel_checked) {
      return send_tunnel_barrier(client) ? Action::drain_then_retry : connection_lost(reply);
    }
    if (resolved.spec == nullptr) {
      append_unknown_command(reply, request.argv);
    } else if (!arity_ok(*resolved.spec, request.argv.size()) ||
               (resolved.sub && !arity_ok(*resolved.sub, request.argv.size()))) {
      append_wrong_arity(reply, resolved.row().name);
    } else {
      append_subscribed_context_error(reply, resolved.row().name);
    }
    return Action::done;
  }
  // Its only effect is its reply, which would reach the client unsolicited: not sent at all.
  if (client.reply_mode == ReplyMode::off && resolved.row().name == "ping") return Action::done;
  if (!client.dedicated->send_untracked(wire_bytes(request))) return connection_lost(reply);
  client.tunnel_checked = false;
  if (is_unsubscribe(resolved.row()) && !send_tunnel_barrier(client)) {
    return connection_lost(reply);
  }
  return Action::done;
}

bool Dispatcher::send_tunnel_barrier(ClientState& client) {
  if (!client.dedicated || !client.dedicated->send_untracked(barrier_request())) return false;
  ++client.tunnel_barriers_due;
  return true;
}

bool Dispatcher::settling(const ClientState& client) const {
  return client.tunnel_barriers_due > 0 && client.dedicated != nullptr;
}

bool Dispatcher::takes_unsolicited(ClientState& client, std::string_view reply) {
  if (client.tunnel_barriers_due == 0) return false;
  const BarrierReply answer = read_barrier_reply(reply);
  if (answer == BarrierReply::not_barrier) return false;
  client.tunnel_checked = --client.tunnel_barriers_due == 0;
  // An ACL user that may not PING learns nothing from the barrier: the last confirmation decides
  // (a SUBSCRIBE refused at once leaves none, and the tunnel then answers for Redis).
  const bool subscribed = answer == BarrierReply::subscribed ||
                          (answer == BarrierReply::refused && !client.last_confirmation_ended);
  if (!subscribed) client.mode.ended_subscriptions();
  return true;
}

void Dispatcher::on_unsolicited(ClientState& client, std::string_view reply) {
  // Each confirmation carries the count of subscriptions Redis holds after it: at 0 the
  // connection holds nothing for the client (it may be released, HELLO may switch protocols).
  // An (un)subscribe still due keeps its reply slot open, so nothing is released before it runs.
  client.subscriptions.follow(reply);
  if (is_subscription_push(reply)) {
    ends_subscriptions(reply) ? client.mode.ended_pushes() : client.mode.keep_for_pushes();
  }
  // The push has been written already: the RESP3 (un)subscribe it confirms gets its empty reply
  // now, and the replies queued behind it follow. An error instead of a push (an ACL refusal)
  // answers it too, or its slot would wait forever.
  if (!client.pushed_requests.empty() && (is_subscription_push(reply) || reply.starts_with('-'))) {
    auto [tag, target] = std::move(client.pushed_requests.front());
    client.pushed_requests.pop_front();
    target->on_reply(tag, {});
    return;
  }
  // RESP2: whether subscribed mode ended is the barrier's to say (takes_unsolicited).
  if (confirms_subscription(reply)) {
    client.last_confirmation_ended = false;
  } else if (ends_subscriptions(reply)) {
    client.last_confirmation_ended = true;
  }
}

}  // namespace corral::proxy
