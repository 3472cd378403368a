// The lines of the upstream's MONITOR that Corral's feed takes: a script's `[db lua]` lines after
// an EVAL/FCALL line from one of Corral's connections that the feed showed, no one else's.
#include <catch2/catch.hpp>

#include <string>

#include "proxy/local/script_monitor.hpp"

using namespace corral::proxy;

namespace {
constexpr std::string_view kOurs = "127.0.0.1:5000";
bool ours(std::string_view address) { return address == kOurs; }

std::string line(std::string_view address, std::string_view arguments) {
  return "+1700000000.000042 [0 " + std::string(address) + "] " + std::string(arguments) + "\r\n";
}
}  // namespace

TEST_CASE("script monitor: address and arguments of a MONITOR line") {
  const std::string eval = line(kOurs, "\"EVAL\" \"return 1\" \"0\"");
  CHECK(ScriptMonitor::address(eval) == kOurs);
  CHECK(ScriptMonitor::arguments(eval) == "\"EVAL\" \"return 1\" \"0\"");
  CHECK(ScriptMonitor::address(line("lua", "\"set\" \"k\" \"v\"")) == "lua");
  CHECK(ScriptMonitor::address(line("[::1]:6000", "\"GET\" \"k\"")) == "[::1]:6000");
  CHECK(ScriptMonitor::arguments("+OK\r\n").empty());
}

TEST_CASE("script monitor: lines of the scripts the feed showed, from Corral's connections") {
  ScriptMonitor monitor;
  const std::string eval = line(kOurs, "\"EVAL\" \"redis.call('set','k','v')\" \"0\"");
  const std::string call = line("lua", "\"set\" \"k\" \"v\"");
  // Not shown by the feed (Corral's own script, a fleet lock's): not followed.
  CHECK_FALSE(monitor.follows(eval, ours));
  CHECK_FALSE(monitor.follows(call, ours));

  monitor.expect_script(line("127.0.0.1:40000", "\"EVAL\" \"redis.call('set','k','v')\" \"0\""));
  monitor.expect_script(line("127.0.0.1:40000", "\"GET\" \"k\""));  // runs no script
  CHECK_FALSE(monitor.follows(line(kOurs, "\"GET\" \"k\""), ours));
  CHECK_FALSE(monitor.follows(eval, ours));  // the script's own line is the feed's already
  CHECK(monitor.follows(call, ours));
  CHECK(monitor.follows(line("lua", "\"get\" \"k\""), ours));
  CHECK_FALSE(monitor.follows(line(kOurs, "\"GET\" \"k\""), ours));  // the script ended
  CHECK_FALSE(monitor.follows(call, ours));
  CHECK_FALSE(monitor.follows(eval, ours));  // matched once: a second run was not shown
  CHECK_FALSE(monitor.follows(call, ours));
}

TEST_CASE("script monitor: another client's identical script is not followed") {
  ScriptMonitor monitor;
  const std::string args = "\"fcall\" \"f\" \"0\"";
  const std::string call = line("lua", "\"set\" \"k\" \"v\"");
  monitor.expect_script(line("127.0.0.1:40000", args));
  CHECK_FALSE(monitor.follows(line("127.0.0.1:7000", args), ours));
  CHECK_FALSE(monitor.follows(call, ours));
  CHECK_FALSE(monitor.follows(line(kOurs, args), ours));  // still expected: now it is Corral's
  CHECK(monitor.follows(call, ours));
}
