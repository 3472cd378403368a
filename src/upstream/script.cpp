// EVALSHA with an EVAL fallback on NOSCRIPT; the digest comes from one SCRIPT LOAD.
#include "upstream/script.hpp"

#include <string>
#include <vector>

#include "resp/encoder.hpp"
#include "upstream/connection.hpp"

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

// Passes the reply on, except NOSCRIPT: then the same call goes again as EVAL, once.
class NoScriptRetry final : public ReplyTarget {
 public:
  NoScriptRetry(std::weak_ptr<Connection> connection, std::string eval,
                std::shared_ptr<ReplyTarget> target)
      : connection_(std::move(connection)), eval_(std::move(eval)), target_(std::move(target)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (reply.substr(0, 9) == "-NOSCRIPT") {
      const auto connection = connection_.lock();
      if (connection && connection->send(eval_, target_, tag)) return;
      target_->on_failure(tag, "ERR upstream unavailable");
      return;
    }
    target_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    target_->on_failure(tag, error);
  }

 private:
  std::weak_ptr<Connection> connection_;
  std::string eval_;
  std::shared_ptr<ReplyTarget> target_;
};

}  // namespace

std::string Script::digest() const {
  std::lock_guard lock(mutex_);
  return digest_;
}

void Script::learn(std::string_view digest) const {
  std::lock_guard lock(mutex_);
  digest_ = std::string(digest);
  loading_ = false;
}

std::string Script::command(bool by_digest, std::span<const std::string_view> keys,
                            std::span<const std::string_view> args) const {
  const std::string digest = by_digest ? this->digest() : std::string();
  const std::string key_count = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back(by_digest ? "EVALSHA" : "EVAL");
  argv.push_back(by_digest ? std::string_view(digest) : std::string_view(source_));
  argv.push_back(key_count);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  resp::append_command(out, argv);
  return out;
}

bool Script::run(Connection& connection, std::span<const std::string_view> keys,
                 std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
                 std::uint64_t tag) const {
  bool known = false;
  bool load = false;
  {
    std::lock_guard lock(mutex_);
    known = !digest_.empty();
    load = !known && !loading_;
    if (load) loading_ = true;
  }
  if (load) {
    std::string script_load;
    const std::string_view argv[] = {"SCRIPT", "LOAD", source_};
    resp::append_command(script_load, argv);
    if (!connection.send(script_load, std::make_shared<ScriptDigestTarget>(*this), 0)) {
      learn({});
    }
  }
  if (!known) return connection.send(command(false, keys, args), std::move(target), tag);
  auto retry = std::make_shared<NoScriptRetry>(connection.weak_from_this(),
                                               command(false, keys, args), std::move(target));
  return connection.send(command(true, keys, args), std::move(retry), tag);
}

}  // namespace corral::upstream
