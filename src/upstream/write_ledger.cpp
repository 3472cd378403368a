// A poll that started after a write's answer reads an offset that includes the write: Redis
// adds a write to its replication stream before it replies.
#include "upstream/write_ledger.hpp"

#include <algorithm>

namespace corral::upstream {

namespace {
// Clients whose writes every replica has: forgotten once the ledger grows past this.
constexpr std::size_t kLedgerPruneSize = 4096;
}  // namespace

void WriteLedger::write_answered(std::size_t client, std::string_view primary) {
  auto& writes = clients_[client];
  if (writes.pending > 0) --writes.pending;
  const auto poll = view_->next_primary_poll();
  for (auto& answered : writes.answered) {
    if (answered.primary == primary) {
      answered.poll = poll;
      return;
    }
  }
  writes.answered.push_back({std::string(primary), poll});
}

std::optional<std::uint64_t> WriteLedger::need_of(const ClientWrites& writes,
                                                  std::string_view primary,
                                                  const ReplicaSnapshot& snapshot) const {
  if (writes.pending > 0) return std::nullopt;
  std::uint64_t need = 0;
  for (const auto& answered : writes.answered) {
    if (answered.primary != primary && answered.primary != kEveryPrimary) continue;
    const auto offset = snapshot.primary_offset_since(primary, answered.poll);
    if (!offset) return std::nullopt;
    need = std::max(need, *offset);
  }
  return need;
}

std::optional<std::uint64_t> WriteLedger::must_have(std::size_t client, std::string_view primary,
                                                    const ReplicaSnapshot& snapshot) const {
  const auto it = clients_.find(client);
  if (it == clients_.end()) return 0;
  return need_of(it->second, primary, snapshot);
}

void WriteLedger::prune(const ReplicaSnapshot& snapshot) {
  if (clients_.size() < kLedgerPruneSize || snapshot.replicas.empty()) return;
  std::erase_if(clients_, [&](const auto& entry) {
    return std::all_of(snapshot.replicas.begin(), snapshot.replicas.end(), [&](const auto& r) {
      const auto need = need_of(entry.second, r.primary, snapshot);
      return need && *need <= r.offset;
    });
  });
}

void WriteAnswer::answered() {
  if (auto ledger = ledger_.lock()) ledger->write_answered(client_, primary());
}

void WriteAnswer::on_reply(std::uint64_t tag, std::string_view reply) {
  answered();
  inner_->on_reply(tag, reply);
}

void WriteAnswer::on_failure(std::uint64_t tag, std::string_view error) {
  answered();
  inner_->on_failure(tag, error);
}

void WriteAnswer::on_error(std::uint64_t tag, ErrorKind kind, std::string_view error) {
  answered();
  inner_->on_error(tag, kind, error);
}

}  // namespace corral::upstream
