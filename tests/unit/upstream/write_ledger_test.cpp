// Tests read-your-writes bookkeeping (WriteLedger): which primary offset a client's read waits
// for, per primary and for writes to every primary, and the max_replica_lag rule.
#include <catch2/catch.hpp>

#include <memory>

#include "upstream/replica_view.hpp"
#include "upstream/replication_info.hpp"
#include "upstream/write_ledger.hpp"

using namespace corral::upstream;

TEST_CASE("a client that wrote nothing may read any replica", "[upstream][replica]") {
  auto view = std::make_shared<ReplicaView>();
  WriteLedger ledger(view);
  CHECK(ledger.must_have(7, "a:1", view->snapshot()) == 0u);
}

TEST_CASE("a write in flight keeps the client's reads on every primary", "[upstream][replica]") {
  auto view = std::make_shared<ReplicaView>();
  WriteLedger ledger(view);
  ledger.write_sent(7);
  CHECK_FALSE(ledger.must_have(7, "a:1", view->snapshot()));
  CHECK_FALSE(ledger.must_have(7, "b:1", view->snapshot()));
  CHECK(ledger.must_have(8, "a:1", view->snapshot()) == 0u);  // another client
}

TEST_CASE("an answered write waits for its primary's next poll, on that primary only",
          "[upstream][replica]") {
  auto view = std::make_shared<ReplicaView>();
  WriteLedger ledger(view);
  const auto before = view->begin_primary_poll();  // started before the answer
  ledger.write_sent(7);
  ledger.write_answered(7, "a:1");
  view->finish_primary_poll("a:1", before, 100);
  view->finish_primary_poll("b:1", before, 500);
  CHECK_FALSE(ledger.must_have(7, "a:1", view->snapshot()));  // that poll may predate it
  CHECK(ledger.must_have(7, "b:1", view->snapshot()) == 0u);  // nothing written on b
  const auto after = view->begin_primary_poll();
  view->finish_primary_poll("a:1", after, 150);
  view->finish_primary_poll("b:1", after, 600);
  CHECK(ledger.must_have(7, "a:1", view->snapshot()) == 150u);
  CHECK(ledger.must_have(7, "b:1", view->snapshot()) == 0u);
}

TEST_CASE("a write to every primary waits on each of them", "[upstream][replica]") {
  auto view = std::make_shared<ReplicaView>();
  WriteLedger ledger(view);
  ledger.write_sent(7);
  ledger.write_answered(7, WriteLedger::kEveryPrimary);
  const auto poll = view->begin_primary_poll();
  view->finish_primary_poll("a:1", poll, 150);
  CHECK(ledger.must_have(7, "a:1", view->snapshot()) == 150u);
  CHECK_FALSE(ledger.must_have(7, "b:1", view->snapshot()));  // b not polled since
  view->finish_primary_poll("b:1", poll, 700);
  CHECK(ledger.must_have(7, "b:1", view->snapshot()) == 700u);
}

TEST_CASE("a later write to the same primary replaces the earlier one's wait",
          "[upstream][replica]") {
  auto view = std::make_shared<ReplicaView>();
  WriteLedger ledger(view);
  ledger.write_sent(7);
  ledger.write_answered(7, "a:1");
  view->finish_primary_poll("a:1", view->begin_primary_poll(), 100);
  ledger.write_sent(7);
  ledger.write_answered(7, "a:1");
  CHECK_FALSE(ledger.must_have(7, "a:1", view->snapshot()));
  view->finish_primary_poll("a:1", view->begin_primary_poll(), 180);
  CHECK(ledger.must_have(7, "a:1", view->snapshot()) == 180u);
}

TEST_CASE("publishing the primaries still polled forgets the others' offsets",
          "[upstream][replica]") {
  ReplicaView view;
  const auto poll = view.begin_primary_poll();
  view.finish_primary_poll("a:1", poll, 10);
  view.finish_primary_poll("b:1", poll, 20);
  const std::vector<std::string> kept{"b:1"};
  view.publish_replicas({}, &kept);
  CHECK_FALSE(view.snapshot().primary_offset_since("a:1", poll));
  CHECK(view.snapshot().primary_offset_since("b:1", poll) == 20u);
}

TEST_CASE("max_replica_lag: a replica further behind, or of an unknown primary offset, is out",
          "[upstream][replica]") {
  CHECK(within_replica_lag(std::nullopt, 5, 0));  // no limit
  CHECK(within_replica_lag(2000, 1000, 1024));
  CHECK(within_replica_lag(2024, 1000, 1024));
  CHECK_FALSE(within_replica_lag(2025, 1000, 1024));
  CHECK(within_replica_lag(1000, 1200, 1024));  // polled after the primary: ahead of it
  CHECK_FALSE(within_replica_lag(std::nullopt, 1000, 1024));
}
