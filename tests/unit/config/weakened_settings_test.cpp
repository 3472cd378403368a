// weakened_settings(): each weakening setting is named, and the defaults weaken nothing.
#include "config/weakened_settings.hpp"

#include <algorithm>

#include "test_support.hpp"

using namespace corral::config;
using namespace corral::config::test;

namespace {

std::vector<std::string> named(const Settings& s) {
  std::vector<std::string> out;
  for (const auto& w : weakened_settings(s)) out.push_back(w.setting);
  return out;
}

}  // namespace

TEST_CASE("the defaults weaken nothing", "[config][weakened]") {
  CHECK(named(must_load("threads: 1\n")).empty());
  // TLS to the upstream, verified: nothing to say.
  CHECK(named(must_load("upstream: { address: rediss://h:6379 }\n")).empty());
  // Off loopback with a password: fine.
  CHECK(named(must_load("listen: 0.0.0.0:6380\nclient: { password: pw }\n")).empty());
}

TEST_CASE("each weakening setting is named", "[config][weakened]") {
  CHECK(named(must_load("upstream: { address: rediss://h:6379, tls: { verify: false } }\n")) ==
        std::vector<std::string>{"upstream.tls.verify"});
  CHECK(named(must_load("listen: 0.0.0.0:6380\n")) == std::vector<std::string>{"client.password"});
  const auto allowed = weakened_settings(must_load("client: { allow_commands: [FLUSHALL] }\n"));
  REQUIRE(allowed.size() == 1);
  CHECK(allowed[0].setting == "client.allow_commands");
  CHECK(allowed[0].risk.find("FLUSHALL") != std::string::npos);
}
