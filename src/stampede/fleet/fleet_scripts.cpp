// The Lua scripts of fleet mode and the decoding of their replies.
#include "stampede/fleet/fleet_scripts.hpp"

#include <algorithm>
#include <charconv>

#include "resp/reply.hpp"
#include "stampede/fleet/companion_keys.hpp"
#include "upstream/cluster/hash_tag.hpp"

namespace corral::stampede::fleet {

namespace {

// Lua's numbers are doubles: milliseconds since 1970 fit exactly.
constexpr std::string_view kNow = R"(local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
)";

// A value is fresh while its soft expiry is ahead and the plain key still holds it.
constexpr std::string_view kRead = R"(
local s = redis.call('HMGET', KEYS[2], 'v', 'stored', 'delta', 'soft', 'nil', 'val', 'tags', 'win')
return {now, s[1], s[2], s[3], s[4], s[5], redis.call('PTTL', KEYS[2]),
        redis.call('EXISTS', KEYS[1]), redis.call('PTTL', KEYS[3]), s[6], s[7], s[8]})";

constexpr std::string_view kLock = R"(
local min_left = tonumber(ARGV[3])
if min_left >= 0 then
  local soft = tonumber(redis.call('HGET', KEYS[2], 'soft') or '0')
  local cached_nil = redis.call('HGET', KEYS[2], 'nil') == '1'
  if soft - now > min_left and (cached_nil or redis.call('EXISTS', KEYS[1]) == 1) then
    return 2
  end
end
if redis.call('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0)";

// Fencing: only the lock's current holder writes; a holder whose lock expired while the origin
// was slow must not overwrite what its successor stored.
constexpr std::string_view kWrite = R"(
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
if ARGV[6] == '1' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'v', ARGV[2], 'stored', now, 'delta', ARGV[5],
           'soft', now + tonumber(ARGV[3]), 'nil', ARGV[6], 'val', ARGV[7], 'tags', ARGV[8],
           'win', ARGV[9])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('DEL', KEYS[3])
return 1)";

constexpr std::string_view kRelease = R"(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0)";

constexpr std::int64_t kDeletedMargin = 5;  // ms

std::string with_clock(std::string_view body) {
  std::string source(kNow);
  source += body;
  return source;
}

std::int64_t number(const resp::Reply& reply) {
  if (reply.type == resp::Reply::Type::integer) return reply.integer;
  if (reply.type != resp::Reply::Type::bulk) return 0;
  std::int64_t value = 0;
  const auto& text = reply.text;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

}  // namespace

std::string encode_tags(const std::vector<TagCount>& tags) {
  std::string out;
  for (const auto& [tag, count] : tags) {
    out += tag;
    out += ' ';
    out += std::to_string(count);
    out += '\n';
  }
  return out;
}

std::vector<TagCount> decode_tags(std::string_view text) {
  std::vector<TagCount> out;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const auto space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    std::uint64_t count = 0;
    const auto digits = line.substr(space + 1);
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) continue;
    out.push_back({std::string(line.substr(0, space)), count});
  }
  return out;
}

std::string encode_windows(const CopyWindows& windows) {
  return std::to_string(windows.grace.count()) + ' ' +
         std::to_string(windows.stale_if_error.count());
}

namespace {
std::optional<CopyWindows> decode_windows(std::string_view text) {
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::int64_t grace = 0;
  std::int64_t stale_if_error = 0;
  const auto g = text.substr(0, space);
  const auto s = text.substr(space + 1);
  const auto [g_end, g_ec] = std::from_chars(g.data(), g.data() + g.size(), grace);
  const auto [s_end, s_ec] = std::from_chars(s.data(), s.data() + s.size(), stale_if_error);
  if (g_ec != std::errc() || s_ec != std::errc() || g_end != g.data() + g.size() ||
      s_end != s.data() + s.size() || grace < 0 || stale_if_error < 0) {
    return std::nullopt;
  }
  return CopyWindows{std::chrono::milliseconds(grace), std::chrono::milliseconds(stale_if_error)};
}
}  // namespace

FleetKeys::FleetKeys(std::string_view user_key)
    : plain(user_key),
      shadow(upstream::companion_key(user_key, kShadowSuffix)),
      lock(upstream::companion_key(user_key, kLockSuffix)) {}

const upstream::Script& read_script() {
  static const upstream::Script script(with_clock(kRead));
  return script;
}
const upstream::Script& lock_script() {
  static const upstream::Script script(with_clock(kLock));
  return script;
}
const upstream::Script& write_script() {
  static const upstream::Script script(with_clock(kWrite));
  return script;
}
const upstream::Script& release_script() {
  static const upstream::Script script{std::string(kRelease)};
  return script;
}

std::optional<SharedState> parse_state(std::string_view bytes) {
  const auto reply = resp::decode_reply(bytes);
  // Nine to eleven elements: the reply of an older read script (no 'val', 'tags' or 'win').
  if (!reply || reply->type != resp::Reply::Type::array || reply->elements.size() < 9 ||
      reply->elements.size() > 12) {
    return std::nullopt;
  }
  const auto& e = reply->elements;
  using std::chrono::milliseconds;
  SharedState state;
  const std::int64_t now = number(e[0]);
  state.has_value = e[1].type == resp::Reply::Type::bulk;
  state.value = e[1].text;
  state.stored_ms = number(e[2]);
  state.delta = milliseconds(std::max<std::int64_t>(0, number(e[3])));
  state.nil = number(e[5]) == 1;
  state.shadow_for = milliseconds(std::max<std::int64_t>(0, number(e[6])));
  const bool plain_exists = number(e[7]) == 1;
  state.lock_for = milliseconds(std::max<std::int64_t>(0, number(e[8])));
  if (e.size() >= 10 && e[9].type == resp::Reply::Type::bulk) state.validators = e[9].text;
  if (e.size() >= 11 && e[10].type == resp::Reply::Type::bulk) state.tags = decode_tags(e[10].text);
  if (e.size() == 12 && e[11].type == resp::Reply::Type::bulk)
    state.windows = decode_windows(e[11].text);
  const std::int64_t soft = number(e[4]);
  if (state.has_value && (plain_exists || state.nil) && soft > now) {
    state.fresh_for = milliseconds(soft - now);
  }
  // The plain key gone well before its expiry: a client deleted it (DEL through Corral or not),
  // so its value must not come back as a stale copy. (The plain key's PX and `soft` end together,
  // give or take Redis's clock tick.)
  if (state.has_value && !state.nil && !plain_exists && soft - now > kDeletedMargin) {
    state.has_value = false;
    state.deleted = true;
  }
  return state;
}

CopyWindows copy_windows(const SharedState& state, const CopyWindows& policy) {
  CopyWindows windows = state.windows.value_or(policy);
  if (state.nil) windows.grace = std::chrono::milliseconds(0);
  return windows;
}

std::chrono::milliseconds usable_for(const SharedState& state, const CopyWindows& windows) {
  using std::chrono::milliseconds;
  if (!state.has_value) return milliseconds(0);
  // The shadow was kept for max(grace, stale_if_error) past the soft expiry: what is left of
  // that says how long ago the copy went stale.
  const auto stale_age = std::max(windows.grace, windows.stale_if_error) - state.shadow_for;
  const auto window =
      state.fresh_for.count() > 0 ? state.fresh_for + windows.grace : windows.grace - stale_age;
  return std::clamp(window, milliseconds(0), state.shadow_for);
}

}  // namespace corral::stampede::fleet
