// URL template parsing and expansion for the http origin.
#include "origin/url_template.hpp"

#include <algorithm>
#include <cctype>

#include "resp/ascii.hpp"

namespace corral::origin {

namespace {

constexpr std::string_view kScheme = "http://";

bool is_unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

// "65535" -> 65535; anything else (empty, signs, 0, too large) -> 0.
std::uint16_t parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return 0;
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value <= 65535 ? static_cast<std::uint16_t>(value) : 0;
}

}  // namespace

std::string url_escape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_unreserved(c)) {
      out.push_back(ch);
      continue;
    }
    out.push_back('%');
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
  return out;
}

UrlTemplate UrlTemplate::parse(std::string_view text) {
  UrlTemplate t;
  auto fail = [&t](std::string why) {
    t.error_ = std::move(why);
    return t;
  };
  if (resp::istarts_with(text, "https://")) return fail("https is not supported; use http://");
  if (!resp::istarts_with(text, kScheme)) return fail("must start with http://");
  const std::string_view rest = text.substr(kScheme.size());
  const std::size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  const std::string_view authority = rest.substr(0, authority_end);
  std::string_view path = rest.substr(authority_end);

  if (authority.find_first_of("{}") != std::string_view::npos)
    return fail("placeholders are only allowed in the path, not in the host");
  if (authority.find('@') != std::string_view::npos) return fail("user info is not supported");
  if (path.find('#') != std::string_view::npos) return fail("a fragment (#) is not allowed");

  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return fail("unbalanced [ ] around an IPv6 host");
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return fail("unexpected text after ]");
    if (!after.empty()) port = after.substr(1);
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return fail("needs a host after http://");
  if (authority.ends_with(':') || (!port.empty() && parse_port(port) == 0))
    return fail("port must be a number from 1 to 65535");
  t.host_ = std::string(host);
  t.authority_ = std::string(authority);
  if (!port.empty()) t.port_ = parse_port(port);

  if (path.empty() || path.front() == '?') t.path_.push_back({Piece::literal, "/"});
  bool has_placeholder = false;
  while (!path.empty()) {
    const std::size_t brace = path.find_first_of("{}");
    if (brace != 0) {
      t.path_.push_back({Piece::literal, std::string(path.substr(0, brace))});
      if (brace == std::string_view::npos) break;
      path.remove_prefix(brace);
    }
    const std::size_t close = path.find('}');
    if (path.front() == '}' || close == std::string_view::npos)
      return fail("unbalanced { } in the template");
    const std::string_view name = path.substr(1, close - 1);
    if (name != "key" && name != "suffix")
      return fail("unknown placeholder {" + std::string(name) + "}; use {key} or {suffix}");
    t.path_.push_back({name == "key" ? Piece::key : Piece::suffix, {}});
    has_placeholder = true;
    path.remove_prefix(close + 1);
  }
  if (!has_placeholder) return fail("must contain {key} or {suffix}");
  return t;
}

std::string UrlTemplate::target(std::string_view key, std::string_view prefix) const {
  const std::string_view suffix = key.starts_with(prefix) ? key.substr(prefix.size()) : key;
  std::string out;
  for (const Segment& segment : path_) {
    switch (segment.piece) {
      case Piece::literal:
        out += segment.text;
        break;
      case Piece::key:
        out += url_escape(key);
        break;
      case Piece::suffix:
        out += url_escape(suffix);
        break;
    }
  }
  return out;
}

std::string UrlTemplate::url(std::string_view key, std::string_view prefix) const {
  return std::string(kScheme) + authority_ + target(key, prefix);
}

}  // namespace corral::origin
