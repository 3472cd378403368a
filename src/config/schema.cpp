// The non-template half of the settings-table machinery: error collection, key checks, helpers.
#include "config/schema.hpp"

#include <algorithm>
#include <set>

namespace corral::config::schema {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A typo is the common cause of an unknown key, so name the closest known key when it is close.
std::string unknown_key_problem(std::string_view key, const std::vector<std::string_view>& known) {
  std::string_view best;
  std::size_t best_distance = 3;
  for (std::string_view k : known) {
    if (const std::size_t d = edit_distance(key, k); d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best.empty() ? "unknown key" : "unknown key (did you mean " + std::string(best) + "?)";
}

std::string kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "a single value";
  }
}

// "CONFIG GET" (as README and redis-cli write it) names the table row "CONFIG|GET": words separated
// by blanks are joined with '|'. Every word must start with a letter, as Redis's command names do,
// so that a stray option ('rm -rf') is still reported instead of becoming a row name.
std::string command_row_name(std::string_view text) {
  std::string name;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t begin = text.find_first_not_of(" \t", at);
    if (begin == std::string_view::npos) break;
    const std::size_t end = std::min(text.find_first_of(" \t", begin), text.size());
    if (!(text[begin] >= 'A' && text[begin] <= 'Z')) return {};
    if (!name.empty()) name += '|';
    name.append(text.substr(begin, end - begin));
    at = end;
  }
  return name;
}

bool is_command_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
         c == '|';
}

}  // namespace

void Reader::error(const YAML::Node& at, const std::string& path, const std::string& problem) {
  // An undefined node (a key that is absent) carries no position; Mark() would throw on it.
  int line = at.IsDefined() ? at.Mark().line : -1;
  if (at.IsDefined() && at.IsNull()) {
    for (const auto& [node, key_line] : null_value_lines_) {
      if (node.is(at)) line = key_line;
    }
  }
  error_at_line(line, path, problem);
}

void Reader::error_at_line(int line, const std::string& path, const std::string& problem) {
  std::string text = source_;
  if (line >= 0) text += ":" + std::to_string(line + 1);
  text += ": ";
  if (!path.empty()) text += path + ": ";
  entries_.push_back({line, text + problem});
}

std::optional<std::string> Reader::scalar(const YAML::Node& node, const std::string& path) {
  if (node.IsNull()) return std::string();
  if (!node.IsScalar()) {
    error(node, path, "expected a single value, found " + kind_name(node));
    return std::nullopt;
  }
  Parsed<std::string> expanded = expand_env(node.Scalar(), env_);
  if (!expanded) error(node, path, expanded.error);
  return expanded.value;
}

bool Reader::check_keys(const YAML::Node& node, const std::string& path,
                        const std::vector<std::string_view>& known) {
  if (node.IsNull()) return true;
  if (!node.IsMap()) {
    error(node, path, "expected a map of settings, found " + kind_name(node));
    return false;
  }
  std::set<std::string> seen;
  for (const auto& pair : node) {
    const YAML::Node& key = pair.first;
    if (!key.IsScalar()) {
      error(key, path, "keys must be plain names");
      continue;
    }
    if (pair.second.IsNull()) null_value_lines_.emplace_back(pair.second, key.Mark().line);
    const std::string& name = key.Scalar();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      error(key, child(path, name), unknown_key_problem(name, known));
    } else if (!seen.insert(name).second) {
      error(key, child(path, name), "duplicate key");
    }
  }
  return true;
}

std::vector<std::string> Reader::messages() const {
  std::vector<Entry> sorted = entries_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Entry& a, const Entry& b) { return a.line < b.line; });
  std::vector<std::string> out;
  out.reserve(sorted.size());
  for (Entry& e : sorted) out.push_back(std::move(e.text));
  return out;
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string item(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

bool has_key(const YAML::Node& map, std::string_view key) {
  return map.IsMap() && map[std::string(key)].IsDefined();
}

YAML::Node locate(const YAML::Node& map, std::string_view key) {
  return has_key(map, key) ? map[std::string(key)] : map;
}

std::optional<std::string> range_problem(std::int64_t v, std::int64_t min, std::int64_t max) {
  if (v < min) {
    if (min == 1) return "must be > 0";
    return "must be >= " + std::to_string(min);
  }
  if (v > max) return "must be <= " + std::to_string(max);
  return std::nullopt;
}

YAML::Node text_node(std::string_view text) { return YAML::Node(escape_env(text)); }

YAML::Node flow_list(const std::vector<std::string>& items) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const std::string& s : items) list.push_back(text_node(s));
  list.SetStyle(YAML::EmitterStyle::Flow);
  return list;
}

void read_commands(Reader& r, const YAML::Node& n, const std::string& p,
                   std::span<const std::string_view> allowed, bool non_empty,
                   std::vector<std::string>& out) {
  if (!n.IsSequence()) return r.error(n, p, "expected a list like [GET, MGET]");
  std::vector<std::string> names;
  bool all_valid = true;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto v = r.scalar(n[i], item(p, i));
    if (!v) {
      all_valid = false;
      continue;
    }
    std::string name = command_row_name(to_upper(*v));
    std::string problem;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      problem = name + " cannot be cached; expected some of:";
      for (std::string_view a : allowed) problem += " " + std::string(a);
    } else if (name.empty() || !std::all_of(name.begin(), name.end(), is_command_char)) {
      problem = "not a command name";
    }
    if (!problem.empty()) {
      r.error(n[i], item(p, i), problem);
      all_valid = false;
    } else if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(std::move(name));
    }
  }
  if (all_valid && non_empty && names.empty()) return r.error(n, p, "must not be empty");
  out = std::move(names);
}

}  // namespace corral::config::schema
