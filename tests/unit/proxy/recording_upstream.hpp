// A recording stand-in for the upstream seam (upstream::Links), and a client that drives a
// Dispatcher through the session seam, for the dispatcher's unit tests.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include "config/settings.hpp"
#include "metrics/process_info.hpp"
#include "proxy/dispatcher.hpp"
#include "resp/encoder.hpp"
#include "session/handler.hpp"

#include "upstream/cluster/cluster_upstream.hpp"
#include "upstream/link.hpp"
#include "upstream/single/single_upstream.hpp"

namespace corral::proxy::test {

inline std::string wire(std::initializer_list<std::string_view> words) {
  std::vector<std::string_view> argv(words);
  std::string out;
  resp::append_command(out, argv);
  return out;
}

struct Sent {
  std::string bytes;
  std::uint64_t tag = 0;
  bool tracked = true;
  bool exempt = false;
  std::shared_ptr<upstream::ReplyTarget> target;
};

// Records what it is asked to send; replies only when a test says so, so a test controls what
// is in flight. The exception is the CLIENT ID the dispatcher sends first on a dedicated
// connection (for CLIENT UNBLOCK): answered at once with `redis_id`, counted in client_id_asks
// and not recorded, so tests see the client's own commands.
class RecordingLink final : public upstream::Link {
 public:
  explicit RecordingLink(int db) : database(db) {}

  bool send(std::string_view command, std::shared_ptr<upstream::ReplyTarget> target,
            std::uint64_t tag, bool exempt_from_timeout) override {
    if (state_ == State::closed || refuse) return false;
    if (command == wire({"CLIENT", "ID"})) {
      ++client_id_asks;
      if (hold_client_id) {
        held_client_id = std::move(target);
      } else {
        target->on_reply(tag, ":" + std::to_string(redis_id) + "\r\n");
      }
      return true;
    }
    sent.push_back({std::string(command), tag, true, exempt_from_timeout, target});
    pending.push_back(sent.back());
    return true;
  }
  bool send_untracked(std::string_view command) override {
    if (state_ == State::closed || refuse) return false;
    sent.push_back({std::string(command), 0, false, false, nullptr});
    return true;
  }
  void set_unsolicited_target(std::shared_ptr<upstream::ReplyTarget> target) override {
    unsolicited = std::move(target);
  }
  State state() const override { return state_; }
  bool reached_server() const override { return reached; }
  std::size_t in_flight() const override { return pending.size(); }
  void close() override {
    state_ = State::closed;
    ++closes;
  }
  bool start_raw_relay() override {
    if (state_ == State::closed || !pending.empty()) return false;
    raw_relay = true;
    relay = RelayState::awaiting_verdict;
    return true;
  }
  RelayState relay_state() const override { return relay; }

  // Redis answers the oldest command in flight.
  void answer(std::string_view reply) {
    REQUIRE_FALSE(pending.empty());
    const Sent oldest = pending.front();
    pending.pop_front();
    oldest.target->on_reply(oldest.tag, reply);
  }
  // The connection dies by itself (not closed by the dispatcher).
  void die() { state_ = State::closed; }
  // ... failing what it was sent, as a connection that never got to Redis does.
  void die_failing(std::string_view error) {
    die();
    while (!pending.empty()) {
      const Sent oldest = pending.front();
      pending.pop_front();
      oldest.target->on_failure(oldest.tag, error);
    }
  }
  // At the end of a test: targets left waiting for a reply that never comes (a command a test
  // did not answer) may hold this link in turn; drop them so that nothing outlives the test.
  void forget_targets() {
    pending.clear();
    for (auto& s : sent) s.target.reset();
    unsolicited.reset();
    held_client_id.reset();
  }
  // Still connecting (it queues what it is sent meanwhile).
  void start_connecting() { state_ = State::connecting; }

  std::vector<std::string> bytes() const {
    std::vector<std::string> out;
    for (const auto& s : sent) out.push_back(s.bytes);
    return out;
  }

  const int database;
  std::vector<Sent> sent;
  std::deque<Sent> pending;
  std::shared_ptr<upstream::ReplyTarget> unsolicited;
  bool refuse = false;
  bool reached = true;                 // reached_server(): it connected to Redis at some point
  bool raw_relay = false;              // start_raw_relay() was called
  RelayState relay = RelayState::off;  // a test plays Redis's verdict by setting it
  int closes = 0;
  std::int64_t redis_id = 1000;
  int client_id_asks = 0;
  // Set: the CLIENT ID's answer waits for answer_client_id(), as a reply still on the wire does.
  bool hold_client_id = false;
  std::shared_ptr<upstream::ReplyTarget> held_client_id;
  void answer_client_id() {
    REQUIRE(held_client_id);
    std::exchange(held_client_id, nullptr)->on_reply(0, ":" + std::to_string(redis_id) + "\r\n");
  }

 private:
  State state_ = State::ready;
};

class RecordingLinks final : public upstream::Links {
 public:
  ~RecordingLinks() override {
    for (auto& link : dedicated) link->forget_targets();
  }
  bool send_shared(int database, std::size_t affinity, std::string_view command,
                   std::shared_ptr<upstream::ReplyTarget> target, std::uint64_t tag,
                   int protocol) override {
    affinities.push_back(affinity);
    protocols.push_back(protocol);
    return shared_link(database).send(command, std::move(target), tag, false);
  }
  std::shared_ptr<upstream::Link> dedicated_link(int database, int protocol) override {
    dedicated_protocols.push_back(protocol);
    dedicated.push_back(std::make_shared<RecordingLink>(database));
    dedicated.back()->hold_client_id = hold_client_ids;
    dedicated.back()->refuse = refuse_dedicated;
    dedicated.back()->reached = !unreachable_dedicated;
    return dedicated.back();
  }

  RecordingLink& shared_link(int database) {
    auto& link = shared[database];
    if (!link) link = std::make_unique<RecordingLink>(database);
    return *link;
  }
  RecordingLink& shared_of(int database) {
    REQUIRE(shared.count(database) == 1);
    return *shared[database];
  }
  RecordingLink& last_dedicated() {
    REQUIRE_FALSE(dedicated.empty());
    return *dedicated.back();
  }

  std::map<int, std::unique_ptr<RecordingLink>> shared;
  std::vector<std::shared_ptr<RecordingLink>> dedicated;
  bool hold_client_ids = false;          // for the dedicated links handed out from now on
  bool refuse_dedicated = false;         // ... they refuse every send
  bool unreachable_dedicated = false;    // ... they never reach Redis (see die_failing)
  std::vector<std::size_t> affinities;   // of every shared send, in order
  std::vector<int> protocols;            // of every shared send, in order
  std::vector<int> dedicated_protocols;  // of every dedicated link handed out
};

// The client's reply slots: what reached each tag.
class Replies final : public upstream::ReplyTarget {
 public:
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    replies[tag] = std::string(reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    failures[tag] = std::string(error);
  }

  std::map<std::uint64_t, std::string> replies;
  std::map<std::uint64_t, std::string> failures;
};

// A dispatcher with no cache over the single-Redis upstream on recording links (or, given
// `cluster`, the cluster upstream on those). Settings are built in code.
struct Proxy {
  explicit Proxy(config::Settings with = {}, upstream::ClusterLinks* cluster = nullptr)
      : settings(std::move(with)),
        upstream(make_upstream(cluster)),
        dispatcher(settings, *upstream, info) {}

  std::unique_ptr<upstream::Upstream> make_upstream(upstream::ClusterLinks* cluster) {
    if (cluster != nullptr) {
      return std::make_unique<upstream::ClusterUpstream>(io.get_executor(), *cluster,
                                                         settings.upstream);
    }
    return std::make_unique<upstream::SingleUpstream>(io.get_executor(), links,
                                                      settings.upstream.database);
  }

  boost::asio::io_context io;
  config::Settings settings;
  metrics::ProcessInfo info;
  RecordingLinks links;
  std::unique_ptr<upstream::Upstream> upstream;
  Dispatcher dispatcher;
};

// One client connection, as the session layer would drive it: each request gets the next tag.
class Client {
 public:
  explicit Client(Proxy& proxy) : Client(proxy.dispatcher) {}
  explicit Client(Dispatcher& dispatcher)
      : handler(dispatcher.open_session()), slots(std::make_shared<Replies>()) {}

  session::Action send(std::initializer_list<std::string_view> words, std::size_t awaiting = 0) {
    const std::vector<std::string_view> argv(words);
    const resp::Request request{argv, {}};
    const auto classified = handler->classify(request);
    return handler->handle(request, classified, ++tag, slots, awaiting);
  }
  // The same request again under the same tag, as the session does after drain_then_retry.
  session::Action retry(std::initializer_list<std::string_view> words) {
    const std::vector<std::string_view> argv(words);
    const resp::Request request{argv, {}};
    return handler->handle(request, handler->classify(request), tag, slots, 0);
  }
  session::Action tunnel(std::initializer_list<std::string_view> words, std::string& reply) {
    const std::vector<std::string_view> argv(words);
    return handler->handle_tunnel(resp::Request{argv, {}}, reply);
  }

  // The reply in the slot of the last request ("" when none yet).
  std::string reply() const { return reply_of(tag); }
  std::string reply_of(std::uint64_t t) const {
    const auto it = slots->replies.find(t);
    return it == slots->replies.end() ? std::string() : it->second;
  }
  std::string failure() const {
    const auto it = slots->failures.find(tag);
    return it == slots->failures.end() ? std::string() : it->second;
  }

  std::unique_ptr<session::ClientHandler> handler;
  std::shared_ptr<Replies> slots;
  std::uint64_t tag = 0;
};

}  // namespace corral::proxy::test
