// The upstream MONITOR relay: one connection for the process, opened on the io thread of the
// client that needed it; its lines are matched here and pushed through the feed's watchers.
#include "proxy/local/script_monitor.hpp"

#include <algorithm>
#include <array>

#include <spdlog/spdlog.h>

#include "proxy/ascii.hpp"
#include "proxy/local/monitor_feed.hpp"
#include "upstream/link.hpp"
#include "upstream/own_addresses.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
constexpr std::string_view kMonitorCommand = "*1\r\n$7\r\nMONITOR\r\n";
constexpr std::string_view kOk = "+OK\r\n";
constexpr std::string_view kScriptAddress = "lua";
constexpr std::uint64_t kMonitorTag = 1;
// Scripts the feed showed that Redis never ran (a NOSCRIPT, a lost connection) must not pile up.
constexpr std::size_t kMaxExpected = 1024;
// A client's MONITOR waits this long at most between its retries: the relay stays open for it.
constexpr auto kWantedFor = std::chrono::seconds(2);
// Redis writes the script's own line first for these (eval.c, functions.c).
constexpr std::array<std::string_view, 6> kScriptCommands{
    "\"eval\"", "\"evalsha\"", "\"eval_ro\"", "\"evalsha_ro\"", "\"fcall\"", "\"fcall_ro\""};

bool runs_script(std::string_view arguments) {
  const auto name = arguments.substr(0, arguments.find(' '));
  return std::any_of(kScriptCommands.begin(), kScriptCommands.end(),
                     [name](std::string_view command) { return iequals(name, command); });
}
}  // namespace

class ScriptMonitor::Follower final : public upstream::ReplyTarget {
 public:
  Follower(ScriptMonitor& monitor, std::uint64_t generation)
      : monitor_(monitor), generation_(generation) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (tag == kMonitorTag) {
      monitor_.started(generation_, reply == kOk);
    } else {
      monitor_.line(generation_, reply);
    }
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    if (tag == kMonitorTag) {
      spdlog::warn("upstream MONITOR failed ({}): MONITOR through Corral shows no script lines",
                   error);
      monitor_.started(generation_, false);
    } else {
      monitor_.lost(generation_);
    }
  }

 private:
  ScriptMonitor& monitor_;
  const std::uint64_t generation_;
};

std::string_view ScriptMonitor::arguments(std::string_view line) {
  const auto open = line.find(" [");
  const auto close = open == std::string_view::npos ? open : line.find("] \"", open);
  if (close == std::string_view::npos) return {};
  auto rest = line.substr(close + 2);
  if (rest.ends_with("\r\n")) rest.remove_suffix(2);
  return rest;
}

std::string_view ScriptMonitor::address(std::string_view line) {
  const auto open = line.find(" [");
  const auto close = open == std::string_view::npos ? open : line.find("] \"", open);
  if (close == std::string_view::npos) return {};
  const auto space = line.find(' ', open + 2);  // after the database
  if (space == std::string_view::npos || space >= close) return {};
  return line.substr(space + 1, close - space - 1);
}

ScriptMonitor::Readiness ScriptMonitor::ensure_running(upstream::Upstream& upstream) {
  std::lock_guard lock(mutex_);
  wanted_at_ = std::chrono::steady_clock::now();
  switch (state_) {
    case State::running:
      return Readiness::running;
    case State::starting:
      return Readiness::starting;
    case State::failed:
      state_ = State::stopped;  // this client goes on without; the next one tries again
      return Readiness::unavailable;
    case State::stopped:
      break;
  }
  // A previous link was closed on its own thread (or lost): released here, it is inert.
  link_ = upstream.open_own_link(0, 2);
  if (!link_) return Readiness::unavailable;  // a partitioned upstream: no one server to ask
  follower_ = std::make_shared<Follower>(*this, ++generation_);
  expected_.clear();
  following_ = false;
  link_->set_unsolicited_target(follower_);
  // Under upstream.command_timeout: a client's MONITOR must not wait for a stalled server.
  if (!link_->send(kMonitorCommand, follower_, kMonitorTag)) {
    link_.reset();
    return Readiness::unavailable;
  }
  state_ = State::starting;
  return Readiness::starting;
}

void ScriptMonitor::expect_script(std::string_view line) {
  const std::string_view args = arguments(line);
  if (!runs_script(args)) return;  // FUNCTION LOAD runs none of its code's calls
  std::lock_guard lock(mutex_);    // cleared when the upstream MONITOR starts
  if (expected_.size() >= kMaxExpected) expected_.pop_front();
  expected_.emplace_back(args);
}

bool ScriptMonitor::follows(std::string_view line,
                            const std::function<bool(std::string_view)>& own) {
  const std::string_view from = address(line);
  if (from == kScriptAddress) return following_;
  following_ = false;
  const std::string_view args = arguments(line);
  if (!runs_script(args) || !own(from)) return false;
  const auto found = std::find(expected_.begin(), expected_.end(), args);
  if (found == expected_.end()) return false;
  expected_.erase(found);
  following_ = true;
  return false;
}

void ScriptMonitor::started(std::uint64_t generation, bool ok) {
  std::unique_lock lock(mutex_);
  if (generation != generation_ || state_ != State::starting) return;
  state_ = ok ? State::running : State::failed;
  if (ok || !link_) return;
  const auto link = link_;
  lock.unlock();  // closing tells the follower, which takes the lock
  link->close();
}

void ScriptMonitor::line(std::uint64_t generation, std::string_view text) {
  std::unique_lock lock(mutex_);
  if (generation != generation_ || state_ != State::running) return;
  if (!monitor_feed().active() && std::chrono::steady_clock::now() - wanted_at_ > kWantedFor) {
    state_ = State::stopped;
    const auto link = link_;
    lock.unlock();  // closing tells the follower, which takes the lock
    link->close();  // on its own thread; the follower stays referenced by this object
    return;
  }
  const bool shown =
      follows(text, [](std::string_view from) { return upstream::own_addresses().contains(from); });
  lock.unlock();
  if (shown) monitor_feed().feed_line(text);
}

void ScriptMonitor::lost(std::uint64_t generation) {
  std::lock_guard lock(mutex_);
  if (generation != generation_) return;
  if (state_ == State::starting) {
    state_ = State::failed;
  } else if (state_ == State::running) {
    state_ = State::stopped;
  }
}

ScriptMonitor& script_monitor() {
  static auto* monitor = new ScriptMonitor();  // io threads may feed during exit
  return *monitor;
}

}  // namespace corral::proxy
