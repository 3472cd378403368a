// RoutedUpstream over recording stand-ins of two upstreams: which one each command reaches, how
// partitions are numbered per upstream, servers named with their upstream, databases, and the
// mirror's share of reads and bounded queue. Also the route table's longest-prefix matching.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "resp/encoder.hpp"
#include "upstream/routes/route_link.hpp"
#include "upstream/routes/route_table.hpp"
#include "upstream/routes/routed_upstream.hpp"

namespace corral::upstream {
namespace {

// Every key is its own shape's only key, at argv[1..] (MGET-like); read-only when asked.
class KeysShape final : public CommandShape {
 public:
  KeysShape(std::string name, bool read_only) : name_(std::move(name)), read_only_(read_only) {}
  std::string_view name() const override { return name_; }
  bool read_only() const override { return read_only_; }
  std::size_t key_step() const override { return 1; }
  void find_keys(std::span<const std::string_view> argv,
                 std::vector<std::size_t>& out) const override {
    out.clear();
    for (std::size_t i = 1; i < argv.size(); ++i) out.push_back(i);
  }

 private:
  std::string name_;
  bool read_only_;
};

// An upstream that records what reaches it; partitioned ones put key "x<N>..." in slot N.
class Recorder final : public Upstream {
 public:
  Recorder(bool partitioned, int database) : partitioned_(partitioned), database_(database) {}

  bool send(const Routed& command, std::uint64_t,
            const std::shared_ptr<ReplyTarget>& target) override {
    if (refuse_sends) return false;
    sent.push_back(std::string(command.argv[0]) + "@" + std::to_string(command.database));
    waiting.push_back(target);
    return true;
  }
  bool partitioned() const override { return partitioned_; }
  int partition_of(const Routed& command) override {
    if (!partitioned_ || command.argv.size() < 2) return kAnyPartition;
    int slot = -1;
    for (std::size_t i = 1; i < command.argv.size(); ++i) {
      const int s = command.argv[i].back() - '0';
      if (slot >= 0 && s != slot) return kSpansPartitions;
      slot = s;
    }
    return slot;
  }
  SessionLinkResult open_session_link(int partition, const Routed&) override {
    opened.push_back(partition);
    return {};
  }
  void note_cross_partition_refusal() override { ++refusals; }
  bool send_out_of_band(const Routed&, std::uint64_t,
                        const std::shared_ptr<ReplyTarget>&) override {
    return false;
  }
  bool ask_server(std::string_view, std::uint64_t, const std::shared_ptr<ReplyTarget>&) override {
    return false;
  }
  boost::asio::awaitable<CallResult> call_server(std::string) override {
    co_return CallResult::failure(ErrorKind::upstream_unavailable, "none");
  }
  std::uint64_t server_epoch() const override { return 0; }
  ServerSend send_to_server(std::string_view server, std::string_view, int database, std::size_t,
                            int, std::uint64_t, const std::shared_ptr<ReplyTarget>&) override {
    servers.push_back(std::string(server) + "@" + std::to_string(database));
    return ServerSend::sent;
  }
  void answer_info(std::string_view, std::string, bool, std::size_t, std::uint64_t,
                   const std::shared_ptr<ReplyTarget>&,
                   const std::shared_ptr<ReplyTarget>&) override {}
  bool report_topology(std::string&) override { return false; }
  std::shared_ptr<Link> open_own_link(int, int) override { return nullptr; }
  std::optional<std::string> server_of_key(std::string_view) override {
    return partitioned_ ? "h:1" : "";
  }
  std::shared_ptr<Link> open_own_link_to(std::string_view server, int, int) override {
    servers.push_back(std::string(server));
    return nullptr;
  }
  int database() const override { return database_; }
  std::shared_ptr<KeyedCaller> keyed_caller(const KeyedCallerOptions&) override { return nullptr; }
  void fetch(std::span<const std::string_view> argv, std::string_view, int database,
             const std::shared_ptr<ReplyTarget>& target) override {
    std::string words;
    for (auto word : argv) words += std::string(word) + " ";
    fetched.push_back(words + "@" + std::to_string(database));
    waiting.push_back(target);
  }

  bool refuse_sends = false;
  std::vector<std::string> sent, servers, fetched;
  std::vector<int> opened;
  std::vector<std::shared_ptr<ReplyTarget>> waiting;
  int refusals = 0;

 private:
  bool partitioned_;
  int database_;
};

class Collect final : public ReplyTarget {
 public:
  void on_reply(std::uint64_t, std::string_view reply) override { replies.emplace_back(reply); }
  void on_failure(std::uint64_t, std::string_view error) override {
    replies.push_back("failure: " + std::string(error));
  }
  std::vector<std::string> replies;
};

const KeysShape kWrite{"set", false};
const KeysShape kRead{"get", true};

struct Stand {
  // The default upstream is one Redis in database 0; "named/" is a cluster in database 5 that
  // gets "n:" keys, and copies of "m:" keys (whose route is the default) go to it.
  explicit Stand(std::size_t max_queue = 100, int reads_percent = 25) {
    auto table = std::make_shared<const RouteTable>(
        std::vector<KeyRoute>{{"n:", 1}, {"m:", kDefaultUpstream, 1, reads_percent}});
    mirror_counters = std::make_shared<MirrorCounters>();
    RoutedUpstream::Parts parts;
    parts.routes = table;
    parts.upstreams = {single, named};
    parts.qualifiers = {"", "named/"};
    for (const auto& route : table->routes()) {
      parts.mirrors.push_back(
          route.mirror == KeyRoute::kNoMirror
              ? nullptr
              : std::make_shared<RouteMirror>(named, max_queue, reads_percent, mirror_counters));
    }
    parts.counters = counters;
    router = std::make_unique<RoutedUpstream>(std::move(parts));
  }

  bool send(const KeysShape& shape, std::vector<std::string_view> argv, int database = 0) {
    const std::string bytes = "-";
    return router->send({shape, argv, bytes, database, 7, 2}, 1, client);
  }
  int partition(std::vector<std::string_view> argv) {
    return router->partition_of({kWrite, argv, "-", 0, 7, 2});
  }

  std::shared_ptr<Recorder> single = std::make_shared<Recorder>(false, 0);
  std::shared_ptr<Recorder> named = std::make_shared<Recorder>(true, 5);
  std::shared_ptr<MirrorCounters> mirror_counters;
  std::shared_ptr<RouteThreadCounters> counters = std::make_shared<RouteThreadCounters>(2);
  std::unique_ptr<RoutedUpstream> router;
  std::shared_ptr<Collect> client = std::make_shared<Collect>();
};

}  // namespace

TEST_CASE("the longest route prefix wins, and a leading hash tag is routed by its content",
          "[upstream][routes]") {
  const RouteTable table({{"a:", 1}, {"a:b:", 2}, {"c", 3}});
  CHECK(table.upstream_of("a:x") == 1);
  CHECK(table.upstream_of("a:b:x") == 2);
  CHECK(table.upstream_of("zzz") == kDefaultUpstream);
  CHECK(table.upstream_of("{a:b:1}:corral:lock") == 2);
  CHECK(table.upstream_of("{}a:x") == kDefaultUpstream);  // an empty tag is no tag
  CHECK(table.upstream_of("{a:x") == kDefaultUpstream);   // nor an unclosed one
  CHECK(RouteTable::routed_part("{feat:U1}:corral:shadow") == "feat:U1");
}

TEST_CASE("commands reach their keys' upstream, in its database; keyless ones the default",
          "[upstream][routes]") {
  Stand s;
  CHECK(s.send(kWrite, {"SET", "n:x1"}, 3));
  CHECK(s.send(kWrite, {"SET", "other"}, 3));
  CHECK(s.send(kWrite, {"DBSIZE"}, 3));
  CHECK(s.named->sent == std::vector<std::string>{"SET@5"});  // the named upstream's database
  CHECK(s.single->sent == std::vector<std::string>{"SET@3", "DBSIZE@3"});  // the client's
  CHECK(s.counters->commands[1] == 1);
  CHECK(s.counters->commands[0] == 2);
}

TEST_CASE("keys of two upstreams in one command are refused, counted where they span",
          "[upstream][routes]") {
  Stand s;
  CHECK(s.send(kWrite, {"MSET", "n:x1", "other"}));
  REQUIRE(s.client->replies.size() == 1);
  CHECK(s.client->replies[0].starts_with("-CROSSSLOT"));
  CHECK(s.single->sent.empty());
  CHECK(s.named->sent.empty());
  CHECK(s.counters->cross_upstream_refused == 1);
  CHECK(s.partition({"DEL", "n:x1", "other"}) == kSpansPartitions);
  s.router->note_cross_partition_refusal();
  CHECK(s.counters->cross_upstream_refused == 2);
  // Spanning the named cluster's slots: that upstream counts it.
  CHECK(s.partition({"DEL", "n:x1", "n:x2"}) == kSpansPartitions);
  s.router->note_cross_partition_refusal();
  CHECK(s.named->refusals == 1);
}

TEST_CASE("partitions are numbered per upstream and open links on that upstream's partition",
          "[upstream][routes]") {
  Stand s;
  const int default_partition = s.partition({"GET", "other"});
  const int slot_4 = s.partition({"GET", "n:x4"});
  CHECK(default_partition == 0);
  CHECK(slot_4 == kPartitionsPerUpstream + 5);
  CHECK(s.partition({"PING"}) == kAnyPartition);
  const std::vector<std::string_view> argv{"BLPOP", "n:x4"};
  s.router->open_session_link(slot_4, {kWrite, argv, "-", 0, 7, 2});
  s.router->open_session_link(default_partition, {kWrite, argv, "-", 0, 7, 2});
  s.router->open_session_link(kAnyPartition, {kWrite, argv, "-", 0, 7, 2});
  CHECK(s.named->opened == std::vector<int>{4});
  CHECK(s.single->opened == std::vector<int>{kAnyPartition, kAnyPartition});
}

TEST_CASE("servers are named with their upstream's qualifier", "[upstream][routes]") {
  Stand s;
  CHECK(s.router->server_of_key("n:x1") == "named/h:1");
  CHECK(s.router->server_of_key("other") == "");
  s.router->send_to_server("named/h:1", "-", 2, 7, 2, 1, s.client);
  s.router->send_to_server("", "-", 2, 7, 2, 1, s.client);
  CHECK(s.named->servers == std::vector<std::string>{"h:1@5"});
  CHECK(s.single->servers == std::vector<std::string>{"@2"});
}

TEST_CASE("a fill whose keys span upstreams is split and merged in key order",
          "[upstream][routes]") {
  Stand s;
  const std::vector<std::string_view> argv{"MGET", "n:x1", "other", "n:x2"};
  const auto target = std::make_shared<Collect>();
  s.router->fetch(argv, "-", 0, target);
  REQUIRE(s.named->fetched == std::vector<std::string>{"MGET n:x1 n:x2 @5"});
  REQUIRE(s.single->fetched == std::vector<std::string>{"MGET other @0"});
  s.single->waiting[0]->on_reply(0, "*1\r\n$1\r\nB\r\n");
  CHECK(target->replies.empty());
  s.named->waiting[0]->on_reply(0, "*2\r\n$1\r\nA\r\n$-1\r\n");
  CHECK(target->replies == std::vector<std::string>{"*3\r\n$1\r\nA\r\n$1\r\nB\r\n$-1\r\n"});
}

TEST_CASE("a mirror gets every write and its exact share of reads, never more than its queue",
          "[upstream][routes]") {
  Stand s(/*max_queue=*/3, /*reads_percent=*/25);
  for (int i = 0; i < 8; ++i) CHECK(s.send(kRead, {"GET", "m:1"}));
  CHECK(s.named->sent.size() == 2);  // 25% of 8 reads
  CHECK(s.send(kWrite, {"SET", "m:1"}));
  CHECK(s.named->sent.size() == 3);
  CHECK(s.mirror_counters->queued == 3);
  // The queue is full: the copy is dropped, the client's command is not.
  CHECK(s.send(kWrite, {"SET", "m:2"}));
  CHECK(s.named->sent.size() == 3);
  CHECK(s.mirror_counters->dropped == 1);
  CHECK(s.single->sent.size() == 10);
  // Replies free the queue; an error reply counts as failed.
  s.named->waiting[0]->on_reply(0, "+OK\r\n");
  s.named->waiting[1]->on_reply(0, "-ERR no\r\n");
  CHECK(s.mirror_counters->queued == 1);
  CHECK(s.mirror_counters->failed == 1);
  CHECK(s.send(kWrite, {"SET", "m:3"}));
  CHECK(s.mirror_counters->sent == 4);
  // A mirror that takes nothing: dropped, and the client's command still goes.
  s.named->refuse_sends = true;
  CHECK(s.send(kWrite, {"SET", "m:4"}));
  CHECK(s.mirror_counters->dropped == 2);
  CHECK(s.mirror_counters->queued == 2);
  // Keys of routes without a mirror are not copied.
  CHECK(s.send(kWrite, {"SET", "other"}));
  CHECK(s.mirror_counters->sent == 4);
  CHECK(s.client->replies.empty());
}

TEST_CASE("a client's own link serves its own upstream's keys only", "[upstream][routes]") {
  Stand s;
  const int on_default = s.partition({"GET", "other"});
  const int on_named = s.partition({"GET", "n:x4"});
  // A link opened for no key (CLIENT TRACKING, SUBSCRIBE) is the default upstream's.
  CHECK(s.router->link_serves(kAnyPartition, on_default, false));
  CHECK(s.router->link_serves(kAnyPartition, kAnyPartition, false));
  CHECK_FALSE(s.router->link_serves(kAnyPartition, on_named, false));
  CHECK(s.router->link_serves(on_named, s.partition({"GET", "n:x7"}), false));
  CHECK_FALSE(s.router->link_serves(on_named, on_default, false));
  // A keyless SUBSCRIBE hears what PUBLISH (keyless) sends to the default upstream.
  CHECK(s.router->link_serves(on_named, kAnyPartition, false));
  CHECK_FALSE(s.router->link_serves(on_named, kAnyPartition, true));
  CHECK(s.router->link_serves(kAnyPartition, kAnyPartition, true));
  // Spanning the named cluster's slots is that upstream's refusal; spanning upstreams is ours.
  CHECK(s.router->link_serves(on_named, s.partition({"DEL", "n:x1", "n:x2"}), false));
  CHECK_FALSE(s.router->link_serves(on_named, s.partition({"DEL", "n:x1", "other"}), false));
  s.router->note_cross_partition_refusal();
  CHECK(s.counters->cross_upstream_refused == 1);
}

// A link that records the bytes sent on it.
class SentBytes final : public Link {
 public:
  bool send(std::string_view command, std::shared_ptr<ReplyTarget>, std::uint64_t, bool) override {
    sent.emplace_back(command);
    return true;
  }
  bool send_untracked(std::string_view) override { return true; }
  void set_unsolicited_target(std::shared_ptr<ReplyTarget>) override {}
  State state() const override { return State::ready; }
  std::size_t in_flight() const override { return 0; }
  void close() override {}
  bool start_raw_relay() override {
    relay = RelayState::awaiting_verdict;
    return true;
  }
  RelayState relay_state() const override { return relay; }
  std::vector<std::string> sent;
  RelayState relay = RelayState::off;
};

TEST_CASE("a route link reports its inner link's relay state", "[upstream][routes]") {
  auto inner = std::make_shared<SentBytes>();
  RouteLink on_default(inner, kDefaultUpstream, "", RouteLink::kClientsDatabase);
  CHECK(on_default.relay_state() == Link::RelayState::off);
  CHECK(on_default.start_raw_relay());
  CHECK(on_default.relay_state() == Link::RelayState::awaiting_verdict);
  inner->relay = Link::RelayState::relaying;  // the server accepted
  CHECK(on_default.relay_state() == Link::RelayState::relaying);
}

TEST_CASE("a client's SELECT on a named upstream's link keeps the upstream's database",
          "[upstream][routes]") {
  auto inner = std::make_shared<SentBytes>();
  RouteLink named(inner, 1, "named/", 5);
  RouteLink on_default(inner, kDefaultUpstream, "", RouteLink::kClientsDatabase);
  const std::string select_3 = "*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n";
  named.send(select_3, nullptr, 1, false);
  named.send_in_session(SessionCommand::other, "*2\r\n$6\r\nselect\r\n$2\r\n15\r\n", nullptr, 2,
                        false);
  // Indexes Corral refuses, and other commands, pass unchanged: Redis answers them.
  named.send("*2\r\n$6\r\nSELECT\r\n$2\r\n16\r\n", nullptr, 3, false);
  named.send("*2\r\n$6\r\nSELECT\r\n$1\r\nx\r\n", nullptr, 4, false);
  named.send("*2\r\n$6\r\nGETDEL\r\n$1\r\n3\r\n", nullptr, 5, false);
  on_default.send(select_3, nullptr, 6, false);
  CHECK(inner->sent == std::vector<std::string>{
                           "*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n",
                           "*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n",
                           "*2\r\n$6\r\nSELECT\r\n$2\r\n16\r\n",
                           "*2\r\n$6\r\nSELECT\r\n$1\r\nx\r\n",
                           "*2\r\n$6\r\nGETDEL\r\n$1\r\n3\r\n",
                           select_3,
                       });
}

}  // namespace corral::upstream
