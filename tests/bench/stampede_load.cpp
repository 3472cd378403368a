// Stampede load generator for scripts/bench-stampede.sh: N connections loop GET on one hot key
// (one request in flight each, random think time, spread round-robin over one or more ports),
// record every request's send time and latency, and report latency overall, inside the hot key's
// expiry windows and outside them (plain hits).
#include <utility>

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "expiry_log.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "resp_link.hpp"

namespace corral::bench {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using asio::redirect_error;
using asio::use_awaitable;
using Clock = std::chrono::steady_clock;
using Millis = std::chrono::duration<double, std::milli>;
using Seconds = std::chrono::duration<double>;

constexpr auto kWatchInterval = std::chrono::milliseconds(10);
// After the run's end, requests still unanswered this much later fail the run.
constexpr auto kDrainTimeout = std::chrono::seconds(10);

struct Options {
  std::string host = "127.0.0.1";
  std::vector<int> ports;  // connection i goes to ports[i % size]; the watcher's is ports[0]
  int connections = 1000;
  double duration_s = 12;
  std::string key = "hot:key";
  double think_ms = 5;
  bool cache_aside = false;
  double compute_ms = 200;
  std::int64_t ttl_ms = 2000;
  int value_size = 32;
  double window_before_ms = 50;
  double window_after_ms = -1;  // -1: compute_ms + 100
  bool watch = true;
  std::uint64_t seed = 1;
  std::string csv;
  std::string expiries_csv;
};

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

struct Flag {
  std::string_view name;
  std::string_view help;  // empty value name: a switch without a value
  std::string_view value_name;
  bool (*apply)(Options&, std::string_view);
};

// "P" or "P1,P2,...", appended to `ports` (the flag may also be repeated).
bool parse_ports(std::string_view text, std::vector<int>& ports) {
  for (;;) {
    const auto comma = text.find(',');
    int port = 0;
    if (!parse_number(text.substr(0, comma), port) || port <= 0 || port > 65535) return false;
    ports.push_back(port);
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

// The command line, as data.
constexpr Flag kFlags[] = {
    {"--host", "server address", "ADDR",
     [](Options& o, std::string_view v) { return o.host = v, true; }},
    {"--port", "server port (required); P1,P2,... or repeated: connections round-robin", "PORT",
     [](Options& o, std::string_view v) { return parse_ports(v, o.ports); }},
    {"--connections", "concurrent connections (1000)", "N",
     [](Options& o, std::string_view v) { return parse_number(v, o.connections); }},
    {"--duration", "seconds of load (12)", "S",
     [](Options& o, std::string_view v) { return parse_number(v, o.duration_s); }},
    {"--key", "the hot key (hot:key)", "KEY",
     [](Options& o, std::string_view v) { return o.key = v, !v.empty(); }},
    {"--think-ms", "think time before each request, uniform in [0, MS] (5)", "MS",
     [](Options& o, std::string_view v) { return parse_number(v, o.think_ms); }},
    {"--cache-aside", "clients do cache-aside: GET; on nil compute, SET PX ttl", "",
     [](Options& o, std::string_view) { return o.cache_aside = true, true; }},
    {"--compute-ms", "origin time: a cache-aside compute; through Corral, the origin's (200)", "MS",
     [](Options& o, std::string_view v) { return parse_number(v, o.compute_ms); }},
    {"--ttl-ms", "TTL of a cache-aside SET (2000)", "MS",
     [](Options& o, std::string_view v) { return parse_number(v, o.ttl_ms); }},
    {"--value-size", "bytes of the value cache-aside SETs (32)", "N",
     [](Options& o, std::string_view v) { return parse_number(v, o.value_size); }},
    {"--window-before-ms", "expiry window starts this long before an expiry (50)", "MS",
     [](Options& o, std::string_view v) { return parse_number(v, o.window_before_ms); }},
    {"--window-after-ms", "expiry window ends this long after it (compute-ms + 100)", "MS",
     [](Options& o, std::string_view v) { return parse_number(v, o.window_after_ms); }},
    {"--no-watch", "do not poll the key's expiry (no expiry windows)", "",
     [](Options& o, std::string_view) { return o.watch = false, true; }},
    {"--seed", "random seed (1)", "N",
     [](Options& o, std::string_view v) { return parse_number(v, o.seed); }},
    {"--csv", "write t_seconds,latency_ms of every request", "FILE",
     [](Options& o, std::string_view v) { return o.csv = v, true; }},
    {"--expiries-csv", "write the expiry instants (expiry_seconds)", "FILE",
     [](Options& o, std::string_view v) { return o.expiries_csv = v, true; }},
};

void usage(std::FILE* out) {
  std::fprintf(out, "usage: stampede_load --port PORT [options]\n");
  for (const auto& flag : kFlags) {
    std::string left(flag.name);
    if (!flag.value_name.empty()) left.append(" ").append(flag.value_name);
    std::fprintf(out, "  %-24s %.*s\n", left.c_str(), static_cast<int>(flag.help.size()),
                 flag.help.data());
  }
}

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      std::exit(0);
    }
    const auto* flag = std::find_if(std::begin(kFlags), std::end(kFlags),
                                    [&](const Flag& f) { return f.name == arg; });
    if (flag == std::end(kFlags)) {
      std::fprintf(stderr, "stampede_load: unknown option %s\n", argv[i]);
      return std::nullopt;
    }
    std::string_view value;
    if (!flag->value_name.empty()) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "stampede_load: %s needs a value\n", argv[i]);
        return std::nullopt;
      }
      value = argv[++i];
    }
    if (!flag->apply(options, value)) {
      std::fprintf(stderr, "stampede_load: bad value for %s: %s\n", argv[i - 1], argv[i]);
      return std::nullopt;
    }
  }
  if (options.ports.empty() || options.connections <= 0 || options.duration_s <= 0 ||
      options.think_ms < 0 || options.compute_ms < 0 || options.ttl_ms <= 0) {
    std::fprintf(stderr, "stampede_load: need --port, and positive counts and durations\n");
    return std::nullopt;
  }
  if (options.window_after_ms < 0) options.window_after_ms = options.compute_ms + 100;
  return options;
}

// 1000+ sockets need more descriptors than the usual soft limit of 1024.
bool raise_fd_limit(rlim_t needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= needed) return true;
  if (limit.rlim_max < needed) limit.rlim_max = needed;  // allowed for root only
  limit.rlim_cur = needed;
  return setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

std::string command(std::initializer_list<std::string_view> argv) {
  std::string out;
  resp::append_command(out, std::span<const std::string_view>(argv.begin(), argv.size()));
  return out;
}

// Built outside coroutines: g++ 12 rejects an initializer_list temporary in a coroutine body
// ("array used as initializer").
std::string stats_request() { return command({"CORRAL.STATS"}); }
std::string expiry_request(const Options& options) {
  return options.cache_aside ? command({"PEXPIRETIME", options.key})
                             : command({"CORRAL.INFO", options.key});
}

struct Sample {
  float t_s;
  float latency_ms;
};

struct Run {
  explicit Run(Options o)
      : options(std::move(o)),
        rng(options.seed),
        get_request(command({"GET", options.key})),
        set_request(command({"SET", options.key, std::string(options.value_size, 'v'), "PX",
                             std::to_string(options.ttl_ms)})) {}

  Options options;
  std::mt19937_64 rng;
  std::string get_request;
  std::string set_request;
  std::vector<std::unique_ptr<RespLink>> links;  // links[0] is the watcher's
  Clock::time_point start;
  double start_monotonic_s = 0;  // `start` on CLOCK_MONOTONIC, the clock of Python's monotonic()
  Clock::time_point end;
  std::int64_t start_unix_ms = 0;
  std::vector<Sample> samples;
  ExpiryLog expiry_log;
  std::uint64_t computes = 0;
  std::uint64_t nil_replies = 0;
  std::uint64_t error_replies = 0;
  std::uint64_t failed_clients = 0;
  std::string watch_problem;
  int running = 0;  // client loops and the watcher
  int clients_running = 0;
  std::unique_ptr<asio::steady_timer> watchdog;
  bool ok = true;

  double since_start(Clock::time_point t) const { return Seconds(t - start).count(); }
  Clock::duration think() {
    if (options.think_ms <= 0) return Clock::duration::zero();
    std::uniform_real_distribution<double> uniform(0, options.think_ms);
    return std::chrono::duration_cast<Clock::duration>(Millis(uniform(rng)));
  }
};

// CLOCK_MONOTONIC, named: an origin's request times (time.monotonic()) are matched against it.
double monotonic_seconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

// One request: GET, and in cache-aside mode on nil: compute, then SET. Returns the GET's kind.
awaitable<ReplyKind> one_request(Run& run, RespLink& link, asio::steady_timer& timer,
                                 boost::system::error_code& ec) {
  const auto kind = co_await link.call(run.get_request, ec);
  if (kind != ReplyKind::null || !run.options.cache_aside) co_return kind;
  ++run.computes;
  timer.expires_after(std::chrono::duration_cast<Clock::duration>(Millis(run.options.compute_ms)));
  co_await timer.async_wait(redirect_error(use_awaitable, ec));
  const auto set_kind = co_await link.call(run.set_request, ec);
  co_return set_kind == ReplyKind::value ? kind : set_kind;
}

awaitable<void> client_loop(Run& run, RespLink& link) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  for (;;) {
    if (const auto think = run.think(); think > Clock::duration::zero()) {
      timer.expires_after(think);
      co_await timer.async_wait(redirect_error(use_awaitable, ec));
    }
    const auto sent = Clock::now();
    if (sent >= run.end) break;
    const auto kind = co_await one_request(run, link, timer, ec);
    if (kind == ReplyKind::failed) {
      if (run.failed_clients++ == 0) {
        std::fprintf(stderr, "stampede_load: a connection failed: %s\n", ec.message().c_str());
      }
      break;
    }
    if (kind == ReplyKind::error) {
      ++run.error_replies;
      continue;
    }
    if (kind == ReplyKind::null) ++run.nil_replies;
    run.samples.push_back({static_cast<float>(run.since_start(sent)),
                           static_cast<float>(Millis(Clock::now() - sent).count())});
  }
  --run.clients_running;
  if (--run.running == 0) run.watchdog->cancel();
}

// Reads one field of a flat field/value array (CORRAL.INFO's shape).
const resp::Reply* field(const resp::Reply& reply, std::string_view name) {
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    if (reply.elements[i].text == name) return &reply.elements[i + 1];
  }
  return nullptr;
}

// The policy's origin fetch counter from CORRAL.STATS (one field/value array per policy), or -1.
awaitable<std::int64_t> origin_requests(RespLink& link, std::string_view policy) {
  boost::system::error_code ec;
  const auto reply = co_await link.query(stats_request(), ec);
  if (!reply) co_return -1;
  for (const auto& stats : reply->elements) {
    const auto* name = field(stats, "policy");
    const auto* count = field(stats, "origin_requests");
    if (name != nullptr && count != nullptr && name->text == policy) co_return count->integer;
  }
  co_return -1;
}

// One poll of the key's expiry; false (with run.watch_problem set) when watching cannot work.
awaitable<bool> poll_expiry(Run& run, RespLink& link, const std::string& request) {
  boost::system::error_code ec;
  const auto reply = co_await link.query(request, ec);
  const double now_s = run.since_start(Clock::now());
  if (!reply || reply->type == resp::Reply::Type::error) {
    run.watch_problem = ec ? ec.message() : reply ? reply->text : "undecodable reply";
    co_return false;
  }
  if (run.options.cache_aside) {  // PEXPIRETIME: unix ms, -2 missing, -1 no TTL
    if (reply->integer == -2) run.expiry_log.redis_missing();
    if (reply->integer > 0) {
      run.expiry_log.redis_expiry((reply->integer - run.start_unix_ms) / 1000.0, now_s);
    }
    co_return true;
  }
  const auto* state = field(*reply, "state");
  const auto* age = field(*reply, "age_ms");
  const auto* ttl = field(*reply, "ttl_ms");
  if (state == nullptr) {
    run.watch_problem = "CORRAL.INFO has no state field";
    co_return false;
  }
  const auto* policy = field(*reply, "policy");
  if (state->text == "fresh" && age != nullptr && ttl != nullptr && policy != nullptr) {
    const auto fetches = co_await origin_requests(link, policy->text);
    run.expiry_log.corral_fresh(now_s - age->integer / 1000.0, now_s + ttl->integer / 1000.0,
                                std::max(run.options.compute_ms / 1000, 0.02), fetches, now_s);
  }
  co_return true;
}

// Polls the hot key's expiry until the last client is done, then once more: PEXPIRETIME on
// Redis; CORRAL.INFO (and CORRAL.STATS for the fetch counter) through Corral.
awaitable<void> watch_loop(Run& run, RespLink& link) {
  const auto request = expiry_request(run.options);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  for (bool last = false; !last;) {
    last = run.clients_running == 0;
    if (!co_await poll_expiry(run, link, request)) break;
    timer.expires_after(kWatchInterval);
    co_await timer.async_wait(redirect_error(use_awaitable, ec));
  }
  if (--run.running == 0) run.watchdog->cancel();
}

awaitable<bool> connect_all(Run& run, const asio::ip::address& address) {
  const auto executor = co_await asio::this_coro::executor;
  const auto& ports = run.options.ports;
  // One at a time: a burst of 1000 connects would overflow the server's listen backlog.
  for (int i = 0; i <= run.options.connections; ++i) {
    const int port = ports[static_cast<std::size_t>(i) % ports.size()];
    auto link = std::make_unique<RespLink>(executor);
    if (const auto ec = co_await link->connect({address, static_cast<unsigned short>(port)})) {
      std::fprintf(stderr, "stampede_load: connect %d to %s:%d: %s\n", i, run.options.host.c_str(),
                   port, ec.message().c_str());
      co_return false;
    }
    run.links.push_back(std::move(link));
  }
  co_return true;
}

// The value is in place before the clock starts: cache-aside SETs it; through Corral one GET
// fills the cache (one origin fetch, which the script subtracts).
awaitable<bool> warm_up(Run& run) {
  boost::system::error_code ec;
  const auto& request = run.options.cache_aside ? run.set_request : run.get_request;
  const auto kind = co_await run.links[0]->call(request, ec);
  if (kind == ReplyKind::failed || kind == ReplyKind::error) {
    std::fprintf(stderr, "stampede_load: warm-up failed: %s\n",
                 ec ? ec.message().c_str() : "error reply");
    co_return false;
  }
  co_return true;
}

awaitable<void> run_all(Run& run, asio::ip::address address) {
  const auto executor = co_await asio::this_coro::executor;
  if (!co_await connect_all(run, address) || !co_await warm_up(run)) {
    run.ok = false;
    for (auto& link : run.links) link->close();
    co_return;
  }
  run.start = Clock::now();
  run.start_monotonic_s = monotonic_seconds();
  run.start_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  run.end =
      run.start + std::chrono::duration_cast<Clock::duration>(Seconds(run.options.duration_s));
  run.watchdog = std::make_unique<asio::steady_timer>(
      executor, run.end + kDrainTimeout +
                    std::chrono::duration_cast<Clock::duration>(Millis(run.options.compute_ms)));
  run.clients_running = run.options.connections;
  run.running = run.options.connections + (run.options.watch ? 1 : 0);
  if (run.options.watch) asio::co_spawn(executor, watch_loop(run, *run.links[0]), asio::detached);
  for (int i = 1; i <= run.options.connections; ++i) {
    asio::co_spawn(executor, client_loop(run, *run.links[i]), asio::detached);
  }
  boost::system::error_code ec;
  co_await run.watchdog->async_wait(redirect_error(use_awaitable, ec));
  if (!ec) {  // not cancelled by the last loop: requests are hanging
    std::fprintf(stderr, "stampede_load: %d connection(s) still waiting for a reply; closing\n",
                 run.running);
    run.ok = false;
    for (auto& link : run.links) link->close();
  }
}

struct Stats {
  std::size_t count = 0;
  double p50 = 0, p99 = 0, max = 0;
};

// Nearest-rank percentiles.
Stats stats_of(std::vector<float> latencies) {
  Stats stats;
  stats.count = latencies.size();
  if (latencies.empty()) return stats;
  std::sort(latencies.begin(), latencies.end());
  const auto rank = [&](double p) {
    const auto index = static_cast<std::size_t>(std::ceil(p * latencies.size()));
    return latencies[std::clamp<std::size_t>(index, 1, latencies.size()) - 1];
  };
  stats.p50 = rank(0.50);
  stats.p99 = rank(0.99);
  stats.max = latencies.back();
  return stats;
}

void print_stats(const char* prefix, const Stats& stats, bool available) {
  std::printf("%s_requests=%zu\n", prefix, stats.count);
  if (!available || stats.count == 0) {
    std::printf("%s_p50_ms=n/a\n%s_p99_ms=n/a\n%s_max_ms=n/a\n", prefix, prefix, prefix);
    return;
  }
  std::printf("%s_p50_ms=%.3f\n%s_p99_ms=%.3f\n%s_max_ms=%.3f\n", prefix, stats.p50, prefix,
              stats.p99, prefix, stats.max);
}

bool write_files(const Run& run, const std::vector<double>& expiries) {
  if (!run.options.csv.empty()) {
    std::FILE* out = std::fopen(run.options.csv.c_str(), "w");
    if (out == nullptr) return false;
    std::fprintf(out, "t_seconds,latency_ms\n");
    for (const auto& s : run.samples) std::fprintf(out, "%.4f,%.3f\n", s.t_s, s.latency_ms);
    if (std::fclose(out) != 0) return false;
  }
  if (!run.options.expiries_csv.empty()) {
    std::FILE* out = std::fopen(run.options.expiries_csv.c_str(), "w");
    if (out == nullptr) return false;
    std::fprintf(out, "expiry_seconds\n");
    for (const double e : expiries) std::fprintf(out, "%.4f\n", e);
    if (std::fclose(out) != 0) return false;
  }
  return true;
}

// key=value lines on stdout, for the script; latencies in ms.
int report(Run& run) {
  std::sort(run.samples.begin(), run.samples.end(),
            [](const Sample& a, const Sample& b) { return a.t_s < b.t_s; });
  std::vector<double> expiries;
  for (const double e : run.expiry_log.finish()) {
    if (e >= 0 && e < run.options.duration_s) expiries.push_back(e);
  }
  const bool windows = run.options.watch && run.watch_problem.empty();
  const double before = run.options.window_before_ms / 1000;
  const double after = run.options.window_after_ms / 1000;
  std::vector<float> all, in_window, outside;
  for (const auto& s : run.samples) {
    all.push_back(s.latency_ms);
    const auto next = std::lower_bound(expiries.begin(), expiries.end(), s.t_s - after);
    const bool inside = next != expiries.end() && *next <= s.t_s + before;
    (inside ? in_window : outside).push_back(s.latency_ms);
  }
  std::printf("mode=%s\n", run.options.cache_aside ? "cache-aside" : "get");
  std::printf("connections=%d\nduration_s=%g\nthink_ms=%g\n", run.options.connections,
              run.options.duration_s, run.options.think_ms);
  std::printf("errors=%llu\nfailed_connections=%llu\nnil_replies=%llu\ncomputes=%llu\n",
              static_cast<unsigned long long>(run.error_replies),
              static_cast<unsigned long long>(run.failed_clients),
              static_cast<unsigned long long>(run.nil_replies),
              static_cast<unsigned long long>(run.computes));
  std::printf("rps=%.0f\nports=%zu\n", all.size() / run.options.duration_s,
              run.options.ports.size());
  // For pairing fetches counted at an origin server with the generations seen here.
  std::printf("start_monotonic_s=%.6f\ngenerations_seen_s=", run.start_monotonic_s);
  for (const double seen : run.expiry_log.generations_seen()) std::printf("%.4f ", seen);
  std::printf("\n");
  if (windows) {
    std::printf("expiries=%zu\nexpiry_times_s=", expiries.size());
    for (const double e : expiries) std::printf("%.3f ", e);
    std::printf("\nwindow_ms=-%g..+%g\n", run.options.window_before_ms,
                run.options.window_after_ms);
    // Refreshes: expiries with the fetches that served them. Cache-aside computes only after a
    // lapse inside the run; through Corral, see ExpiryLog::corral_fresh.
    const auto refreshes = run.options.cache_aside
                               ? std::optional(std::pair{static_cast<std::int64_t>(expiries.size()),
                                                         static_cast<std::int64_t>(run.computes)})
                               : run.expiry_log.refreshes();
    if (refreshes) {
      std::printf("refreshes=%lld\nrefresh_fetches=%lld\n",
                  static_cast<long long>(refreshes->first),
                  static_cast<long long>(refreshes->second));
    } else {
      std::printf("refreshes=n/a\nrefresh_fetches=n/a\n");
    }
  } else {
    std::printf("expiries=n/a\nwatch_problem=%s\n",
                run.options.watch ? run.watch_problem.c_str() : "--no-watch");
  }
  print_stats("all", stats_of(std::move(all)), true);
  print_stats("expiry", stats_of(std::move(in_window)), windows);
  print_stats("hit", stats_of(std::move(outside)), windows);
  if (!write_files(run, expiries)) {
    std::fprintf(stderr, "stampede_load: writing %s: %s\n", run.options.csv.c_str(),
                 std::strerror(errno));
    return 1;
  }
  return run.ok && run.failed_clients == 0 ? 0 : 1;
}

}  // namespace
}  // namespace corral::bench

int main(int argc, char** argv) {
  using namespace corral::bench;
  auto options = parse_options(argc, argv);
  if (!options) {
    usage(stderr);
    return 2;
  }
  if (!raise_fd_limit(static_cast<rlim_t>(options->connections) + 64)) {
    std::fprintf(stderr, "stampede_load: cannot raise the fd limit to %d: %s\n",
                 options->connections + 64, std::strerror(errno));
    return 2;
  }
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(options->host, ec);
  if (ec) {
    std::fprintf(stderr, "stampede_load: bad --host %s\n", options->host.c_str());
    return 2;
  }
  // Before `run`, whose sockets and timer must go before their io_context does.
  boost::asio::io_context io(1);
  Run run(std::move(*options));
  run.samples.reserve(1 << 20);
  boost::asio::co_spawn(io, run_all(run, address), boost::asio::detached);
  io.run();
  if (run.start == Clock::time_point{}) return 1;  // never started: connect or warm-up failed
  return report(run);
}
