// The CONFIG SET follower of the slowlog: the settings are read from the request, applied on +OK.
#include "proxy/local/slowlog_config.hpp"

#include <charconv>
#include <cstdint>
#include <optional>

#include "proxy/ascii.hpp"
#include "slowlog/slow_log.hpp"

namespace corral::proxy {

namespace {
constexpr std::string_view kOk = "+OK\r\n";

std::optional<long long> integer(std::string_view text) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

class SlowlogConfigFollower final : public upstream::ReplyTarget {
 public:
  SlowlogConfigFollower(std::optional<long long> threshold_us, std::optional<long long> max_len,
                        slowlog::SlowLog& log, std::shared_ptr<upstream::ReplyTarget> client)
      : threshold_us_(threshold_us), max_len_(max_len), log_(log), client_(std::move(client)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (reply == kOk) {
      // Redis takes any slowlog-log-slower-than from -1 up; below 0 it records nothing.
      if (threshold_us_) log_.set_threshold_us(*threshold_us_);
      if (max_len_ && *max_len_ >= 0) log_.set_max_len(static_cast<std::size_t>(*max_len_));
    }
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);  // the upstream's fate is unknown: Corral keeps its settings
  }
  void on_error(std::uint64_t tag, upstream::ErrorKind kind, std::string_view error) override {
    client_->on_error(tag, kind, error);
  }
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override {
    client_->note_phases(tag, phases);
  }

 private:
  std::optional<long long> threshold_us_;
  std::optional<long long> max_len_;
  slowlog::SlowLog& log_;
  std::shared_ptr<upstream::ReplyTarget> client_;
};
}  // namespace

std::shared_ptr<upstream::ReplyTarget> follow_slowlog_config(
    std::span<const std::string_view> argv, slowlog::SlowLog& log,
    std::shared_ptr<upstream::ReplyTarget> target) {
  std::optional<long long> threshold_us;
  std::optional<long long> max_len;
  for (std::size_t i = 2; i + 1 < argv.size(); i += 2) {
    if (iequals(argv[i], "slowlog-log-slower-than")) {
      threshold_us = integer(argv[i + 1]);
    } else if (iequals(argv[i], "slowlog-max-len")) {
      max_len = integer(argv[i + 1]);
    }
  }
  if (!threshold_us && !max_len) return target;
  return std::make_shared<SlowlogConfigFollower>(threshold_us, max_len, log, std::move(target));
}

}  // namespace corral::proxy
