// The dispatcher against a recording stand-in of the upstream interface (upstream::Upstream):
// what it asks of the upstream for each kind of request, whether that is one server or several,
// without any connection, pool or cluster type in sight.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "recording_upstream.hpp"
#include "upstream/upstream.hpp"
#include "upstream/upstream_switch.hpp"

namespace corral::proxy::test {

namespace {

// What one send through the interface carried.
struct Forwarded {
  std::string name;
  std::string bytes;
  std::vector<std::size_t> keys;
  std::size_t affinity = 0;
  std::uint64_t tag = 0;
  std::shared_ptr<upstream::ReplyTarget> target;
};

// A session link that records the kind of each client command sent on it.
class SessionLink final : public upstream::Link {
 public:
  bool send(std::string_view command, std::shared_ptr<upstream::ReplyTarget> target,
            std::uint64_t tag, bool) override {
    // CLIENT ID, asked first for CLIENT UNBLOCK, is answered at once.
    if (command == wire({"CLIENT", "ID"})) {
      target->on_reply(tag, ":7\r\n");
      return true;
    }
    sent.push_back(std::string(command));
    waiting.emplace_back(std::move(target), tag);
    return true;
  }
  bool send_untracked(std::string_view command) override {
    sent.push_back(std::string(command));
    return true;
  }
  void set_unsolicited_target(std::shared_ptr<upstream::ReplyTarget>) override {}
  State state() const override { return State::ready; }
  std::size_t in_flight() const override { return 0; }
  void close() override { closed = true; }
  bool send_in_session(upstream::SessionCommand kind, std::string_view command,
                       std::shared_ptr<upstream::ReplyTarget> target, std::uint64_t tag,
                       bool exempt) override {
    kinds.push_back(kind);
    return send(command, std::move(target), tag, exempt);
  }

  std::vector<std::string> sent;
  std::vector<upstream::SessionCommand> kinds;
  // What each sent command waits on, to answer it.
  std::vector<std::pair<std::shared_ptr<upstream::ReplyTarget>, std::uint64_t>> waiting;
  bool closed = false;
};

// Partitions, when `partitioned`: a key's first letter ("a1" is in partition 'a').
class RecordingUpstream final : public upstream::Upstream {
 public:
  explicit RecordingUpstream(bool partitioned) : partitions(partitioned) {}

  bool send(const upstream::Routed& command, std::uint64_t tag,
            const std::shared_ptr<upstream::ReplyTarget>& target) override {
    sends.push_back(record(command, tag, target));
    return true;
  }
  bool partitioned() const override { return partitions; }
  int partition_of(const upstream::Routed& command) override {
    if (!partitions) return upstream::kAnyPartition;
    command.shape.find_keys(command.argv, keys_);
    int partition = upstream::kAnyPartition;
    for (auto index : keys_) {
      const int p = command.argv[index].front();
      if (partition != upstream::kAnyPartition && p != partition) return upstream::kSpansPartitions;
      partition = p;
    }
    return partition;
  }
  upstream::SessionLinkResult open_session_link(int partition, const upstream::Routed&) override {
    opened.push_back(partition);
    links.push_back(std::make_shared<SessionLink>());
    return {links.back()};
  }
  void note_cross_partition_refusal() override { ++cross_partition_refusals; }
  bool send_out_of_band(const upstream::Routed& command, std::uint64_t tag,
                        const std::shared_ptr<upstream::ReplyTarget>& target) override {
    out_of_band.push_back(record(command, tag, target));
    return true;
  }
  bool ask_server(std::string_view command, std::uint64_t,
                  const std::shared_ptr<upstream::ReplyTarget>& target) override {
    questions.push_back(std::string(command));
    question_targets.push_back(target);
    return true;
  }
  boost::asio::awaitable<upstream::CallResult> call_server(std::string) override {
    co_return upstream::CallResult::failure(upstream::ErrorKind::upstream_unavailable, "none");
  }
  std::uint64_t server_epoch() const override { return 0; }
  upstream::ServerSend send_to_server(std::string_view, std::string_view, int, std::size_t, int,
                                      std::uint64_t,
                                      const std::shared_ptr<upstream::ReplyTarget>&) override {
    return upstream::ServerSend::no_such_server;
  }
  void answer_info(std::string_view, std::string, bool, std::size_t, std::uint64_t,
                   const std::shared_ptr<upstream::ReplyTarget>&,
                   const std::shared_ptr<upstream::ReplyTarget>&) override {}
  bool report_topology(std::string&) override { return false; }
  std::shared_ptr<upstream::Link> open_own_link(int, int) override { return nullptr; }
  std::optional<std::string> server_of_key(std::string_view) override { return std::nullopt; }
  std::shared_ptr<upstream::Link> open_own_link_to(std::string_view, int, int) override {
    return nullptr;
  }
  std::shared_ptr<upstream::KeyedCaller> keyed_caller(
      const upstream::KeyedCallerOptions&) override {
    return nullptr;
  }
  void fetch(std::span<const std::string_view>, std::string_view, int,
             const std::shared_ptr<upstream::ReplyTarget>&) override {}

  const bool partitions;
  std::vector<Forwarded> sends;
  std::vector<Forwarded> out_of_band;
  std::vector<std::string> questions;
  std::vector<std::shared_ptr<upstream::ReplyTarget>> question_targets;
  std::vector<int> opened;
  std::vector<std::shared_ptr<SessionLink>> links;
  int cross_partition_refusals = 0;

 private:
  Forwarded record(const upstream::Routed& command, std::uint64_t tag,
                   const std::shared_ptr<upstream::ReplyTarget>& target) {
    Forwarded f{std::string(command.shape.name()),
                std::string(command.bytes),
                {},
                command.affinity,
                tag,
                target};
    command.shape.find_keys(command.argv, f.keys);
    return f;
  }
  std::vector<std::size_t> keys_;
};

config::Settings allowing_script_kill() {
  config::Settings settings;
  settings.client.allow_commands = {"SCRIPT KILL"};
  return settings;
}

struct Stand {
  explicit Stand(bool partitioned = false) : upstream(partitioned) {}
  config::Settings settings = allowing_script_kill();
  metrics::ProcessInfo info;
  RecordingUpstream upstream;
  Dispatcher dispatcher{settings, upstream, info};
};

}  // namespace

TEST_CASE("a routed command reaches the upstream with its shape, keys and client", "[upstream]") {
  Stand s;
  Client client(s.dispatcher);
  client.send({"MSET", "a1", "x", "b1", "y"});
  REQUIRE(s.upstream.sends.size() == 1);
  const auto& sent = s.upstream.sends[0];
  CHECK(sent.name == "mset");
  CHECK(sent.bytes == wire({"MSET", "a1", "x", "b1", "y"}));
  CHECK(sent.keys == std::vector<std::size_t>{1, 3});
  sent.target->on_reply(sent.tag, "+OK\r\n");
  CHECK(client.reply() == "+OK\r\n");
  CHECK(s.upstream.opened.empty());
}

TEST_CASE("SCRIPT KILL goes out of band, to wherever the upstream sends it", "[upstream]") {
  Stand s;
  Client client(s.dispatcher);
  client.send({"SCRIPT", "KILL"});
  CHECK(s.upstream.sends.empty());
  REQUIRE(s.upstream.out_of_band.size() == 1);
  CHECK(s.upstream.out_of_band[0].name == "script|kill");
}

TEST_CASE("a name the table lacks is asked of the upstream's servers", "[upstream]") {
  Stand s;
  Client client(s.dispatcher);
  CHECK(client.send({"NOSUCHCMD", "k"}) == Action::wait_then_retry);
  REQUIRE(s.upstream.questions.size() == 1);
  CHECK(s.upstream.questions[0] == wire({"COMMAND", "INFO", "NOSUCHCMD"}));
  s.upstream.question_targets[0]->on_reply(0, "*1\r\n*-1\r\n");  // Redis does not know it either
  CHECK(client.retry({"NOSUCHCMD", "k"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR unknown command 'NOSUCHCMD'"));
}

TEST_CASE("a blocking command opens a session link and says what it is", "[upstream]") {
  Stand s;
  Client client(s.dispatcher);
  client.send({"BLPOP", "a1", "0"});
  REQUIRE(s.upstream.opened == std::vector<int>{upstream::kAnyPartition});
  const auto& link = *s.upstream.links[0];
  CHECK(link.sent == std::vector<std::string>{wire({"BLPOP", "a1", "0"})});
  CHECK(link.kinds == std::vector<upstream::SessionCommand>{upstream::SessionCommand::blocking});
  CHECK(s.upstream.sends.empty());
}

TEST_CASE("on a partitioned upstream a transaction binds to its first key's partition",
          "[upstream]") {
  Stand s(true);
  Client client(s.dispatcher);
  client.send({"MULTI"});
  CHECK(client.reply() == "+OK\r\n");
  CHECK(s.upstream.opened.empty());  // held until a key says where
  client.send({"SET", "a1", "x"});
  REQUIRE(s.upstream.opened == std::vector<int>{'a'});
  const auto& link = *s.upstream.links[0];
  CHECK(link.sent == std::vector<std::string>{wire({"MULTI"}), wire({"SET", "a1", "x"})});
  client.send({"EXEC"});
  CHECK(link.kinds == std::vector<upstream::SessionCommand>{upstream::SessionCommand::other,
                                                            upstream::SessionCommand::exec});
  Client other(s.dispatcher);
  other.send({"MULTI"});
  other.send({"SET", "a1", "x"});
  other.send({"SET", "b1", "y"});
  CHECK(other.reply().starts_with("-CROSSSLOT"));
  CHECK(s.upstream.cross_partition_refusals == 1);
}

TEST_CASE("on a partitioned upstream WATCH of keys in two partitions is refused", "[upstream]") {
  Stand s(true);
  Client client(s.dispatcher);
  client.send({"WATCH", "a1", "b1"});
  CHECK(client.reply().starts_with("-CROSSSLOT"));
  CHECK(s.upstream.opened.empty());
  CHECK(s.upstream.cross_partition_refusals == 1);
  // Without partitions the same WATCH opens a link.
  Stand single;
  Client other(single.dispatcher);
  other.send({"WATCH", "a1", "b1"});
  CHECK(single.upstream.opened == std::vector<int>{upstream::kAnyPartition});
}

TEST_CASE("through an UpstreamSwitch a session stays on the upstream it began on, then moves",
          "[upstream]") {
  auto before = std::make_shared<RecordingUpstream>(false);
  auto after = std::make_shared<RecordingUpstream>(false);
  upstream::UpstreamSwitch upstream_switch(before);
  const config::Settings settings = allowing_script_kill();
  metrics::ProcessInfo info;
  Dispatcher dispatcher{settings, upstream_switch, info};
  Client in_transaction(dispatcher);
  in_transaction.send({"MULTI"});
  in_transaction.send({"SET", "a1", "x"});
  Client blocked(dispatcher);
  blocked.send({"BLPOP", "b1", "0"});
  REQUIRE(before->links.size() == 2);

  upstream_switch.switch_to(after);
  Client plain(dispatcher);
  plain.send({"GET", "a1"});
  CHECK(after->sends.size() == 1);
  CHECK(before->sends.empty());
  in_transaction.send({"EXEC"});
  auto& transaction = *before->links[0];
  CHECK(transaction.sent.back() == wire({"EXEC"}));
  const char* const answers[] = {"+OK\r\n", "+QUEUED\r\n", "*1\r\n+OK\r\n"};
  REQUIRE(transaction.waiting.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    transaction.waiting[i].first->on_reply(transaction.waiting[i].second, answers[i]);
  }
  CHECK(after->links.empty());
  // The transaction over, the client's next session opens on the new upstream.
  in_transaction.send({"BLPOP", "a1", "0"});
  REQUIRE(after->links.size() == 1);

  // The drain deadline: links of the previous upstream are closed, the new one's are not.
  CHECK(upstream_switch.retire_previous(upstream_switch.generation()) == 2);
  CHECK(before->links[1]->closed);
  CHECK_FALSE(after->links[0]->closed);
  CHECK(upstream_switch.draining() == 0);
}

}  // namespace corral::proxy::test
