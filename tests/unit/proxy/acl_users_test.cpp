// Upstream ACL users in the dispatcher: the AUTH check on Corral's own link, the DRYRUN verdicts
// that gate cached reads, and client.refuse_scripts, against a recording upstream.
#include <catch2/catch.hpp>

#include "proxy/local/acl_verdicts.hpp"
#include "recording_cluster.hpp"
#include "recording_upstream.hpp"
#include "resp/encoder.hpp"

using namespace corral;
using namespace corral::proxy;
using namespace corral::proxy::test;
using session::Action;

namespace {
std::string command(std::initializer_list<std::string_view> words) {
  std::string out;
  const std::vector<std::string_view> argv(words);
  resp::append_command(out, argv);
  return out;
}

const CommandSpec& row(std::string_view name, std::string_view sub = {}) {
  const CommandSpec* spec = find_command(name);
  REQUIRE(spec != nullptr);
  if (sub.empty()) return *spec;
  const CommandSpec* found = find_subcommand(*spec, sub);
  REQUIRE(found != nullptr);
  return *found;
}

bool may_get(AclVerdicts& verdicts, std::string_view key) {
  const std::string_view argv[] = {"GET", key};
  return verdicts.may_serve_cached("app", row("get"), argv);
}
}  // namespace

TEST_CASE("a cached read is allowed only once DRYRUN said so, asked once per user and key",
          "[acl]") {
  Proxy proxy;
  AclVerdicts verdicts(*proxy.upstream, 100);
  CHECK_FALSE(may_get(verdicts, "app:1"));
  auto& link = proxy.links.shared_link(0);
  REQUIRE(link.sent.size() == 1);
  CHECK(link.sent[0].bytes == command({"ACL", "DRYRUN", "app", "GET", "app:1"}));
  CHECK_FALSE(may_get(verdicts, "app:1"));  // still pending: not asked twice
  CHECK(link.sent.size() == 1);
  link.answer("+OK\r\n");
  CHECK(may_get(verdicts, "app:1"));

  // Refused: DRYRUN answers a bulk string saying why. It stays refused without asking again.
  CHECK_FALSE(may_get(verdicts, "other:1"));
  REQUIRE(link.sent.size() == 2);
  link.answer("$20\r\nThis user has no ...\r\n");
  CHECK_FALSE(may_get(verdicts, "other:1"));
  CHECK(link.sent.size() == 2);
}

TEST_CASE("ACL changes through Corral and reloads drop what was learned", "[acl]") {
  Proxy proxy;
  AclVerdicts verdicts(*proxy.upstream, 100);
  auto& link = proxy.links.shared_link(0);
  CHECK_FALSE(may_get(verdicts, "app:1"));
  link.answer("+OK\r\n");
  REQUIRE(may_get(verdicts, "app:1"));

  CHECK_FALSE(AclVerdicts::changes_rules(row("acl", "whoami")));  // reads nothing
  REQUIRE(AclVerdicts::changes_rules(row("acl", "setuser")));
  forget_acl_rules();  // what the dispatcher does as it forwards one
  CHECK_FALSE(may_get(verdicts, "app:1"));
  CHECK(link.sent.size() == 2);  // asked again

  // An answer to a question asked before a change is not kept.
  forget_acl_rules();
  link.answer("+OK\r\n");
  CHECK_FALSE(may_get(verdicts, "app:1"));

  // Learned while the change was on its way (queued in MULTI, or on another connection): its
  // reply (EXEC's) forgets it again.
  const auto change = forget_acl_rules_at_reply(std::make_shared<upstream::DiscardTarget>());
  link.answer("+OK\r\n");
  REQUIRE(may_get(verdicts, "app:1"));
  change->on_reply(0, "+OK\r\n");
  CHECK_FALSE(may_get(verdicts, "app:1"));
}

TEST_CASE("MGET is asked key by key; a failed question is asked again", "[acl]") {
  Proxy proxy;
  AclVerdicts verdicts(*proxy.upstream, 100);
  auto& link = proxy.links.shared_link(0);
  const std::string_view argv[] = {"MGET", "a", "b"};
  CHECK_FALSE(verdicts.may_serve_cached("app", row("mget"), argv));
  REQUIRE(link.sent.size() == 2);
  CHECK(link.sent[0].bytes == command({"ACL", "DRYRUN", "app", "MGET", "a"}));
  CHECK(link.sent[1].bytes == command({"ACL", "DRYRUN", "app", "MGET", "b"}));
  link.answer("+OK\r\n");
  link.pending.front().target->on_failure(0, "ERR upstream connection lost");
  link.pending.pop_front();
  CHECK_FALSE(verdicts.may_serve_cached("app", row("mget"), argv));
  REQUIRE(link.sent.size() == 3);  // b again, a known
  CHECK(link.sent[2].bytes == command({"ACL", "DRYRUN", "app", "MGET", "b"}));
  link.answer("+OK\r\n");
  CHECK(verdicts.may_serve_cached("app", row("mget"), argv));
}

TEST_CASE("AUTH user pass waits for the upstream's check and relays its refusal", "[acl]") {
  config::Settings settings;
  settings.client.password = "corral-pw";
  Proxy proxy(settings);
  Client client(proxy);
  CHECK(client.send({"AUTH", "app", "guess"}) == Action::wait_then_retry);
  auto& checker = proxy.links.last_dedicated();
  REQUIRE(checker.sent.size() == 1);
  CHECK(checker.sent[0].bytes == command({"AUTH", "app", "guess"}));
  CHECK(client.retry({"AUTH", "app", "guess"}) == Action::wait_then_retry);  // not answered yet
  CHECK(checker.sent.size() == 1);
  checker.answer("-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK(client.retry({"AUTH", "app", "guess"}) == Action::done);
  CHECK(client.reply() == "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK(proxy.info.auth_failures.load() == 1);
  client.send({"GET", "k"});
  CHECK(client.reply().starts_with("-NOAUTH"));

  // Corral's own password is still Corral's to check, on no upstream connection.
  client.send({"AUTH", "corral-pw"});
  CHECK(client.reply() == "+OK\r\n");
  CHECK(checker.sent.size() == 1);
}

TEST_CASE("AUTH pass without a password of Corral's own is the upstream's AUTH pass", "[acl]") {
  Proxy proxy;  // no client.password: the upstream's `default` decides, as Redis would
  Client client(proxy);
  CHECK(client.send({"AUTH", "guess"}) == Action::wait_then_retry);
  auto& checker = proxy.links.last_dedicated();
  REQUIRE(checker.sent.size() == 1);
  CHECK(checker.sent[0].bytes == command({"AUTH", "guess"}));
  checker.answer(
      "-ERR AUTH <password> called without any password configured for the default user. Are "
      "you sure your configuration is correct?\r\n");
  CHECK(client.retry({"AUTH", "guess"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR AUTH <password> called without any password"));
}

TEST_CASE("client.refuse_scripts refuses the commands that run server-side code", "[acl]") {
  config::Settings settings;
  settings.client.refuse_scripts = true;
  Proxy proxy(settings);
  Client client(proxy);
  for (const auto& words : std::vector<std::vector<std::string_view>>{
           {"EVAL", "return 1", "0"},
           {"evalsha_ro", "abc", "0"},
           {"FCALL", "f", "0"},
           {"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() end)"}}) {
    const resp::Request request{words, {}};
    client.handler->handle(request, client.handler->classify(request), ++client.tag, client.slots,
                           0);
    CHECK(client.reply().find("is not allowed through this proxy") != std::string::npos);
  }
  CHECK(proxy.links.shared.empty());  // nothing reached the upstream

  Proxy open;
  Client other(open);
  other.send({"EVAL", "return 1", "0"});
  CHECK(open.links.shared_of(0).sent.size() == 1);
}

TEST_CASE("On a cluster AUTH is checked by a node; a user needs the cluster's user pools",
          "[acl][cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  CHECK(client.send({"AUTH", "app", "guess"}) == Action::wait_then_retry);
  REQUIRE(c.links.dedicated.size() == 1);
  auto& [port, checker] = c.links.dedicated.front();
  CHECK(port == 7000);  // the node serving slot 0
  REQUIRE(checker->sent.size() == 1);
  CHECK(checker->sent[0].bytes == command({"AUTH", "app", "guess"}));
  checker->answer("-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK(client.retry({"AUTH", "app", "guess"}) == Action::done);
  CHECK(client.reply().starts_with("-WRONGPASS"));
  CHECK(c.proxy.info.auth_failures.load() == 1);

  // Accepted by the node, but this upstream was given no user pools (as a Sentinel's is not):
  // refused with the reason, not run as Corral's own user.
  CHECK(client.send({"AUTH", "app", "app-pw"}) == Action::wait_then_retry);
  checker->answer("+OK\r\n");
  CHECK(client.retry({"AUTH", "app", "app-pw"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR AUTH with a user name is not supported"));
  CHECK(c.links.dedicated.size() == 1);  // one checker link, kept
}
