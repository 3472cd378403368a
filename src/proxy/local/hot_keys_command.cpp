// CORRAL.HOTKEYS: one flat field/value array per key (like CORRAL.INFO): key, kind, rate,
// rate_error, policy, sampled, sketch_error; hottest first.
#include "proxy/local/hot_keys_command.hpp"

#include <charconv>
#include <cstdio>

#include "proxy/local/admin_commands.hpp"
#include "resp/ascii.hpp"
#include "resp/encoder.hpp"
#include "stampede/core/hot_keys.hpp"
#include "stampede/policy/cache_runtime.hpp"

namespace corral::proxy {

namespace {
constexpr std::size_t kDefaultCount = 10;

struct Query {
  std::size_t count = kDefaultCount;
  std::optional<stampede::HotKeyKind> kind;
};

// False, with an error appended, for anything but [COUNT n] [READS|WRITES] in any order.
bool parse_query(LocalCall& call, Query& query) {
  const auto argv = call.argv;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (resp::iequals(argv[i], "READS") || resp::iequals(argv[i], "WRITES")) {
      query.kind = resp::iequals(argv[i], "READS") ? stampede::HotKeyKind::read
                                                   : stampede::HotKeyKind::write;
      continue;
    }
    if (!resp::iequals(argv[i], "COUNT") || i + 1 == argv.size()) {
      resp::append_error(call.reply, "ERR syntax error: CORRAL.HOTKEYS [COUNT n] [READS|WRITES]");
      return false;
    }
    const auto text = argv[++i];
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value <= 0) {
      resp::append_error(call.reply, "ERR COUNT must be a positive integer");
      return false;
    }
    query.count = static_cast<std::size_t>(value);
  }
  return true;
}

std::string rate_text(double rate) {
  char buffer[32];
  const int n = std::snprintf(buffer, sizeof(buffer), "%.1f", rate);
  return std::string(buffer, static_cast<std::size_t>(n));
}
}  // namespace

Action corral_hotkeys(LocalCall& call) {
  if (refused_unless_admin(call)) return Action::done;
  if (call.hot_keys == nullptr) {
    resp::append_error(call.reply, "ERR corral: hot-key detection is off (hot_keys.detect: false)");
    return Action::done;
  }
  Query query;
  if (!parse_query(call, query)) return Action::done;
  const auto hot = call.hot_keys->top(query.count, query.kind);
  const auto policies = call.cache ? call.cache->policies() : nullptr;
  resp::append_array_header(call.reply, hot.size());
  for (const auto& key : hot) {
    std::string policy = "none";
    if (policies) {
      if (const auto index = policies->matcher.match(key.key)) {
        policy = policies->settings[*index].prefix;
      }
    }
    resp::append_array_header(call.reply, 14);
    resp::append_field(call.reply, "key", key.key);
    resp::append_field(call.reply, "kind",
                       key.kind == stampede::HotKeyKind::read ? "read" : "write");
    resp::append_field(call.reply, "rate", rate_text(key.rate));
    resp::append_field(call.reply, "rate_error", rate_text(key.rate_error));
    resp::append_field(call.reply, "policy", policy);
    resp::append_field(call.reply, "sampled", static_cast<std::int64_t>(key.sampled));
    resp::append_field(call.reply, "sketch_error", static_cast<std::int64_t>(key.sketch_error));
  }
  return Action::done;
}

}  // namespace corral::proxy
