// Pub/sub bookkeeping: which replies confirm or end subscriptions, and the answers Redis gives a
// client that has none.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "proxy/commands/command_table.hpp"

namespace corral::proxy {

// True for an (un|punsub|sunsub)scribe confirmation (RESP2 reply or RESP3 push) whose
// remaining-subscriptions count is 0.
bool ends_subscriptions(std::string_view reply);

// True for a (p|s)subscribe confirmation: one arrives per channel or pattern subscribed to.
bool confirms_subscription(std::string_view reply);

// UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE.
bool is_unsubscribe(const CommandSpec& row);

// What Redis answers a client with no subscriptions: one confirmation per channel (a nil channel
// when none is named), each with 0 subscriptions left. `command` is the row's lower-case name.
void append_unsubscribed_replies(std::string& out, std::string_view command,
                                 std::span<const std::string_view> argv);

// True for a RESP3 push that confirms a (p|s)(un)subscribe (not a message or an invalidation).
bool is_subscription_push(std::string_view push);

// The subscriptions Redis holds for a client, as CLIENT LIST's sub, psub and ssub show them,
// followed from its confirmations: each carries the count left after it, of channels and
// patterns together (of shard channels for SSUBSCRIBE), so the kind it names takes the change.
struct SubscriptionCounts {
  int channels = 0;
  int patterns = 0;
  int shard_channels = 0;

  // One reply or push the client's connection received; messages and other replies change
  // nothing.
  void follow(std::string_view reply);
};

}  // namespace corral::proxy
