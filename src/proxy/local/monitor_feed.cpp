// The MONITOR feed: Redis 7.0's line format (replicationFeedMonitors, sdscatrepr) and the
// process-wide list of watchers, each fed on its own io thread through its session's push.
#include "proxy/local/monitor_feed.hpp"

#include <algorithm>
#include <cstdio>

#include "proxy/ascii.hpp"
#include "proxy/local/script_monitor.hpp"
#include "slowlog/redaction.hpp"

namespace corral::proxy {

namespace {
// sdscatrepr: quoted, with \" \\ \n \r \t \a \b and \xNN for what is not printable.
void append_repr(std::string& out, std::string_view arg) {
  out += '"';
  for (const char c : arg) {
    switch (c) {
      case '\\':
      case '"':
        out += '\\';
        out += c;
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (c >= 0x20 && c <= 0x7e) {
          out += c;
        } else {
          char hex[5];
          std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
          out += hex;
        }
    }
  }
  out += '"';
}
}  // namespace

std::string monitor_line(std::chrono::system_clock::time_point when, int database,
                         std::string_view addr, std::span<const std::string_view> argv) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(when.time_since_epoch()).count();
  char stamp[48];
  std::snprintf(stamp, sizeof stamp, "+%lld.%06lld [%d ", static_cast<long long>(micros / 1000000),
                static_cast<long long>(micros % 1000000), database);
  std::string line = stamp;
  line.append(addr);
  line += ']';
  const auto hide = slowlog::redacted_arguments(argv);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    line += ' ';
    append_repr(line, hide[i] ? slowlog::kRedacted : argv[i]);
  }
  line += "\r\n";
  return line;
}

void MonitorFeed::add(std::uint64_t client_id, Push push) {
  std::lock_guard lock(mutex_);
  list_.push_back({client_id, std::move(push)});
  watchers_.store(list_.size(), std::memory_order_relaxed);
}

void MonitorFeed::remove(std::uint64_t client_id) {
  std::lock_guard lock(mutex_);
  std::erase_if(list_, [&](const Watcher& w) { return w.client_id == client_id; });
  watchers_.store(list_.size(), std::memory_order_relaxed);
}

void MonitorFeed::feed(const CommandSpec& row, int database, std::string_view addr,
                       std::span<const std::string_view> argv) {
  if (row.flags & kAdmin) return;
  const std::string line = monitor_line(std::chrono::system_clock::now(), database, addr, argv);
  // Before the line goes out: the script's own lines may come back from Redis at once.
  if (row.flags & kRunsScript) script_monitor().expect_script(line);
  push_all(line);
}

void MonitorFeed::feed_line(std::string_view line) { push_all(std::string(line)); }

void MonitorFeed::push_all(const std::string& line) {
  std::lock_guard lock(mutex_);
  for (const auto& watcher : list_) watcher.push(line);
}

MonitorFeed& monitor_feed() {
  static auto* feed = new MonitorFeed();  // never destroyed: io threads may feed during exit
  return *feed;
}

}  // namespace corral::proxy
