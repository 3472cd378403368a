// EVALSHA with an EVAL fallback on NOSCRIPT; the digest comes from one SCRIPT LOAD.
#include "upstream/script.hpp"

#include <string>
#include <vector>

#include "resp/encoder.hpp"
#include "upstream/connection.hpp"
#include "upstream/errors.hpp"

namespace corral::upstream {

// Learns the digest from SCRIPT LOAD's bulk reply ("$40\r\n<hex>\r\n").
class ScriptDigestTarget final : public ReplyTarget {
 public:
  explicit ScriptDigestTarget(const Script& script) : script_(script) {}
  void on_reply(std::uint64_t, std::string_view reply) override {
    constexpr std::string_view kHeader = "$40\r\n";
    if (reply.size() == kHeader.size() + 42 && reply.substr(0, kHeader.size()) == kHeader) {
      script_.learn(reply.substr(kHeader.size(), 40));
    } else {
      script_.learn({});
    }
  }
  void on_failure(std::uint64_t, std::string_view) override { script_.learn({}); }

 private:
  const Script& script_;
};

namespace {

// Holds an EVALSHA command and passes its reply on, except NOSCRIPT: then the same call goes
// again as EVAL through the same sender, once (built only then: NOSCRIPT is rare, the full source
// is long).
class NoScriptRetry final : public ReplyTarget {
 public:
  NoScriptRetry(CommandSender send, const Script& script, std::string evalsha,
                std::shared_ptr<ReplyTarget> target)
      : send_(std::move(send)),
        script_(script),
        evalsha_(std::move(evalsha)),
        target_(std::move(target)) {}

  const std::string& evalsha() const { return evalsha_; }

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (Script::is_noscript(reply)) {
      if (send_(script_.as_eval(evalsha_), target_, tag)) return;
      target_->on_failure(tag, upstream::kErrUnavailable);
      return;
    }
    target_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    target_->on_failure(tag, error);
  }

 private:
  CommandSender send_;
  const Script& script_;
  std::string evalsha_;
  std::shared_ptr<ReplyTarget> target_;
};

}  // namespace

void Script::learn(std::string_view digest) const {
  std::lock_guard lock(mutex_);
  digest_ = std::string(digest);
  loading_ = false;
}

std::string Script::command(std::string_view digest, std::span<const std::string_view> keys,
                            std::span<const std::string_view> args) const {
  const std::string key_count = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back(digest.empty() ? "EVAL" : "EVALSHA");
  argv.push_back(digest.empty() ? std::string_view(source_) : digest);
  argv.push_back(key_count);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  resp::append_command(out, argv);
  return out;
}

std::string Script::prepare(Connection& connection, std::span<const std::string_view> keys,
                            std::span<const std::string_view> args) const {
  return prepare(
      [&connection](std::string_view command, std::shared_ptr<ReplyTarget> target,
                    std::uint64_t tag) { return connection.send(command, std::move(target), tag); },
      keys, args);
}

std::string Script::prepare(const CommandSender& send, std::span<const std::string_view> keys,
                            std::span<const std::string_view> args) const {
  std::string digest;
  bool load = false;
  {
    std::lock_guard lock(mutex_);
    digest = digest_;
    load = digest.empty() && !loading_;
    if (load) loading_ = true;
  }
  if (load) {
    std::string script_load;
    const std::string_view argv[] = {"SCRIPT", "LOAD", source_};
    resp::append_command(script_load, argv);
    if (!send(script_load, std::make_shared<ScriptDigestTarget>(*this), 0)) learn({});
  }
  return command(digest, keys, args);
}

bool Script::is_evalsha(std::string_view command) {
  // "*<n>\r\n" then the command name.
  const auto header_end = command.find("\r\n");
  return header_end != std::string_view::npos &&
         command.substr(header_end + 2).starts_with("$7\r\nEVALSHA\r\n");
}

bool Script::is_noscript(std::string_view reply) { return reply.starts_with("-NOSCRIPT"); }

bool Script::run(Connection& connection, std::span<const std::string_view> keys,
                 std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
                 std::uint64_t tag) const {
  // Weak: the retry lives in the connection's queue.
  return run(
      [weak = connection.weak_from_this()](std::string_view command,
                                           std::shared_ptr<ReplyTarget> to, std::uint64_t t) {
        const auto alive = weak.lock();
        return alive && alive->send(command, std::move(to), t);
      },
      keys, args, std::move(target), tag);
}

bool Script::run(CommandSender send, std::span<const std::string_view> keys,
                 std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
                 std::uint64_t tag) const {
  auto command = prepare(send, keys, args);
  if (!is_evalsha(command)) return send(command, std::move(target), tag);
  auto retry = std::make_shared<NoScriptRetry>(send, *this, std::move(command), std::move(target));
  return send(retry->evalsha(), retry, tag);
}

std::string Script::as_eval(std::string_view evalsha) const {
  // "*<n>\r\n" "$7\r\nEVALSHA\r\n" "$40\r\n<digest>\r\n" <the key count, keys, arguments>
  constexpr std::string_view kName = "$7\r\nEVALSHA\r\n";
  constexpr std::size_t kDigest = 5 + 40 + 2;
  const auto count_end = evalsha.find("\r\n") + 2;
  std::string out(evalsha.substr(0, count_end));
  out += "$4\r\nEVAL\r\n";
  resp::append_bulk(out, source_);
  out += evalsha.substr(count_end + kName.size() + kDigest);
  return out;
}

}  // namespace corral::upstream
