// URL template parsing and expansion for the http origin.
#include "config/url_template.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace corral::config {

namespace {

constexpr std::string_view kScheme = "http://";
constexpr std::string_view kRedacted = "***";

bool istarts_with(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

bool is_dot_segment(std::string_view segment) { return segment == "." || segment == ".."; }

bool looks_like_credential(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::string_view, 6> kWords{"token", "secret", "password",
                                                          "key",   "auth",   "sig"};
  for (std::string_view word : kWords) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

// Rewrites the value of each `name=value` pair after the first '?' with `mask(name, value)`.
template <typename Mask>
std::string rewrite_query(std::string_view url, Mask mask) {
  const std::size_t question = url.find('?');
  if (question == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, question + 1));
  std::string_view query = url.substr(question + 1);
  while (true) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t equals = pair.find('=');
    if (equals == std::string_view::npos) {
      out += pair;
    } else {
      out += pair.substr(0, equals + 1);
      out += mask(pair.substr(0, equals), pair.substr(equals + 1));
    }
    if (amp == std::string_view::npos) break;
    out += '&';
    query.remove_prefix(amp + 1);
  }
  return out;
}

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

std::string redact_query(std::string_view url) {
  return rewrite_query(url, [](std::string_view, std::string_view value) {
    return value.empty() ? std::string() : std::string(kRedacted);
  });
}

std::string redact_template(std::string_view text) {
  return rewrite_query(text, [](std::string_view name, std::string_view value) {
    const bool placeholder = value.find('{') != std::string_view::npos;
    return looks_like_credential(name) && !placeholder && !value.empty() ? std::string(kRedacted)
                                                                         : std::string(value);
  });
}

UrlTemplate UrlTemplate::parse(std::string_view text) {
  UrlTemplate t;
  auto fail = [&t](std::string why) {
    t.error_ = std::move(why);
    return t;
  };
  if (istarts_with(text, "https://")) return fail("https is not supported; use http://");
  if (!istarts_with(text, kScheme)) return fail("must start with http://");
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
  const std::string_view written = rest.substr(authority_end);
  const std::string_view literal_path = written.substr(0, written.find('?'));
  for (std::size_t start = 0; start < literal_path.size();) {
    const std::size_t slash = std::min(literal_path.find('/', start + 1), literal_path.size());
    if (is_dot_segment(literal_path.substr(start + 1, slash - start - 1)))
      return fail("a \".\" or \"..\" path segment is not allowed");
    start = slash;
  }
  return t;
}

std::optional<std::string> UrlTemplate::target(std::string_view key,
                                               std::string_view prefix) const {
  const std::string_view suffix = key.starts_with(prefix) ? key.substr(prefix.size()) : key;
  std::string out;
  std::size_t segment_start = 0;  // just after the '/' that opened the current path segment
  bool in_query = false;
  bool segment_has_placeholder = false;
  // A placeholder never adds a '/' or '?' (url_escape encodes them), so segments end only in
  // literals; a segment is checked when it ends.
  auto segment_is_safe = [&](std::size_t end) {
    const std::string_view segment(out.data() + segment_start, end - segment_start);
    return !segment_has_placeholder || (!segment.empty() && !is_dot_segment(segment));
  };
  for (const Segment& piece : path_) {
    if (piece.piece != Piece::literal) {
      out += url_escape(piece.piece == Piece::key ? key : suffix);
      segment_has_placeholder = true;
      continue;
    }
    for (char c : piece.text) {
      if (!in_query && (c == '/' || c == '?')) {
        if (!segment_is_safe(out.size())) return std::nullopt;
        segment_start = out.size() + 1;
        segment_has_placeholder = false;
        in_query = c == '?';
      }
      out.push_back(c);
    }
  }
  if (!in_query && !segment_is_safe(out.size())) return std::nullopt;
  return out;
}

std::optional<std::string> UrlTemplate::url(std::string_view key, std::string_view prefix) const {
  auto path = target(key, prefix);
  if (!path) return std::nullopt;
  return redact_query(std::string(kScheme) + authority_ + *path);
}

}  // namespace corral::config
