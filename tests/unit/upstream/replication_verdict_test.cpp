// Redis's answer to a SYNC/PSYNC as the connection reads it: keep-alives, then acceptance or an
// error line, whatever the bytes' split across reads.
#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "upstream/replication_verdict.hpp"

using corral::upstream::read_replication_verdict;
using Kind = corral::upstream::ReplicationVerdict::Kind;

TEST_CASE("nothing yet, or keep-alives alone: the verdict is due", "[replication]") {
  CHECK(read_replication_verdict("").kind == Kind::due);
  const auto verdict = read_replication_verdict("\n\n\n");
  CHECK(verdict.kind == Kind::due);
  CHECK(verdict.keep_alives == 3);
}

TEST_CASE("FULLRESYNC, CONTINUE and an old-style SYNC's RDB line accept", "[replication]") {
  for (const std::string_view first : {"+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 0\r\n",
                                       "+CONTINUE\r\n", "$175\r\nREDIS0010", "+"}) {
    const auto verdict = read_replication_verdict(first);
    CHECK(verdict.kind == Kind::accepted);
    CHECK(verdict.keep_alives == 0);
  }
  const auto after_keep_alives = read_replication_verdict("\n\n$175\r\nREDIS");
  CHECK(after_keep_alives.kind == Kind::accepted);
  CHECK(after_keep_alives.keep_alives == 2);
}

TEST_CASE("an error line refuses, once it is whole, at every split", "[replication]") {
  const std::string answer =
      "\n-NOPERM this user has no permissions to run the 'psync' command\r\n";
  for (std::size_t cut = 0; cut < answer.size(); ++cut) {
    const auto verdict = read_replication_verdict(std::string_view(answer).substr(0, cut));
    CHECK(verdict.kind == Kind::due);
    CHECK(verdict.keep_alives == (cut == 0 ? 0u : 1u));
  }
  const auto whole = read_replication_verdict(answer + "+OK\r\n");
  CHECK(whole.kind == Kind::refused);
  CHECK(whole.keep_alives == 1);
  CHECK(whole.error_size == answer.size() - 1);
}
