// Recognises the reply that ends a client's subscribed mode.
#pragma once

#include <string_view>

namespace corral::proxy {

// True for an (un|punsub|sunsub)scribe confirmation whose remaining-subscriptions count is 0.
bool ends_subscriptions(std::string_view reply);

// True for a (p|s)subscribe confirmation: one arrives per channel or pattern subscribed to.
bool confirms_subscription(std::string_view reply);

// True for a RESP3 push that confirms a (p|s)(un)subscribe (not a message or an invalidation).
bool is_subscription_push(std::string_view push);

}  // namespace corral::proxy
