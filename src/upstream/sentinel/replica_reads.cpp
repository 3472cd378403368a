// A client's read may go to a replica only when nothing it wrote is missing there: no write of
// its in flight, and the replica's polled offset at least the primary's offset polled after
// its last write was answered (write_ledger.hpp).
#include "upstream/sentinel/replica_reads.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/values.hpp"
#include "upstream/sentinel/sentinel_links.hpp"
#include "upstream/single/pool.hpp"
#include "upstream/write_ledger.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

ReplicaReads::ReplicaReads(const asio::any_io_executor& executor,
                           const config::UpstreamSettings& settings, metrics::ThreadStats* stats,
                           SentinelLinks& primary, std::shared_ptr<const ReplicaView> view)
    : executor_(executor),
      settings_(settings),
      stats_(stats),
      primary_(primary),
      view_(view),
      ledger_(std::make_shared<WriteLedger>(std::move(view))),
      read_counts_(primary.status()->add_read_counts()) {}

ReplicaReads::~ReplicaReads() {
  for (auto& [address, pool] : pools_) pool->close();
}

bool ReplicaReads::send(const Routed& command, std::uint64_t tag,
                        const std::shared_ptr<ReplyTarget>& target) {
  if (!command.shape.read_only()) return send_write(command, tag, target);
  const auto choice = pick_replica(command.affinity, command.database, command.protocol);
  switch (choice.place) {
    case ReadPlace::replica:
      read_counts_->count(ReadRoute::replica);
      return choice.replica->send_shared(command.database, command.affinity, command.bytes, target,
                                         tag, command.protocol);
    case ReadPlace::own_writes_on_primary:
      read_counts_->count(ReadRoute::primary_own_writes);
      break;
    case ReadPlace::no_usable_replica:
      if (settings_.read_from == config::ReadFrom::replica) {
        read_counts_->count(ReadRoute::refused_no_usable_replica);
        target->on_error(tag, ErrorKind::upstream_unavailable, kErrNoUsableReplica);
        return true;
      }
      read_counts_->count(ReadRoute::primary_no_usable_replica);
      break;
  }
  return primary_.send_shared(command.database, command.affinity, command.bytes, target, tag,
                              command.protocol);
}

bool ReplicaReads::send_write(const Routed& command, std::uint64_t tag,
                              const std::shared_ptr<ReplyTarget>& target) {
  if (!settings_.read_your_writes) {
    return primary_.send_shared(command.database, command.affinity, command.bytes, target, tag,
                                command.protocol);
  }
  ledger_->write_sent(command.affinity);
  auto answer = std::make_shared<WriteAnswer>(ledger_, command.affinity, target);
  if (primary_.send_shared(command.database, command.affinity, command.bytes, std::move(answer),
                           tag, command.protocol)) {
    return true;
  }
  // Not sent: nothing of it can be on any server.
  ledger_->write_answered(command.affinity, "");
  return false;
}

ReplicaReads::ReadChoice ReplicaReads::pick_replica(std::size_t client, int database,
                                                    int protocol) {
  sync_replicas();
  const auto need = ledger_->must_have(client, "", snapshot_);
  if (!need) return {ReadPlace::own_writes_on_primary};
  const std::uint64_t must_have = *need;
  // The same replica for a client's reads while the usable set stays the same, so that one
  // client does not read a newer value from one replica and then an older one from another.
  std::size_t usable = 0;
  bool own_writes_missing = false;
  for (const auto& replica : snapshot_.replicas) {
    if (replica.offset < must_have) {
      own_writes_missing = true;
    } else {
      ++usable;
    }
  }
  if (usable == 0) {
    return {own_writes_missing ? ReadPlace::own_writes_on_primary : ReadPlace::no_usable_replica};
  }
  std::size_t wanted = client % usable;
  for (const auto& replica : snapshot_.replicas) {
    if (replica.offset < must_have) continue;
    if (wanted-- != 0) continue;
    auto& pool = pools_[config::format_endpoint(replica.address)];
    auto& connection = pool->shared(database, client, protocol);
    if (connection.state() != Link::State::ready) break;
    return {ReadPlace::replica, pool.get()};
  }
  return {ReadPlace::no_usable_replica};
}

bool ReplicaReads::fill(std::string_view bytes, int database,
                        std::optional<std::chrono::steady_clock::time_point> seen,
                        const std::shared_ptr<ReplyTarget>& target) {
  if (!seen) return false;
  sync_replicas();
  const auto need = snapshot_.primary_offset_after("", *seen);
  if (!need) return false;
  std::vector<Pool*> qualified;
  for (const auto& replica : snapshot_.replicas) {
    if (replica.offset < *need) continue;
    const auto it = pools_.find(config::format_endpoint(replica.address));
    if (it == pools_.end()) continue;
    if (it->second->shared(database, 0, 2).state() == Link::State::ready)
      qualified.push_back(it->second.get());
  }
  if (qualified.empty()) return false;
  Pool* pool = qualified[fills_++ % qualified.size()];
  return pool->send_shared(database, 0, bytes, target, 0, 2);
}

void ReplicaReads::sync_replicas() {
  const auto version = view_->version();
  if (version == seen_version_) return;
  seen_version_ = version;
  snapshot_ = view_->snapshot();
  ledger_->prune(snapshot_);
  std::map<std::string, std::shared_ptr<Pool>> next;
  for (const auto& replica : snapshot_.replicas) {
    const auto address = config::format_endpoint(replica.address);
    if (auto it = pools_.find(address); it != pools_.end()) {
      next.emplace(address, std::move(it->second));
      pools_.erase(it);
      continue;
    }
    auto settings = settings_;
    settings.servers = {replica.address};
    auto pool = std::make_shared<Pool>(executor_, settings, stats_, nullptr);
    pool->start();
    next.emplace(address, std::move(pool));
  }
  for (auto& [address, pool] : pools_) retire(std::move(pool));
  pools_ = std::move(next);
}

void ReplicaReads::retire(std::shared_ptr<Pool> pool) {
  // Reads already sent to a replica that left the list still get their replies.
  const auto timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(settings_.command_timeout);
  asio::co_spawn(
      executor_,
      [pool = std::move(pool), timeout]() -> asio::awaitable<void> {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        timer.expires_after(timeout);
        boost::system::error_code ignored;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        pool->close();
      },
      asio::detached);
}

}  // namespace corral::upstream
