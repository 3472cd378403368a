// Internal to config/: the settings tables. One row per YAML key reads it (type and range checks,
// errors with file, line and path) and shows it back for describe(). Private: it needs yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/settings.hpp"
#include "config/values.hpp"

namespace corral::config::schema {

// Collects every error of one load as "SOURCE:LINE: path: problem".
class Reader {
 public:
  Reader(std::string source, EnvLookup env) : source_(std::move(source)), env_(std::move(env)) {}

  void error(const YAML::Node& at, const std::string& path, const std::string& problem);
  void error_at_line(int line, const std::string& path, const std::string& problem);
  // The node's text after ${ENV} expansion; a null node reads as "". Records an error and returns
  // nullopt for a list or a map.
  std::optional<std::string> scalar(const YAML::Node& node, const std::string& path);
  // scalar() then `parse`, which returns a Parsed<T>; a refusal is recorded at the node.
  template <class T, class Parse>
  std::optional<T> parse(const YAML::Node& node, const std::string& path, Parse&& parse_fn) {
    const auto text = scalar(node, path);
    if (!text) return std::nullopt;
    Parsed<T> parsed = parse_fn(*text);
    if (!parsed) error(node, path, parsed.error);
    return parsed.value;
  }
  // Reports unknown and duplicate keys of a mapping. False (with an error) when `node` is not a
  // map; a null node (an empty section) is an empty map.
  bool check_keys(const YAML::Node& node, const std::string& path,
                  const std::vector<std::string_view>& known);

  bool ok() const { return entries_.empty(); }
  std::vector<std::string> messages() const;  // in line order

 private:
  struct Entry {
    int line;
    std::string text;
  };
  std::string source_;
  EnvLookup env_;
  std::vector<Entry> entries_;
  // yaml-cpp marks an empty value (`ttl:`) at the next token, often lines below; errors about such
  // a value point at its key instead.
  std::vector<std::pair<YAML::Node, int>> null_value_lines_;
};

std::string child(const std::string& path, std::string_view key);
std::string item(const std::string& path, std::size_t index);
// The value of `key` in `map` when present, else the map itself: where an error about it points.
YAML::Node locate(const YAML::Node& map, std::string_view key);
bool has_key(const YAML::Node& map, std::string_view key);
// "must be > 0", "must be >= 0", "must be >= N", "must be <= N" or nullopt when in range.
std::optional<std::string> range_problem(std::int64_t v, std::int64_t min, std::int64_t max);
YAML::Node text_node(std::string_view text);  // escapes ${ so describe() output reloads as is
// What a show function returns for a key describe() leaves out (an unset optional section).
inline YAML::Node omitted() { return YAML::Node(YAML::NodeType::Undefined); }
YAML::Node flow_list(const std::vector<std::string>& items);

template <class S>
struct Field {
  std::string_view key;
  std::function<void(Reader&, const YAML::Node& value, const std::string& path, S&)> read;
  std::function<YAML::Node(const S&)> show;  // omitted(): the key is left out of describe()
};
template <class S>
using Table = std::vector<Field<S>>;

// Reads the rows present in `node` in table order, so a later row may refine an earlier one
// whatever order the file uses. Keys the table does not name are errors.
template <class S>
void read_map(Reader& r, const YAML::Node& node, const std::string& path, const Table<S>& table,
              S& out) {
  std::vector<std::string_view> known;
  for (const Field<S>& f : table) known.push_back(f.key);
  if (!r.check_keys(node, path, known) || node.IsNull()) return;
  for (const Field<S>& f : table) {
    if (has_key(node, f.key)) f.read(r, locate(node, f.key), child(path, f.key), out);
  }
}

template <class S>
YAML::Node show_map(const Table<S>& table, const S& s) {
  YAML::Node map(YAML::NodeType::Map);
  for (const Field<S>& f : table) {
    if (YAML::Node v = f.show(s); v.IsDefined()) map[std::string(f.key)] = v;
  }
  return map;
}

// ---- Row factories: the common value types with their range checks. ----

enum class Min { zero, positive };

template <class S>
Field<S> duration(std::string_view key, Duration S::*m, Min min) {
  return {key,
          [m, min](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            const auto v = r.parse<Duration>(n, p, parse_duration);
            if (!v) return;
            const auto bad = range_problem(v->count(), min == Min::positive ? 1 : 0,
                                           std::numeric_limits<std::int64_t>::max());
            if (bad) return r.error(n, p, *bad);
            s.*m = *v;
          },
          [m](const S& s) { return text_node(format_duration(s.*m)); }};
}

template <class S, class I>
Field<S> integer(std::string_view key, I S::*m, std::int64_t min,
                 std::int64_t max = std::numeric_limits<int>::max()) {
  return {key,
          [m, min, max](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            const auto v = r.template parse<std::int64_t>(n, p, parse_integer);
            if (!v) return;
            if (const auto bad = range_problem(*v, min, max)) return r.error(n, p, *bad);
            s.*m = static_cast<I>(*v);
          },
          [m](const S& s) { return text_node(std::to_string(s.*m)); }};
}

template <class S, class I>
Field<S> size(std::string_view key, I S::*m) {
  return {key,
          [m](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            const auto v = r.template parse<std::uint64_t>(n, p, parse_size);
            if (!v) return;
            if (*v == 0) return r.error(n, p, "must be > 0");
            s.*m = static_cast<I>(*v);
          },
          [m](const S& s) { return text_node(format_size(s.*m)); }};
}

// A number in [min, below); `below` infinite means no upper bound.
template <class S>
Field<S> number(std::string_view key, double S::*m, double min,
                double below = std::numeric_limits<double>::infinity()) {
  return {key,
          [m, min, below](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            const auto v = r.parse<double>(n, p, parse_number);
            if (!v) return;
            if (*v < min || *v >= below) {
              const bool bounded = below != std::numeric_limits<double>::infinity();
              return r.error(
                  n, p,
                  bounded ? "must be in [" + format_number(min) + ", " + format_number(below) + ")"
                          : "must be >= " + format_number(min));
            }
            s.*m = *v;
          },
          [m](const S& s) { return text_node(format_number(s.*m)); }};
}

template <class S>
Field<S> boolean(std::string_view key, bool S::*m) {
  return {key,
          [m](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            if (const auto v = r.parse<bool>(n, p, parse_bool)) s.*m = *v;
          },
          [m](const S& s) { return text_node(s.*m ? "true" : "false"); }};
}

enum class Text { plain, secret, required };

template <class S>
Field<S> text(std::string_view key, std::string S::*m, Text kind = Text::plain) {
  return {key,
          [m, kind](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            auto v = r.scalar(n, p);
            if (!v) return;
            if (kind == Text::required && v->empty()) return r.error(n, p, "must not be empty");
            s.*m = std::move(*v);
          },
          [m, kind](const S& s) {
            return text_node(kind == Text::secret && !(s.*m).empty() ? "********" : s.*m);
          }};
}

template <class E>
struct Choice {
  std::string_view name;
  E value;
};

// One of a fixed set of names (case-insensitive); `choices` must outlive the table (a static).
template <class S, class E, std::size_t N>
Field<S> choice(std::string_view key, E S::*m, const std::array<Choice<E>, N>& choices) {
  return {key,
          [m, &choices](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            const auto v = r.scalar(n, p);
            if (!v) return;
            std::string names;
            for (const Choice<E>& c : choices) {
              if (c.name == to_lower(*v)) return void(s.*m = c.value);
              names += (names.empty() ? "" : ", ") + std::string(c.name);
            }
            r.error(n, p, "expected one of: " + names);
          },
          [m, &choices](const S& s) {
            for (const Choice<E>& c : choices) {
              if (c.value == s.*m) return text_node(c.name);
            }
            return omitted();
          }};
}

// A list of command names, upper-cased and de-duplicated; when `allowed` is non-empty every name
// must be in it. `allowed` must outlive the table (a constant).
void read_commands(Reader& r, const YAML::Node& n, const std::string& p,
                   std::span<const std::string_view> allowed, bool non_empty,
                   std::vector<std::string>& out);

template <class S>
Field<S> commands(std::string_view key, std::vector<std::string> S::*m,
                  std::span<const std::string_view> allowed, bool non_empty) {
  return {key,
          [m, allowed, non_empty](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            read_commands(r, n, p, allowed, non_empty, s.*m);
          },
          [m](const S& s) { return flow_list(s.*m); }};
}

// A nested mapping read with its own table, then `check` for cross-field rules (may be null).
template <class S, class T>
Field<S> section(std::string_view key, T S::*m, const Table<T>& (*table)(),
                 void (*check)(Reader&, const YAML::Node&, const std::string&, T&) = nullptr) {
  return {key,
          [m, table, check](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            read_map(r, n, p, table(), s.*m);
            if (check != nullptr && n.IsMap()) check(r, n, p, s.*m);
          },
          [m, table](const S& s) { return show_map(table(), s.*m); }};
}

// `upstream:` and each of `upstreams:` (loader.cpp).
const Table<UpstreamSettings>& upstream_table();
void check_upstream(Reader& r, const YAML::Node& map, const std::string& p, UpstreamSettings& s);

// `upstreams:` and `routes:` (schema_routes.cpp); check_routes ties them to each other and to the
// policies once the whole file is read.
void read_upstreams(Reader& r, const YAML::Node& n, const std::string& p, Settings& s);
void read_routes(Reader& r, const YAML::Node& n, const std::string& p, Settings& s);
void check_routes(Reader& r, const YAML::Node& root, const Settings& s);
// The route keys under `prefix` take (the longest route prefix it starts with); null: default.
const RouteSettings* route_of_prefix(const Settings& s, std::string_view prefix);
YAML::Node show_upstreams(const Settings& s);
YAML::Node show_routes(const Settings& s);

// The top-level table (loader.cpp) and the policy table (schema_policy.cpp).
const Table<Settings>& settings_table();
const Table<PolicySettings>& policy_table();
void read_policies(Reader& r, const YAML::Node& n, const std::string& p,
                   std::vector<PolicySettings>& out);

}  // namespace corral::config::schema
