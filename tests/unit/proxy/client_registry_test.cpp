// The process-wide client registry: CLIENT LIST lines, KILL filters and CLIENT PAUSE, through
// the dispatcher's local commands and directly.
#include <catch2/catch.hpp>

#include <thread>

#include "proxy/client_session.hpp"
#include "proxy/links/client_unblock.hpp"
#include "proxy/local/client_registry.hpp"
#include "recording_upstream.hpp"
#include "upstream/server_pause.hpp"

using namespace corral;
using namespace corral::proxy;
using namespace corral::proxy::test;
using session::Action;

namespace {
// A client opened with an address and a close that only counts, as a session would give them.
// The CLIENT LIST line that contains `addr` ("" when none does).
std::string line_of(const std::string& list, std::string_view addr) {
  const auto at = list.find(addr);
  return at == std::string::npos ? std::string() : list.substr(at, list.find('\n', at) - at);
}

struct Peered {
  Peered(Proxy& proxy, std::string addr)
      : slots(std::make_shared<Replies>()), buffers(std::make_shared<session::ClientBuffers>()) {
    session::Peer peer{
        std::move(addr),
        "127.0.0.1:6380",
        [this] { ++closes; },
        [this](std::chrono::milliseconds) { ++idle_asks; },
        [this](std::function<void(upstream::ReplyTarget&)> deliver) { deliver(*slots); },
        buffers,
        [this] { ++shows; }};
    handler = proxy.dispatcher.open_session(peer);
  }
  Action send(std::initializer_list<std::string_view> words) {
    const std::vector<std::string_view> argv(words);
    const resp::Request request{argv, {}};
    return handler->handle(request, handler->classify(request), ++tag, slots, 0);
  }
  std::string reply() const { return slots->replies.count(tag) ? slots->replies.at(tag) : ""; }

  std::unique_ptr<session::ClientHandler> handler;
  std::shared_ptr<Replies> slots;
  std::shared_ptr<session::ClientBuffers> buffers;  // what a session would publish
  int shows = 0;                                    // asked to bring them up to date
  std::uint64_t tag = 0;
  int closes = 0;
  int idle_asks = 0;
};

// Redis answers what a CLIENT PAUSE / UNPAUSE sent: the FUNCTION LIST a WRITE pause asks first
// (no functions), then the command itself with `reply`.
void redis_answers(RecordingLink& link, std::string_view reply = "+OK\r\n") {
  while (!link.pending.empty() &&
         link.pending.front().bytes.find("FUNCTION") != std::string::npos) {
    link.answer("*0\r\n");
  }
  link.answer(reply);
}

config::Settings allowing_client() {
  config::Settings settings;
  settings.client.allow_commands = {"CLIENT"};
  return settings;
}
}  // namespace

TEST_CASE("CLIENT LIST and INFO show Corral's clients", "[client]") {
  Proxy proxy(allowing_client());
  Peered a(proxy, "10.0.0.1:1000");
  Peered b(proxy, "10.0.0.2:2000");
  CHECK(a.send({"CLIENT", "SETNAME", "alpha"}) == Action::done);
  CHECK(a.send({"CLIENT", "INFO"}) == Action::done);
  const std::string info = a.reply();
  CHECK(info.find("id=" + std::to_string(a.handler->client_id()) + " addr=10.0.0.1:1000 " +
                  "laddr=127.0.0.1:6380 fd=-1 name=alpha ") != std::string::npos);
  // The command running, as in Redis: CLIENT INFO itself.
  CHECK(info.find(" cmd=client|info ") != std::string::npos);
  CHECK(info.find(" qbuf=0 qbuf-free=0 ") != std::string::npos);
  CHECK(b.send({"GET", "k"}) == Action::done);
  CHECK(a.send({"CLIENT", "LIST", "ID", std::to_string(b.handler->client_id())}) == Action::done);
  CHECK(a.reply().find("addr=10.0.0.2:2000") != std::string::npos);
  CHECK(a.reply().find("cmd=get ") != std::string::npos);
  CHECK(a.reply().find("10.0.0.1") == std::string::npos);
  CHECK(a.send({"CLIENT", "LIST", "TYPE", "nosuch"}) == Action::done);
  CHECK(a.reply() == "-ERR Unknown client type 'nosuch'\r\n");
  // Redis 7.0 takes one filter or the other; an integer that names no client lists nothing.
  CHECK(a.send({"CLIENT", "LIST", "TYPE", "normal", "ID", "1"}) == Action::done);
  CHECK(a.reply() == "-ERR syntax error\r\n");
  // A line per ID, in their order, repeated when repeated.
  const std::string a_id = std::to_string(a.handler->client_id());
  const std::string b_id = std::to_string(b.handler->client_id());
  CHECK(a.send({"CLIENT", "LIST", "ID", b_id, a_id, b_id}) == Action::done);
  const std::string ordered = a.reply();
  const auto first_b = ordered.find("id=" + b_id + " ");
  const auto the_a = ordered.find("id=" + a_id + " ");
  const auto second_b = ordered.find("id=" + b_id + " ", first_b + 1);
  CHECK((first_b < the_a && the_a < second_b && second_b != std::string::npos));
  CHECK(a.send({"CLIENT", "LIST", "ID", "0", "-1"}) == Action::done);
  CHECK(a.reply() == "$0\r\n\r\n");
  CHECK(a.send({"CLIENT", "LIST", "ID", "01"}) == Action::done);
  CHECK(a.reply() == "-ERR Invalid client ID\r\n");
}

TEST_CASE("CLIENT LIST shows the buffers its session published", "[client]") {
  Proxy proxy(allowing_client());
  Peered a(proxy, "10.0.0.1:1000");
  Peered b(proxy, "10.0.0.2:2000");
  auto& buffers = *b.buffers;
  buffers.store(buffers.query, 26);
  buffers.store(buffers.query_free, 16358);
  buffers.store(buffers.argv_memory, 64);
  buffers.store(buffers.reply_buffer, 1024);
  buffers.store(buffers.output, 5);
  buffers.store(buffers.parked_replies, 2);
  buffers.store(buffers.parked_bytes, 300);
  buffers.store(buffers.input_capacity, 16384);
  buffers.store(buffers.session_memory, 2000);
  CHECK(a.send({"CLIENT", "LIST", "ID", std::to_string(b.handler->client_id())}) == Action::done);
  CHECK(a.reply().find(" qbuf=26 qbuf-free=16358 argv-mem=64 multi-mem=0 rbs=1024 rbp=1024 obl=5 "
                       "oll=2 omem=300 tot-mem=19772 events=rw ") != std::string::npos);
  // Only the caller's own buffers are brought up to date (on its thread), for its own line.
  CHECK(a.shows == 1);
  CHECK(b.shows == 0);
  CHECK(a.send({"CLIENT", "INFO"}) == Action::done);
  CHECK(a.shows == 2);
}

TEST_CASE("a MONITOR client is flagged O and counts as a normal client", "[client]") {
  config::Settings settings = allowing_client();
  settings.client.allow_commands.push_back("MONITOR");
  Proxy proxy(settings);
  Peered admin(proxy, "10.0.0.1:1000");
  Peered watcher(proxy, "10.0.0.2:2000");
  // +OK once the upstream's MONITOR (for the scripts' lines) runs.
  CHECK(watcher.send({"MONITOR"}) == Action::wait_then_retry);
  auto& upstream_monitor = proxy.links.last_dedicated();
  upstream_monitor.answer("+OK\r\n");
  CHECK(watcher.send({"MONITOR"}) == Action::done);
  CHECK(admin.send({"CLIENT", "LIST", "TYPE", "normal"}) == Action::done);
  CHECK(admin.reply().find("addr=10.0.0.2:2000 laddr=127.0.0.1:6380 fd=-1 name= ") !=
        std::string::npos);
  CHECK(admin.reply().find(" flags=O ") != std::string::npos);
  CHECK(admin.send({"CLIENT", "LIST", "TYPE", "pubsub"}) == Action::done);
  CHECK(admin.reply() == "$0\r\n\r\n");
  watcher.handler->end_session();  // as its session would: the feed must not outlive the client
  upstream_monitor.unsolicited->on_failure(0, "ERR upstream connection lost");  // the next test's
}

TEST_CASE("a client blocked in Redis is flagged b until its reply comes", "[client]") {
  Proxy proxy(allowing_client());
  Peered admin(proxy, "10.0.0.1:1000");
  Peered blocked(proxy, "10.0.0.2:2000");
  CHECK(blocked.send({"BRPOP", "l", "0"}) == Action::done);
  CHECK(admin.send({"CLIENT", "LIST", "TYPE", "normal"}) == Action::done);
  CHECK(line_of(admin.reply(), "addr=10.0.0.2:2000").find(" flags=b ") != std::string::npos);
  CHECK(line_of(admin.reply(), "addr=10.0.0.1:1000").find(" flags=N ") != std::string::npos);
  proxy.links.last_dedicated().answer("*2\r\n$1\r\nl\r\n$1\r\nv\r\n");
  CHECK(admin.send({"CLIENT", "LIST", "TYPE", "normal"}) == Action::done);
  CHECK(line_of(admin.reply(), "addr=10.0.0.2:2000").find(" flags=N ") != std::string::npos);
  blocked.handler->end_session();
}

TEST_CASE("a client relaying SYNC is flagged S and listed as a replica, until Redis refuses",
          "[client]") {
  config::Settings settings = allowing_client();
  settings.client.allow_commands.push_back("SYNC");
  Proxy proxy(settings);
  Peered admin(proxy, "10.0.0.1:1000");
  Peered replica(proxy, "10.0.0.3:3000");
  CHECK(replica.send({"SYNC"}) == Action::relay);
  SECTION("relaying") {
    CHECK(admin.send({"CLIENT", "LIST", "TYPE", "replica"}) == Action::done);
    CHECK(line_of(admin.reply(), "addr=10.0.0.3:3000").find(" flags=S ") != std::string::npos);
    CHECK(admin.reply().find("addr=10.0.0.1:1000") == std::string::npos);
    CHECK(admin.send({"CLIENT", "LIST", "TYPE", "slave"}) == Action::done);
    CHECK(admin.reply().find("addr=10.0.0.3:3000") != std::string::npos);
  }
  SECTION("refused") {
    proxy.links.last_dedicated().relay = upstream::Link::RelayState::off;
    CHECK(replica.handler->relay_verdict() == session::RelayVerdict::refused);
    CHECK(admin.send({"CLIENT", "LIST", "TYPE", "replica"}) == Action::done);
    CHECK(admin.reply().find("addr=10.0.0.3:3000") == std::string::npos);
    CHECK(admin.send({"CLIENT", "LIST", "TYPE", "normal"}) == Action::done);
    CHECK(line_of(admin.reply(), "addr=10.0.0.3:3000").find(" flags=N ") != std::string::npos);
  }
  replica.handler->end_session();
}

TEST_CASE("CLIENT KILL filters, SKIPME and the old form", "[client]") {
  Proxy proxy(allowing_client());
  Peered admin(proxy, "10.1.0.1:1");
  Peered x(proxy, "10.1.0.2:2");
  Peered y(proxy, "10.1.0.3:3");
  CHECK(admin.send({"CLIENT", "KILL", "ID", std::to_string(x.handler->client_id())}) ==
        Action::done);
  CHECK(admin.reply() == ":1\r\n");
  CHECK(x.closes == 1);
  CHECK(admin.send({"CLIENT", "KILL", "10.1.0.3:3"}) == Action::done);
  CHECK(admin.reply() == "+OK\r\n");
  CHECK(y.closes == 1);
  CHECK(admin.send({"CLIENT", "KILL", "10.9.9.9:9"}) == Action::done);
  CHECK(admin.reply() == "-ERR No such client\r\n");
  CHECK(admin.send({"CLIENT", "KILL", "ADDR", "10.1.0.1:1"}) == Action::done);
  CHECK(admin.reply() == ":0\r\n");  // SKIPME yes by default
  // Another user than "default": the upstream says whether it exists (Corral's clients are
  // all "default", so none matches).
  CHECK(admin.send({"CLIENT", "KILL", "USER", "someone"}) == Action::done);
  CHECK(admin.reply().empty());
  auto& shared = proxy.links.shared_of(0);
  CHECK(shared.pending.back().bytes == wire({"ACL", "DRYRUN", "someone", "PING"}));
  shared.answer("+OK\r\n");
  CHECK(admin.reply() == ":0\r\n");
  CHECK(admin.send({"CLIENT", "KILL", "USER", "nobody"}) == Action::done);
  shared.answer("-ERR User 'nobody' not found\r\n");
  CHECK(admin.reply() == "-ERR No such user 'nobody'\r\n");
  CHECK(admin.send({"CLIENT", "KILL", "USER", "default"}) == Action::done);
  CHECK(admin.reply() == ":2\r\n");  // x and y
  CHECK(admin.send({"CLIENT", "KILL", "ID", "0"}) == Action::done);
  CHECK(admin.reply().starts_with("-ERR client-id should be greater than 0"));
  CHECK(admin.send({"CLIENT", "KILL", "ID", "1", "SKIPME"}) == Action::done);
  CHECK(admin.reply() == "-ERR syntax error\r\n");
  // Three arguments are the old form, whatever the third is (as in Redis).
  CHECK(admin.send({"CLIENT", "KILL", "ID"}) == Action::done);
  CHECK(admin.reply() == "-ERR No such client\r\n");
  // Killing itself: answered, then closed by the session (not through the registry).
  CHECK(admin.send({"CLIENT", "KILL", "ADDR", "10.1.0.1:1", "SKIPME", "no"}) ==
        Action::close_after_reply);
  CHECK(admin.reply() == ":1\r\n");
  CHECK(admin.closes == 0);
}

TEST_CASE("CLIENT PAUSE holds writes or everything until it ends, in Corral and in Redis",
          "[client]") {
  Proxy proxy(allowing_client());
  Peered admin(proxy, "10.2.0.1:1");
  Peered c(proxy, "10.2.0.2:2");
  CHECK(admin.send({"CLIENT", "PAUSE", "60000", "WRITE"}) == Action::done);
  auto& shared = proxy.links.shared_of(0);
  CHECK(shared.bytes().back() == wire({"CLIENT", "PAUSE", "60000", "WRITE"}));
  CHECK(admin.reply().empty());                                 // Redis's answer is the client's
  CHECK(c.send({"SET", "k", "v"}) == Action::wait_then_retry);  // held at once
  redis_answers(shared);
  CHECK(admin.reply() == "+OK\r\n");
  CHECK(upstream::server_pause().in_force());
  CHECK(admin.send({"CLIENT", "LIST"}) == Action::done);
  // Held, as Redis shows a paused client.
  CHECK(line_of(admin.reply(), "addr=10.2.0.2:2 ").find(" flags=b ") != std::string::npos);
  CHECK(c.send({"GET", "k"}) == Action::done);
  shared.answer("$-1\r\n");
  CHECK(admin.send({"CLIENT", "PAUSE", "60000"}) == Action::done);  // ALL by default
  redis_answers(shared);
  CHECK(c.send({"GET", "k"}) == Action::wait_then_retry);
  CHECK(admin.send({"CLIENT", "UNPAUSE"}) == Action::done);
  CHECK(shared.bytes().back() == wire({"CLIENT", "UNPAUSE"}));
  // Corral's clients go once Redis has answered the UNPAUSE (under ALL, at the pause's end).
  CHECK(c.send({"GET", "k"}) == Action::wait_then_retry);
  shared.answer("+OK\r\n");
  CHECK(admin.reply() == "+OK\r\n");
  CHECK_FALSE(upstream::server_pause().in_force());
  CHECK(c.send({"SET", "k", "v"}) == Action::done);
  shared.answer("+OK\r\n");
  CHECK(admin.send({"CLIENT", "PAUSE", "20", "WRITE"}) == Action::done);
  redis_answers(shared);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  CHECK_FALSE(upstream::server_pause().in_force());
  CHECK(c.send({"SET", "k", "v"}) == Action::done);
  shared.answer("+OK\r\n");
  // A pause Redis refuses holds nobody in Corral either.
  CHECK(admin.send({"CLIENT", "PAUSE", "60000", "WRITE"}) == Action::done);
  redis_answers(shared,
                "-NOPERM this user has no permissions to run the 'client|pause' command\r\n");
  CHECK(admin.reply().starts_with("-NOPERM"));
  CHECK_FALSE(upstream::server_pause().in_force());
  CHECK(c.send({"SET", "k", "v"}) == Action::done);
  shared.answer("+OK\r\n");
  const std::size_t sent = shared.bytes().size();
  CHECK(admin.send({"CLIENT", "PAUSE", "x"}) == Action::done);
  CHECK(admin.reply() == "-ERR timeout is not an integer or out of range\r\n");
  CHECK(admin.send({"CLIENT", "PAUSE", "10", "READ"}) == Action::done);
  CHECK(admin.reply() == "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n");
  // Redis checks the mode before the timeout, and answers too many arguments with its own text.
  CHECK(admin.send({"CLIENT", "PAUSE", "x", "READ"}) == Action::done);
  CHECK(admin.reply() == "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n");
  CHECK(admin.send({"CLIENT", "PAUSE", "10", "WRITE", "x"}) == Action::done);
  CHECK(admin.reply() ==
        "-ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.\r\n");
  CHECK(shared.bytes().size() == sent);  // wrong arguments never reach Redis
}

TEST_CASE("clients held by a pause go on in the order they were held", "[client]") {
  Proxy proxy(allowing_client());
  Peered admin(proxy, "10.2.1.1:1");
  Peered first(proxy, "10.2.1.2:2");
  auto second = std::make_unique<Peered>(proxy, "10.2.1.3:3");
  Peered third(proxy, "10.2.1.4:4");
  CHECK(admin.send({"CLIENT", "PAUSE", "60000", "WRITE"}) == Action::done);
  auto& shared = proxy.links.shared_of(0);
  redis_answers(shared);
  CHECK(first.send({"SET", "k", "1"}) == Action::wait_then_retry);
  CHECK(second->send({"SET", "k", "2"}) == Action::wait_then_retry);
  CHECK(third.send({"SET", "k", "3"}) == Action::wait_then_retry);
  CHECK(admin.send({"CLIENT", "UNPAUSE"}) == Action::done);
  shared.answer("+OK\r\n");
  // As Redis unblocks its paused clients: the first held goes first, whoever retries first.
  CHECK(third.send({"SET", "k", "3"}) == Action::wait_then_retry);
  second.reset();  // a held client that leaves keeps no one waiting
  CHECK(third.send({"SET", "k", "3"}) == Action::wait_then_retry);
  CHECK(first.send({"SET", "k", "1"}) == Action::done);
  CHECK(third.send({"SET", "k", "3"}) == Action::done);
  CHECK(third.send({"SET", "k", "4"}) == Action::done);
}

TEST_CASE("idle_timeout asks the clients quiet that long, never subscribed ones", "[client]") {
  Proxy proxy(allowing_client());
  Peered quiet(proxy, "10.3.0.1:1");
  Peered busy(proxy, "10.3.0.2:2");
  Peered subscriber(proxy, "10.3.0.3:3");
  subscriber.send({"SUBSCRIBE", "news"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(busy.send({"GET", "k"}) == Action::done);
  client_registry().close_idle(std::chrono::milliseconds(200));
  CHECK(quiet.idle_asks == 1);
  CHECK(busy.idle_asks == 0);
  CHECK(subscriber.idle_asks == 0);
  client_registry().close_idle(std::chrono::hours(1));
  CHECK(quiet.idle_asks == 1);
}

TEST_CASE("CLIENT UNBLOCK waits while the blocked connection's Redis id is being learnt",
          "[client]") {
  Proxy proxy(allowing_client());
  proxy.links.hold_client_ids = true;
  Peered blocked(proxy, "10.4.0.1:1");
  Peered other(proxy, "10.4.0.2:2");
  const std::string id = std::to_string(blocked.handler->client_id());
  CHECK(blocked.send({"BLPOP", "l", "0"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  // Redis may show the BLPOP blocked before Corral has read the CLIENT ID sent ahead of it: the
  // UNBLOCK is asked again later (in order with the caller's commands), not answered :0.
  CHECK(other.send({"CLIENT", "UNBLOCK", id}) == Action::wait_then_retry);
  CHECK(proxy.links.shared.empty());
  dedicated.answer_client_id();
  CHECK(other.send({"CLIENT", "UNBLOCK", id}) == Action::done);
  CHECK(proxy.links.shared_of(0).bytes().back() == wire({"CLIENT", "UNBLOCK", "1000"}));
}

TEST_CASE("CLIENT UNBLOCK unblocks the client's dedicated connection by Redis's id", "[client]") {
  Proxy proxy(allowing_client());
  Peered blocked(proxy, "10.4.0.1:1");
  Peered other(proxy, "10.4.0.2:2");
  const std::string id = std::to_string(blocked.handler->client_id());
  // No dedicated connection: nothing Redis could have blocked, so Redis is not asked.
  CHECK(other.send({"CLIENT", "UNBLOCK", id}) == Action::done);
  CHECK(other.reply() == ":0\r\n");
  CHECK(proxy.links.shared.empty());

  CHECK(blocked.send({"BLPOP", "l", "0"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(dedicated.client_id_asks == 1);
  CHECK(dedicated.bytes() == std::vector<std::string>{wire({"BLPOP", "l", "0"})});
  CHECK(other.send({"CLIENT", "UNBLOCK", id, "error"}) == Action::done);
  auto& shared = proxy.links.shared_of(0);
  CHECK(shared.bytes().back() == wire({"CLIENT", "UNBLOCK", "1000", "error"}));
  CHECK(other.reply().empty());  // Redis answers it
  shared.answer(":1\r\n");
  CHECK(other.reply() == ":1\r\n");
  CHECK(other.send({"CLIENT", "UNBLOCK", id}) == Action::done);
  CHECK(shared.bytes().back() == wire({"CLIENT", "UNBLOCK", "1000"}));

  // Redis's checks, in Redis's order.
  CHECK(other.send({"CLIENT", "UNBLOCK", "x", "LATER"}) == Action::done);
  CHECK(other.reply() == "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n");
  CHECK(other.send({"CLIENT", "UNBLOCK", "x"}) == Action::done);
  CHECK(other.reply() == "-ERR value is not an integer or out of range\r\n");
  CHECK(other.send({"CLIENT", "UNBLOCK", id, "TIMEOUT", "x"}) == Action::done);
  CHECK(other.reply() ==
        "-ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.\r\n");
  CHECK(other.send({"CLIENT", "UNBLOCK", "-5"}) == Action::done);
  CHECK(other.reply() == ":0\r\n");

  // Once the block ended, the link is kept (clean) for the client's next blocking command, and
  // Redis's id still names it: Redis answers, :0 for a connection not blocked.
  dedicated.answer("*-1\r\n");
  CHECK(blocked.send({"GET", "k"}) == Action::done);
  CHECK(dedicated.closes == 0);
  CHECK(other.send({"CLIENT", "UNBLOCK", id}) == Action::done);
  CHECK(shared.bytes().back() == wire({"CLIENT", "UNBLOCK", "1000"}));
  // Once the client left, the kept link is closed and Redis's id no longer names the client.
  blocked.handler->end_session();
  CHECK(dedicated.closes == 1);
  const auto sent_before = shared.sent.size();
  CHECK(other.send({"CLIENT", "UNBLOCK", id}) == Action::done);
  CHECK(other.reply() == ":0\r\n");
  CHECK(shared.sent.size() == sent_before);
}

TEST_CASE("a CLIENT ID reply names Redis's id, anything else none", "[client]") {
  CHECK(parse_client_id_reply(":42\r\n") == 42);
  CHECK(parse_client_id_reply(":0\r\n") == 0);
  CHECK(parse_client_id_reply(":-3\r\n") == 0);
  CHECK(parse_client_id_reply("-ERR unknown command\r\n") == 0);
  CHECK(parse_client_id_reply(":12") == 0);
}
