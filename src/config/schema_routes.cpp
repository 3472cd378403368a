// The settings tables of `upstreams:` (named upstreams, each read like `upstream:`) and `routes:`
// (key prefixes sent to them, with optional mirroring), and the rules that tie them together.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "config/schema.hpp"

namespace corral::config::schema {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

const Table<MirrorSettings>& mirror_table() {
  using S = MirrorSettings;
  static const Table<S> table{
      text("upstream", &S::upstream, Text::required),
      integer("reads_percent", &S::reads_percent, 0, 100),
      integer("max_queue", &S::max_queue, 1, 10'000'000),
  };
  return table;
}

const Table<RouteSettings>& route_table() {
  using S = RouteSettings;
  static const Table<S> table{
      text("prefix", &S::prefix, Text::required),
      text("upstream", &S::upstream, Text::required),
      {"mirror",
       [](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
         s.mirror.emplace();
         read_map(r, n, p, mirror_table(), *s.mirror);
         if (n.IsMap() && !has_key(n, "upstream")) r.error(n, child(p, "upstream"), "required");
       },
       [](const S& s) { return s.mirror ? show_map(mirror_table(), *s.mirror) : omitted(); }},
  };
  return table;
}

bool names_upstream(const Settings& s, const std::string& name) {
  return name == kDefaultUpstreamName || s.upstreams.contains(name);
}

// The route a key under `prefix` takes (the longest route prefix it starts with), or null.
const RouteSettings* route_covering(const Settings& s, std::string_view prefix) {
  const RouteSettings* best = nullptr;
  for (const RouteSettings& route : s.routes) {
    if (route.prefix.empty()) continue;  // refused: no route at all
    if (prefix.starts_with(route.prefix) && (!best || route.prefix.size() > best->prefix.size()))
      best = &route;
  }
  return best;
}

void check_route(Reader& r, const YAML::Node& node, const std::string& path, const Settings& s,
                 const RouteSettings& route) {
  if (!route.upstream.empty() && !names_upstream(s, route.upstream))
    r.error(locate(node, "upstream"), child(path, "upstream"),
            "no upstream named \"" + route.upstream + "\" (upstreams: or \"default\")");
  if (!route.mirror || route.mirror->upstream.empty()) return;
  const YAML::Node mirror = locate(node, "mirror");
  const std::string mirror_path = child(child(path, "mirror"), "upstream");
  if (!names_upstream(s, route.mirror->upstream)) {
    r.error(locate(mirror, "upstream"), mirror_path,
            "no upstream named \"" + route.mirror->upstream + "\" (upstreams: or \"default\")");
  } else if (route.mirror->upstream == route.upstream) {
    r.error(locate(mirror, "upstream"), mirror_path, "must differ from the route's upstream");
  }
}

// A policy's keys must go to one upstream: a fill of several keys is one MGET, and the fleet's
// companion keys live beside the key.
void check_policies_stay_whole(Reader& r, const YAML::Node& routes, const Settings& s) {
  for (std::size_t i = 0; i < s.routes.size() && i < routes.size(); ++i) {
    const RouteSettings& route = s.routes[i];
    for (const PolicySettings& policy : s.policies) {
      if (route.prefix.size() <= policy.prefix.size() || !route.prefix.starts_with(policy.prefix))
        continue;
      const RouteSettings* whole = route_covering(s, policy.prefix);
      const std::string_view whole_upstream = whole ? whole->upstream : kDefaultUpstreamName;
      if (whole_upstream == route.upstream) continue;
      r.error(locate(routes[i], "prefix"), child(item("routes", i), "prefix"),
              "splits policy \"" + policy.prefix + "\" between upstreams " +
                  std::string(whole_upstream) + " and " + route.upstream +
                  ": a policy's keys must go to one upstream");
    }
  }
}

}  // namespace

void read_upstreams(Reader& r, const YAML::Node& n, const std::string& p, Settings& s) {
  if (n.IsNull()) return;
  if (!n.IsMap())
    return r.error(n, p, "expected a map of names to upstreams (name: {address: ...})");
  for (const auto& pair : n) {
    const std::string name = pair.first.IsScalar() ? pair.first.Scalar() : "";
    const std::string path = child(p, name);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_name_char)) {
      r.error(pair.first, path, "an upstream name is letters, digits, '_' and '-'");
      continue;
    }
    if (name == kDefaultUpstreamName) {
      r.error(pair.first, path, "\"default\" is the name of upstream: (write it there)");
      continue;
    }
    if (s.upstreams.contains(name)) {
      r.error(pair.first, path, "duplicate upstream name");
      continue;
    }
    UpstreamSettings upstream;
    read_map(r, pair.second, path, upstream_table(), upstream);
    if (pair.second.IsMap()) check_upstream(r, pair.second, path, upstream);
    s.upstreams.emplace(name, std::move(upstream));
  }
}

void read_routes(Reader& r, const YAML::Node& n, const std::string& p, Settings& s) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) return r.error(n, p, "expected a list of routes (- prefix: ...)");
  std::map<std::string, std::size_t> first_index;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node node = n[i];
    const std::string path = item(p, i);
    if (!node.IsMap()) {
      r.error(node, path, "expected a map with prefix and upstream");
      continue;
    }
    RouteSettings route;
    read_map(r, node, path, route_table(), route);
    for (std::string_view key : {"prefix", "upstream"}) {
      if (!has_key(node, key)) r.error(node, child(path, key), "required");
    }
    if (!route.prefix.empty()) {
      const auto [it, inserted] = first_index.emplace(route.prefix, i);
      if (!inserted)
        r.error(locate(node, "prefix"), child(path, "prefix"),
                "duplicate prefix \"" + route.prefix + "\" (also " + item(p, it->second) + ")");
    }
    s.routes.push_back(std::move(route));
  }
}

void check_routes(Reader& r, const YAML::Node& root, const Settings& s) {
  if (!root.IsMap()) return;
  const YAML::Node routes = has_key(root, "routes") ? root["routes"] : YAML::Node();
  std::set<std::string> used;
  if (routes.IsSequence()) {
    for (std::size_t i = 0; i < s.routes.size() && i < routes.size(); ++i) {
      check_route(r, routes[i], item("routes", i), s, s.routes[i]);
      used.insert(s.routes[i].upstream);
      if (s.routes[i].mirror) used.insert(s.routes[i].mirror->upstream);
    }
    check_policies_stay_whole(r, routes, s);
  }
  if (!has_key(root, "upstreams")) return;
  const YAML::Node upstreams = root["upstreams"];
  for (const auto& [name, upstream] : s.upstreams) {
    if (!used.contains(name))
      r.error(locate(upstreams, name), child("upstreams", name),
              "no route sends anything to it (routes: - prefix: ..., upstream: " + name + ")");
  }
}

const RouteSettings* route_of_prefix(const Settings& s, std::string_view prefix) {
  return route_covering(s, prefix);
}

YAML::Node show_upstreams(const Settings& s) {
  if (s.upstreams.empty()) return omitted();
  YAML::Node map(YAML::NodeType::Map);
  for (const auto& [name, upstream] : s.upstreams) map[name] = show_map(upstream_table(), upstream);
  return map;
}

YAML::Node show_routes(const Settings& s) {
  if (s.routes.empty()) return omitted();
  YAML::Node list(YAML::NodeType::Sequence);
  for (const RouteSettings& route : s.routes) list.push_back(show_map(route_table(), route));
  return list;
}

}  // namespace corral::config::schema
