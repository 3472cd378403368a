// CLIENT PAUSE WRITE's judgement of a request: may-replicate commands, script shebang flags,
// EVALSHA of remembered scripts, FCALL by the functions FUNCTION LIST reported.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "proxy/commands/command_table.hpp"
#include "proxy/local/function_flags.hpp"
#include "proxy/local/pause_hold.hpp"

using namespace corral::proxy;

namespace {
std::uint32_t judge(std::vector<std::string_view> argv) {
  const CommandSpec* row = find_command(argv[0]);
  REQUIRE(row != nullptr);
  return pause_flags(*row, argv);
}

// SHA1 of "#!lua flags=no-writes\nreturn 7" (sha1sum).
constexpr std::string_view kNoWritesSha = "699874ad3a279c5fdd0d58c418605cd156ef306f";
}  // namespace

TEST_CASE("pause_flags: writes and may-replicate commands, reads are free") {
  CHECK(judge({"SET", "k", "v"}) == kWrite);
  CHECK(judge({"PUBLISH", "ch", "m"}) == kMayReplicate);
  CHECK(judge({"PFCOUNT", "h"}) == kMayReplicate);
  CHECK(judge({"GET", "k"}) == 0);
  CHECK(judge({"EVAL_RO", "return 1", "0"}) == 0);
}

TEST_CASE("pause_flags: EVAL by the flags its shebang declares") {
  CHECK(judge({"EVAL", "return 1", "0"}) == (kWrite | kMayReplicate));  // no shebang: may write
  CHECK(judge({"EVAL", "#!lua flags=no-writes\nreturn 1", "0"}) == 0);
  CHECK(judge({"EVAL", "#!lua flags=allow-oom,no-writes\nreturn 1", "0"}) == 0);
  CHECK(judge({"EVAL", "#!lua\nreturn 1", "0"}) == kWrite);
  CHECK(judge({"EVAL", "#!lua flags=allow-stale\nreturn 1", "0"}) == kWrite);
  // Shebangs Redis refuses are judged by the command's own flags (Redis answers their error).
  CHECK(judge({"EVAL", "#!python flags=no-writes\nreturn 1", "0"}) == (kWrite | kMayReplicate));
  CHECK(judge({"EVAL", "#!lua nonsense\nreturn 1", "0"}) == (kWrite | kMayReplicate));
}

TEST_CASE("pause_flags: EVALSHA of a script seen through Corral, by its flags") {
  const std::string sha(kNoWritesSha);
  CHECK(judge({"EVALSHA", sha, "0"}) == (kWrite | kMayReplicate));  // not seen yet
  remember_script("#!lua flags=no-writes\nreturn 7");
  CHECK(judge({"EVALSHA", sha, "0"}) == 0);
  std::string upper = sha;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(judge({"EVALSHA", upper, "0"}) == 0);  // Redis lower-cases the SHA too
}

TEST_CASE("pause_flags: FCALL by the function's flags from FUNCTION LIST") {
  CHECK(judge({"FCALL", "ro_fn", "0"}) == (kWrite | kMayReplicate));  // unknown: held
  // FUNCTION LIST's RESP2 reply: one library with a no-writes function and another.
  const std::string list =
      "*1\r\n*8\r\n$12\r\nlibrary_name\r\n$3\r\nlib\r\n$6\r\nengine\r\n$3\r\nLUA\r\n"
      "$9\r\nfunctions\r\n*2\r\n"
      "*6\r\n$4\r\nname\r\n$5\r\nro_fn\r\n$11\r\ndescription\r\n$-1\r\n"
      "$5\r\nflags\r\n*1\r\n$9\r\nno-writes\r\n"
      "*6\r\n$4\r\nname\r\n$5\r\nrw_fn\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n"
      "$4\r\ncode\r\n$-1\r\n";
  REQUIRE(store_function_list(list));
  CHECK(function_writes("ro_fn") == DeclaredWrites::no_writes);
  CHECK(judge({"FCALL", "ro_fn", "0"}) == 0);
  CHECK(judge({"FCALL", "rw_fn", "0"}) == kWrite);
  CHECK(judge({"FCALL", "other", "0"}) == (kWrite | kMayReplicate));
  CHECK_FALSE(store_function_list("-ERR unknown command\r\n"));
  CHECK(function_writes("ro_fn") == DeclaredWrites::no_writes);  // an error keeps what was known
}
