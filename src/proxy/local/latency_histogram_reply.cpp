// Redis's entries for the commands Corral answers count only Corral's own traffic (readiness
// PINGs, CLIENT ID and HELLO on its connections): a client sees Corral's counts for those instead.
#include "proxy/local/latency_histogram_reply.hpp"

#include <algorithm>
#include <vector>

#include "proxy/local/local_commands.hpp"
#include "proxy/local/local_latency.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"

namespace corral::proxy {

namespace {
using resp::Reply;

bool answered_by_corral(const CommandSpec& row) {
  return row.route == Route::local && find_local_handler(row) != nullptr;
}

// Redis's lookupCommandBySds: "name" or "parent|sub", nothing deeper.
const CommandSpec* find_named(std::string_view name) {
  const auto bar = name.find('|');
  if (bar == std::string_view::npos) return find_command(name);
  const CommandSpec* parent = find_command(name.substr(0, bar));
  const std::string_view sub = name.substr(bar + 1);
  if (parent == nullptr || sub.find('|') != std::string_view::npos) return nullptr;
  return find_subcommand(*parent, sub);
}

void add_answered(const CommandSpec& row, std::vector<const CommandSpec*>& out) {
  if (answered_by_corral(row)) out.push_back(&row);
}

// In Redis's order of the arguments: a command's own entry, then its subcommands'.
std::vector<const CommandSpec*> selected(std::span<const std::string_view> argv) {
  std::vector<const CommandSpec*> rows;
  if (argv.size() <= 2) {
    for (const auto& row : all_commands()) add_answered(row, rows);
    return rows;
  }
  for (std::size_t i = 2; i < argv.size(); ++i) {
    const CommandSpec* row = find_named(argv[i]);
    if (row == nullptr) continue;
    add_answered(*row, rows);
    for (const auto& sub : subcommands(*row)) add_answered(sub, rows);
  }
  return rows;
}

void append_name(std::string& out, std::string_view name) { resp::append_bulk(out, name); }

// fillCommandCDF: {calls, histogram_usec: {bound: cumulative calls}} with empty buckets left out.
void append_histogram(std::string& out, const LocalLatency::Buckets& counts, char map_type,
                      std::size_t pair_size) {
  std::size_t filled = 0;
  std::uint64_t calls = 0;
  for (const auto count : counts) {
    calls += count;
    filled += count > 0;
  }
  resp::append_header(out, map_type, 2 * pair_size);
  append_name(out, "calls");
  resp::append_integer(out, static_cast<std::int64_t>(calls));
  append_name(out, "histogram_usec");
  resp::append_header(out, map_type, filled * pair_size);
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    if (counts[b] == 0) continue;
    cumulative += counts[b];
    resp::append_integer(out, LocalLatency::bucket_label_usec(b));
    resp::append_integer(out, static_cast<std::int64_t>(cumulative));
  }
}

bool named_by(const Reply& name, std::span<const CommandSpec* const> rows) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const CommandSpec* row) { return row->name == name.text; });
}

class LatencyHistogramMerge final : public upstream::ReplyTarget {
 public:
  LatencyHistogramMerge(std::span<const std::string_view> argv, const LocalLatency& latency,
                        std::shared_ptr<upstream::ReplyTarget> client)
      : argv_(argv.begin(), argv.end()), latency_(latency), client_(std::move(client)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    std::vector<std::string_view> argv(argv_.begin(), argv_.end());
    client_->on_reply(tag, merged_latency_histogram(reply, argv, latency_));
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }
  void on_error(std::uint64_t tag, upstream::ErrorKind kind, std::string_view error) override {
    client_->on_error(tag, kind, error);
  }
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override {
    client_->note_phases(tag, phases);
  }

 private:
  std::vector<std::string> argv_;  // the request's bytes are gone by the time Redis answers
  const LocalLatency& latency_;
  std::shared_ptr<upstream::ReplyTarget> client_;
};

class ResetStatFollower final : public upstream::ReplyTarget {
 public:
  ResetStatFollower(LocalLatency& latency, std::shared_ptr<upstream::ReplyTarget> client)
      : latency_(latency), baseline_(latency.snapshot()), client_(std::move(client)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (reply == "+OK\r\n") latency_.reset_to(baseline_);
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);  // Redis's counts may or may not be reset: Corral keeps its
  }
  void on_error(std::uint64_t tag, upstream::ErrorKind kind, std::string_view error) override {
    client_->on_error(tag, kind, error);
  }
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override {
    client_->note_phases(tag, phases);
  }

 private:
  LocalLatency& latency_;
  const LocalLatency::Baseline baseline_;
  std::shared_ptr<upstream::ReplyTarget> client_;
};
}  // namespace

std::string merged_latency_histogram(std::string_view upstream_reply,
                                     std::span<const std::string_view> argv,
                                     const LocalLatency& latency) {
  const auto decoded = resp::decode_reply(upstream_reply);
  if (!decoded || (decoded->type != Reply::Type::array && decoded->type != Reply::Type::map)) {
    return std::string(upstream_reply);
  }
  const bool resp3 = decoded->type == Reply::Type::map;
  const char map_type = resp3 ? '%' : '*';
  const std::size_t pair_size = resp3 ? 1 : 2;  // a RESP2 map is a flat array
  const auto rows = selected(argv);
  std::string body;
  std::size_t entries = 0;
  const auto& elements = decoded->elements;
  for (std::size_t i = 0; i + 1 < elements.size(); i += 2) {
    if (named_by(elements[i], rows)) continue;
    resp::append_reply(body, elements[i]);
    resp::append_reply(body, elements[i + 1]);
    ++entries;
  }
  for (const CommandSpec* row : rows) {
    const auto counts = latency.counts(command_id(*row));
    if (std::all_of(counts.begin(), counts.end(), [](auto count) { return count == 0; })) continue;
    append_name(body, row->name);
    append_histogram(body, counts, map_type, pair_size);
    ++entries;
  }
  std::string out;
  resp::append_header(out, map_type, entries * pair_size);
  out += body;
  return out;
}

std::shared_ptr<upstream::ReplyTarget> follow_local_latency(
    const CommandSpec& row, std::span<const std::string_view> argv, LocalLatency& latency,
    std::shared_ptr<upstream::ReplyTarget> target) {
  if (row.name == "config|resetstat") {
    return std::make_shared<ResetStatFollower>(latency, std::move(target));
  }
  return std::make_shared<LatencyHistogramMerge>(argv, latency, std::move(target));
}

}  // namespace corral::proxy
