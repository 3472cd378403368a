// Cache-Control parsing and the freshness of one response, by RFC 9111's rules for a shared
// cache (s-maxage first; private responses are not kept), plus tags and validators.
#include "origin/response_caching.hpp"

#include <algorithm>
#include <charconv>

#include "origin/http_date.hpp"
#include "resp/ascii.hpp"

namespace corral::origin {

namespace {

constexpr std::int64_t kMaxDeltaSeconds = std::int64_t{1} << 31;

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// delta-seconds: 1*DIGIT, saturating. nullopt when not digits.
std::optional<std::int64_t> delta_seconds(std::string_view text) {
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range || value > kMaxDeltaSeconds) return kMaxDeltaSeconds;
  return value;
}

// Splits a field value on commas outside quoted strings.
template <class Each>
void for_each_element(std::string_view value, Each&& each) {
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i <= value.size(); ++i) {
    if (i < value.size()) {
      const char c = value[i];
      if (quoted && c == '\\') {
        ++i;
        continue;
      }
      if (c == '"') quoted = !quoted;
      if (quoted || c != ',') continue;
    }
    const auto element = trim(value.substr(start, i - start));
    if (!element.empty()) each(element);
    start = i + 1;
  }
}

std::string_view unquote(std::string_view text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
    return text.substr(1, text.size() - 2);
  return text;
}

void set_seconds(std::optional<std::int64_t>& slot, std::string_view argument, bool has_argument,
                 bool* invalid) {
  if (slot) return;  // the first occurrence wins
  const auto seconds = has_argument ? delta_seconds(unquote(argument)) : std::nullopt;
  if (seconds) {
    slot = seconds;
  } else if (invalid) {
    *invalid = true;
  }
}

std::chrono::milliseconds clamp(std::chrono::seconds fresh, std::chrono::milliseconds max_ttl) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(fresh);
  return std::clamp(ms, std::chrono::milliseconds(0), max_ttl);
}

// Freshness lifetime before Age, or nullopt when the response states none.
std::optional<std::chrono::seconds> stated_lifetime(const CacheControl& cc,
                                                    const ResponseHeaders& headers,
                                                    std::chrono::sys_seconds wall_now) {
  if (cc.s_maxage) return std::chrono::seconds(*cc.s_maxage);
  if (cc.max_age) return std::chrono::seconds(*cc.max_age);
  if (cc.invalid_freshness) return std::chrono::seconds(0);
  if (headers.expires.empty()) return std::nullopt;
  // An Expires that is not a date ("0", "-1") means already expired (RFC 9111 section 5.3).
  const auto expires = parse_http_date(trim(headers.expires));
  if (!expires) return std::chrono::seconds(0);
  const auto date = headers.date.empty() ? std::nullopt : parse_http_date(trim(headers.date));
  return *expires - (date ? *date : wall_now);
}

}  // namespace

CacheControl parse_cache_control(std::string_view value) {
  CacheControl cc;
  for_each_element(value, [&cc](std::string_view element) {
    const auto equals = element.find('=');
    const auto name = trim(element.substr(0, equals));
    const bool has_argument = equals != std::string_view::npos;
    const auto argument = has_argument ? trim(element.substr(equals + 1)) : std::string_view{};
    if (resp::iequals(name, "max-age")) {
      set_seconds(cc.max_age, argument, has_argument, &cc.invalid_freshness);
    } else if (resp::iequals(name, "s-maxage")) {
      set_seconds(cc.s_maxage, argument, has_argument, &cc.invalid_freshness);
    } else if (resp::iequals(name, "stale-while-revalidate")) {
      set_seconds(cc.stale_while_revalidate, argument, has_argument, nullptr);
    } else if (resp::iequals(name, "stale-if-error")) {
      set_seconds(cc.stale_if_error, argument, has_argument, nullptr);
    } else if (resp::iequals(name, "no-store")) {
      cc.no_store = true;
    } else if (resp::iequals(name, "no-cache")) {
      cc.no_cache = true;
    } else if (resp::iequals(name, "private")) {
      cc.is_private = true;
    }
  });
  return cc;
}

void parse_tags(std::string_view value, std::vector<std::string>& tags) {
  std::size_t pos = 0;
  while (pos < value.size() && tags.size() < kMaxTags) {
    const auto start = value.find_first_not_of(" \t,", pos);
    if (start == std::string_view::npos) break;
    const auto end = std::min(value.find_first_of(" \t,", start), value.size());
    const auto tag = value.substr(start, end - start);
    if (tag.size() <= kMaxTagLength && std::find(tags.begin(), tags.end(), tag) == tags.end())
      tags.emplace_back(tag);
    pos = end;
  }
}

ResponseCaching evaluate_response(const ResponseHeaders& headers, FreshnessHeaders freshness,
                                  std::chrono::sys_seconds wall_now,
                                  std::chrono::milliseconds max_ttl) {
  ResponseCaching out;
  out.validators = encode_validators(trim(headers.etag), trim(headers.last_modified));
  parse_tags(headers.surrogate_key, out.tags);
  parse_tags(headers.cache_tag, out.tags);
  if (freshness == FreshnessHeaders::ignore) return out;

  const CacheControl cc = parse_cache_control(headers.cache_control);
  if (cc.no_store || cc.is_private) {
    out.store = false;
    return out;
  }
  using std::chrono::seconds;
  if (auto lifetime = stated_lifetime(cc, headers, wall_now)) {
    // Age is how long the response already sat in caches upstream of us.
    const auto age = delta_seconds(trim(headers.age));
    if (age) *lifetime -= seconds(*age);
    out.fresh_for = clamp(*lifetime, max_ttl);
  }
  if (cc.stale_while_revalidate)
    out.grace =
        std::chrono::duration_cast<std::chrono::milliseconds>(seconds(*cc.stale_while_revalidate));
  if (cc.stale_if_error)
    out.stale_if_error =
        std::chrono::duration_cast<std::chrono::milliseconds>(seconds(*cc.stale_if_error));
  if (cc.no_cache) {
    // Stored (with its validators) but never served again without asking the origin first.
    out.fresh_for = std::chrono::milliseconds(0);
    out.grace = std::chrono::milliseconds(0);
    out.revalidate_always = true;
  }
  return out;
}

std::string encode_validators(std::string_view etag, std::string_view last_modified) {
  if (etag.empty() && last_modified.empty()) return {};
  // Field values cannot hold a line feed (the HTTP parser refuses them): a safe separator.
  std::string out;
  out.reserve(etag.size() + 1 + last_modified.size());
  out.append(etag);
  out.push_back('\n');
  out.append(last_modified);
  return out;
}

Validators decode_validators(std::string_view encoded) {
  const auto newline = encoded.find('\n');
  if (newline == std::string_view::npos) return {};
  return {std::string(encoded.substr(0, newline)), std::string(encoded.substr(newline + 1))};
}

}  // namespace corral::origin
