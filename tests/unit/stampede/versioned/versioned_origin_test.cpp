// Tests of VersionedOrigin: a nil in the current version is read again from the previous one
// (single keys and an MGET's nil elements), counted, and nothing else changes.
#include <catch2/catch.hpp>

#include <deque>
#include <string>
#include <vector>

#include "stampede/policy/policy_runtime.hpp"
#include "stampede/policy/policy_stats.hpp"
#include "stampede/versioned/versioned_origin.hpp"

using namespace corral;
using namespace corral::stampede;
using namespace std::chrono_literals;
using origin::FetchResult;
using origin::Outcome;

namespace {

// Records each request; the test answers them by hand, in order.
class ScriptedOrigin final : public origin::Origin {
 public:
  std::string_view name() const override { return "redis"; }
  void fetch(std::span<const std::string_view> argv, origin::FetchCallback done) override {
    requests.emplace_back(argv.begin(), argv.end());
    pending.push_back(std::move(done));
  }
  void answer(Outcome outcome, std::string_view reply, std::chrono::nanoseconds took = 1ms) {
    REQUIRE(!pending.empty());
    auto done = std::move(pending.front());
    pending.pop_front();
    done(FetchResult(outcome, reply, took));
  }

  std::vector<std::vector<std::string>> requests;
  std::deque<origin::FetchCallback> pending;
};

struct Fixture {
  Fixture() {
    config::PolicySettings policy;
    policy.prefix = "feat:";
    policy.versioned = config::VersionedSettings{"feat:pointer"};
    runtime = std::make_shared<PolicyRuntime>(policy);
    versioned = std::make_shared<VersionedOrigin>(inner, runtime, stats, "feat:");
  }

  void get(std::vector<std::string_view> argv) {
    versioned->fetch(argv, [this](const FetchResult& result) {
      ++answers;
      outcome = result.outcome;
      reply = std::string(result.reply);
      duration = result.duration;
    });
  }
  std::uint64_t fallbacks() const { return stats->snapshot().version_fallbacks; }

  std::shared_ptr<ScriptedOrigin> inner = std::make_shared<ScriptedOrigin>();
  std::shared_ptr<PolicyStats> stats = std::make_shared<PolicyStats>("feat:");
  std::shared_ptr<PolicyRuntime> runtime;
  std::shared_ptr<VersionedOrigin> versioned;
  int answers = 0;
  Outcome outcome = Outcome::failure;
  std::string reply;
  std::chrono::nanoseconds duration{0};
};

using Argv = std::vector<std::string>;

}  // namespace

TEST_CASE("a value of the current version is answered as is", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(2, 1);
  CHECK(f.versioned->name() == "redis");
  f.get({"GET", "feat:U1:v2"});
  REQUIRE(f.inner->requests == std::vector<Argv>{{"GET", "feat:U1:v2"}});
  f.inner->answer(Outcome::value, "$2\r\nv2\r\n");
  CHECK(f.answers == 1);
  CHECK(f.reply == "$2\r\nv2\r\n");
  CHECK(f.inner->requests.size() == 1);
  CHECK(f.fallbacks() == 0);
}

TEST_CASE("a nil in the current version is read from the previous one", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(2, 1);
  f.get({"GET", "feat:U1:v2"});
  f.inner->answer(Outcome::nil, "$-1\r\n", 3ms);
  CHECK(f.answers == 0);
  REQUIRE(f.inner->requests.size() == 2);
  CHECK(f.inner->requests[1] == Argv{"GET", "feat:U1:v1"});
  f.inner->answer(Outcome::value, "$2\r\nv1\r\n", 4ms);
  CHECK(f.answers == 1);
  CHECK(f.outcome == Outcome::value);
  CHECK(f.reply == "$2\r\nv1\r\n");
  CHECK(f.duration == 7ms);
  CHECK(f.fallbacks() == 1);
}

TEST_CASE("the previous version's answer is final, nil or failure", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(5, 4);
  f.get({"HGET", "feat:h:v5", "field"});
  f.inner->answer(Outcome::nil, "$-1\r\n");
  REQUIRE(f.inner->requests.size() == 2);
  CHECK(f.inner->requests[1] == Argv{"HGET", "feat:h:v4", "field"});
  SECTION("nil") {
    f.inner->answer(Outcome::nil, "$-1\r\n");
    CHECK(f.outcome == Outcome::nil);
  }
  SECTION("failure") {
    f.inner->answer(Outcome::failure, "ERR upstream unavailable");
    CHECK(f.outcome == Outcome::failure);
    CHECK(f.reply == "ERR upstream unavailable");
  }
  CHECK(f.answers == 1);
  CHECK(f.inner->requests.size() == 2);
}

TEST_CASE("no fallback without another previous version", "[versioned]") {
  Fixture f;
  SECTION("none known") { f.runtime->versions().set(2, 0); }
  SECTION("the same version") { f.runtime->versions().set(2, 2); }
  f.get({"GET", "feat:U1:v2"});
  f.inner->answer(Outcome::nil, "$-1\r\n");
  CHECK(f.answers == 1);
  CHECK(f.outcome == Outcome::nil);
  CHECK(f.inner->requests.size() == 1);
  CHECK(f.fallbacks() == 0);
}

TEST_CASE("a key without a version suffix is passed through", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(2, 1);
  f.get({"GET", "feat:U1"});
  f.inner->answer(Outcome::nil, "$-1\r\n");
  CHECK(f.answers == 1);
  CHECK(f.inner->requests.size() == 1);
}

TEST_CASE("errors and failures of the current version are not fallen back from", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(2, 1);
  f.get({"GET", "feat:U1:v2"});
  f.inner->answer(Outcome::error_reply, "-WRONGTYPE x\r\n");
  CHECK(f.answers == 1);
  CHECK(f.outcome == Outcome::error_reply);
  CHECK(f.inner->requests.size() == 1);
}

TEST_CASE("an MGET's nil elements are read from the previous version and spliced in",
          "[versioned]") {
  Fixture f;
  f.runtime->versions().set(3, 2);
  f.get({"mget", "feat:a:v3", "feat:b:v3", "feat:c:v3"});
  f.inner->answer(Outcome::value, "*3\r\n$-1\r\n$2\r\nb3\r\n$-1\r\n");
  REQUIRE(f.inner->requests.size() == 2);
  CHECK(f.inner->requests[1] == Argv{"mget", "feat:a:v2", "feat:c:v2"});
  CHECK(f.fallbacks() == 2);
  f.inner->answer(Outcome::value, "*2\r\n$2\r\na2\r\n$-1\r\n");
  CHECK(f.answers == 1);
  CHECK(f.outcome == Outcome::value);
  CHECK(f.reply == "*3\r\n$2\r\na2\r\n$2\r\nb3\r\n$-1\r\n");
}

TEST_CASE("an MGET without nil elements needs one fetch", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(3, 2);
  f.get({"MGET", "feat:a:v3", "feat:b:v3"});
  f.inner->answer(Outcome::value, "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  CHECK(f.answers == 1);
  CHECK(f.reply == "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  CHECK(f.inner->requests.size() == 1);
}

TEST_CASE("an MGET whose fallback fails answers the failure", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(3, 2);
  f.get({"MGET", "feat:a:v3", "feat:b:v3"});
  f.inner->answer(Outcome::value, "*2\r\n$-1\r\n$1\r\nb\r\n");
  SECTION("no answer") {
    f.inner->answer(Outcome::failure, "ERR upstream connection lost");
    CHECK(f.outcome == Outcome::failure);
  }
  SECTION("a reply of another shape") {
    f.inner->answer(Outcome::value, "*3\r\n$-1\r\n$-1\r\n$-1\r\n");
    CHECK(f.outcome == Outcome::failure);
  }
  CHECK(f.answers == 1);
}

TEST_CASE("the fallback uses the previous version known when the fetch began", "[versioned]") {
  Fixture f;
  f.runtime->versions().set(2, 1);
  f.get({"GET", "feat:U1:v2"});
  f.runtime->versions().set(3, 2);  // a rollover while the fetch is out
  f.inner->answer(Outcome::nil, "$-1\r\n");
  REQUIRE(f.inner->requests.size() == 2);
  CHECK(f.inner->requests[1] == Argv{"GET", "feat:U1:v1"});
  f.inner->answer(Outcome::value, "$1\r\nx\r\n");
  CHECK(f.answers == 1);
}
