// upstreams: and routes: load into Settings, describe() shows them back, and every mistake of
// the two sections is reported with its path.
#include <algorithm>

#include "config/loader.hpp"
#include "config/settings_dump.hpp"
#include "test_support.hpp"

using namespace corral::config;
using namespace corral::config::test;

namespace {

bool has_error(const std::vector<std::string>& errors, const std::string& text) {
  return std::any_of(errors.begin(), errors.end(),
                     [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

const char* kRouted = R"(
upstream:
  address: redis://127.0.0.1:6379
upstreams:
  sessions:
    address: redis://127.0.0.1:6400/2
    command_timeout: 3s
  legacy:
    cluster: [redis://127.0.0.1:7000]
routes:
  - prefix: "session:"
    upstream: sessions
  - prefix: "user:"
    upstream: default
    mirror: {upstream: legacy, reads_percent: 10, max_queue: 500}
)";

}  // namespace

TEST_CASE("named upstreams and routes load", "[config][routes]") {
  const Settings s = must_load(yaml(kRouted));
  REQUIRE(s.upstreams.size() == 2);
  const auto& sessions = s.upstreams.at("sessions");
  CHECK(sessions.servers.at(0).port == 6400);
  CHECK(sessions.database == 2);
  CHECK(sessions.command_timeout == std::chrono::seconds(3));
  CHECK(s.upstreams.at("legacy").cluster);
  REQUIRE(s.routes.size() == 2);
  CHECK(s.routes[0].prefix == "session:");
  CHECK(s.routes[0].upstream == "sessions");
  CHECK_FALSE(s.routes[0].mirror);
  REQUIRE(s.routes[1].mirror);
  CHECK(s.routes[1].mirror->upstream == "legacy");
  CHECK(s.routes[1].mirror->reads_percent == 10);
  CHECK(s.routes[1].mirror->max_queue == 500);
}

TEST_CASE("describe shows routes and upstreams, and loads back the same", "[config][routes]") {
  const Settings s = must_load(yaml(kRouted));
  const std::string text = describe(s);
  CHECK(text.find("sessions:") != std::string::npos);
  const Settings again = must_load(text);
  CHECK(again.upstreams == s.upstreams);
  CHECK(again.routes == s.routes);
}

TEST_CASE("route mistakes name their path", "[config][routes]") {
  const auto errors = errors_of(yaml(R"(
upstreams:
  default: {address: redis://127.0.0.1:1}
  "bad name": {address: redis://127.0.0.1:1}
  spare: {address: redis://127.0.0.1:1}
  sessions: {address: redis://127.0.0.1:2, topology_refresh: 1s}
routes:
  - prefix: "a:"
    upstream: nowhere
  - prefix: "a:"
    upstream: sessions
  - upstream: sessions
  - prefix: "m:"
    upstream: sessions
    mirror: {upstream: sessions}
  - prefix: "feat:x"
    upstream: sessions
policies:
  - prefix: "feat:"
)"));
  CHECK(has_error(errors, "upstreams.default: \"default\" is the name of upstream:"));
  CHECK(has_error(errors, "upstreams.bad name: an upstream name is letters"));
  CHECK(has_error(errors, "upstreams.spare: no route sends anything to it"));
  CHECK(has_error(errors, "upstreams.sessions.topology_refresh: only applies with"));
  CHECK(has_error(errors, "routes[0].upstream: no upstream named \"nowhere\""));
  CHECK(has_error(errors, "routes[1].prefix: duplicate prefix \"a:\""));
  CHECK(has_error(errors, "routes[2].prefix: required"));
  CHECK(has_error(errors, "routes[3].mirror.upstream: must differ from the route's upstream"));
  CHECK(has_error(errors,
                  "routes[4].prefix: splits policy \"feat:\" between upstreams default "
                  "and sessions"));
}

TEST_CASE("a route inside a policy that goes to the policy's own upstream is fine",
          "[config][routes]") {
  const Settings s = must_load(yaml(R"(
upstreams:
  sessions: {address: redis://127.0.0.1:2}
routes:
  - {prefix: "feat:", upstream: sessions}
  - {prefix: "feat:x", upstream: sessions}
policies:
  - prefix: "feat:"
)"));
  CHECK(s.routes.size() == 2);
}

TEST_CASE("a policy's prefer_replica reads its route's upstream", "[config][routes]") {
  const std::string sentinel_route = yaml(R"(
upstreams:
  replicated:
    sentinel: {master: m, addresses: [redis://127.0.0.1:26379]}
    read_from: prefer_replica
routes:
  - {prefix: "r:", upstream: replicated}
policies:
  - {prefix: "r:", read_from: prefer_replica}
  - {prefix: "plain:", read_from: prefer_replica}
)");
  const auto errors = errors_of(sentinel_route);
  REQUIRE(errors.size() == 1);
  CHECK(has_error(errors, "policies[1].read_from: prefer_replica needs"));
}
