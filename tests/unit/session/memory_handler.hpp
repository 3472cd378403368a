// A trivial session::Handler that answers from memory: what the session layer alone costs (the
// "I/O only" benchmark row) and what its unit tests drive. Besides PING, GET, SET and QUIT it knows
// five test verbs: LATER ms text (replies after ms, so replies complete out of order), BIG n (an
// n-byte reply), AFTERDRAIN text (asks to drain earlier replies first), CLOCK (the time the
// cache's SystemClock gives, in 20 digits, read after the steady clock has moved on) and RELAY
// (after earlier replies, the connection echoes raw bytes: the session's relay mode; RELAY
// REFUSED refuses it after a keep-alive, and the bytes after it are requests again).
#pragma once

#include <utility>

#include <atomic>
#include <charconv>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cache/clock.hpp"
#include "resp/ascii.hpp"
#include "resp/encoder.hpp"
#include "session/handler.hpp"

namespace corral::test {

class MemoryHandler final : public session::Handler {
 public:
  explicit MemoryHandler(boost::asio::any_io_executor executor) : executor_(std::move(executor)) {}

  std::unique_ptr<session::ClientHandler> open_session() override {
    ++sessions_opened;
    return std::make_unique<Client>(*this, ++next_id_);
  }
  std::uint32_t protocol_error_metric() const override { return 0; }

  // Read by tests from another thread.
  std::atomic<int> sessions_opened{0};
  std::atomic<int> sessions_ended{0};
  std::atomic<int> drain_retries{0};

 private:
  class Client final : public session::ClientHandler {
   public:
    Client(MemoryHandler& owner, std::uint64_t id) : owner_(owner), id_(id) {}
    std::uint64_t client_id() const override { return id_; }
    session::Classified classify(const resp::Request&) override { return {}; }
    session::Action handle(const resp::Request& request, const session::Classified&,
                           std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                           std::size_t awaiting) override {
      if (resp::iequals(request.argv[0], "relay")) {
        if (awaiting > 0) return session::Action::drain_then_retry;
        relay_to_ = target;
        if (request.argv.size() > 1) refuse_relay_later();
        return session::Action::relay;
      }
      return owner_.answer(request.argv, tag, target, awaiting);
    }
    session::RelayVerdict relay_verdict() override { return verdict_; }
    // RELAY: every byte the client sends afterwards comes back to it as it is.
    bool relay_input(std::string_view bytes) override {
      const auto target = relay_to_.lock();
      if (target) target->on_reply(0, bytes);
      return target != nullptr;
    }
    bool tunneling() const override { return false; }
    session::Action handle_tunnel(const resp::Request&, std::string&) override {
      return session::Action::done;
    }
    void on_unsolicited(std::string_view) override {}
    void end_session() override { ++owner_.sessions_ended; }

   private:
    // RELAY REFUSED: 20 ms later a keep-alive, then the refusal, as an upstream sends them (tag
    // 0, an error line).
    void refuse_relay_later() {
      verdict_ = session::RelayVerdict::due;
      auto timer = std::make_shared<boost::asio::steady_timer>(owner_.executor_,
                                                               std::chrono::milliseconds(20));
      timer->async_wait([this, timer, target = relay_to_.lock()](const boost::system::error_code&) {
        target->on_reply(0, "\n");
        verdict_ = session::RelayVerdict::refused;
        relay_to_.reset();
        target->on_reply(0, "-ERR relay refused\r\n");
      });
    }

    MemoryHandler& owner_;
    std::uint64_t id_;
    // Weak: the session owns this handler, and a strong reference back would be a cycle that
    // outlives a server stopped before the session ends (Server::stop ends no session).
    std::weak_ptr<upstream::ReplyTarget> relay_to_;
    session::RelayVerdict verdict_ = session::RelayVerdict::accepted;
  };

  static std::size_t number(std::string_view text) {
    std::size_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
  }

  session::Action answer(std::span<const std::string_view> argv, std::uint64_t tag,
                         const std::shared_ptr<upstream::ReplyTarget>& target,
                         std::size_t awaiting) {
    using resp::iequals;
    reply_.clear();
    auto action = session::Action::done;
    const auto verb = argv[0];
    if (iequals(verb, "ping")) {
      resp::append_simple(reply_, "PONG");
    } else if (iequals(verb, "get") && argv.size() == 2) {
      const auto found = values_.find(std::string(argv[1]));
      found == values_.end() ? resp::append_null(reply_) : resp::append_bulk(reply_, found->second);
    } else if (iequals(verb, "set") && argv.size() == 3) {
      values_[std::string(argv[1])] = std::string(argv[2]);
      resp::append_simple(reply_, "OK");
    } else if (iequals(verb, "quit")) {
      resp::append_simple(reply_, "OK");
      action = session::Action::close_after_reply;
    } else if (iequals(verb, "clock")) {
      const auto entered = cache::SteadyClock::now();
      while (cache::SteadyClock::now() == entered) {
      }
      const auto ticks = cache::SystemClock::instance().now().time_since_epoch().count();
      const std::string digits = std::to_string(ticks);
      resp::append_bulk(reply_,
                        std::string(20 - std::min<std::size_t>(20, digits.size()), '0') + digits);
    } else if (iequals(verb, "big") && argv.size() == 2) {
      resp::append_bulk(reply_, std::string(number(argv[1]), 'x'));
    } else if (iequals(verb, "afterdrain") && argv.size() == 2) {
      if (awaiting > 0) {
        ++drain_retries;
        return session::Action::drain_then_retry;
      }
      resp::append_bulk(reply_, argv[1]);
    } else if (iequals(verb, "later") && argv.size() == 3) {
      auto timer = std::make_shared<boost::asio::steady_timer>(
          executor_, std::chrono::milliseconds(number(argv[1])));
      std::string text;
      resp::append_bulk(text, argv[2]);
      timer->async_wait([timer, target, tag, text](const boost::system::error_code&) {
        target->on_reply(tag, text);
      });
      return action;
    } else {
      resp::append_error(reply_, "ERR unknown command '" + std::string(verb) + "'");
    }
    target->on_reply(tag, reply_);
    return action;
  }

  boost::asio::any_io_executor executor_;
  std::uint64_t next_id_ = 0;
  std::unordered_map<std::string, std::string> values_;
  std::string reply_;
};

}  // namespace corral::test
