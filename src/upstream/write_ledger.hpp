// Read-your-writes bookkeeping of one io thread, shared by the Sentinel and the cluster replica
// reads: each client's writes in flight, and for each primary it wrote to, the first poll of
// that primary that started after its last write there was answered. A replica may serve the
// client's read only once its offset reaches what that poll read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "upstream/replica_view.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

class WriteLedger {
 public:
  // A write that reached no one primary known in advance (a fan-out, a keyless command): it
  // counts as a write to every primary.
  static constexpr std::string_view kEveryPrimary = "*";

  explicit WriteLedger(std::shared_ptr<const ReplicaView> view) : view_(std::move(view)) {}

  void write_sent(std::size_t client) { ++clients_[client].pending; }
  // The client's write to `primary` was answered (or failed: it may have run).
  void write_answered(std::size_t client, std::string_view primary);
  // The offset a replica of `primary` must have reached before it may serve `client`'s read:
  // 0 when the client wrote nothing there, nullopt while its reads must stay on the primary (a
  // write in flight, or no poll of the primary since its last write there has finished).
  std::optional<std::uint64_t> must_have(std::size_t client, std::string_view primary,
                                         const ReplicaSnapshot& snapshot) const;
  // Past a few thousand clients, forgets those whose writes every listed replica has (a client
  // that disconnected leaves its entry behind).
  void prune(const ReplicaSnapshot& snapshot);
  std::size_t clients() const { return clients_.size(); }

 private:
  struct Answered {
    std::string primary;
    std::uint64_t poll = 0;  // the first poll that started after the answer
  };
  struct ClientWrites {
    int pending = 0;
    std::vector<Answered> answered;  // one per primary: a later answer replaces an earlier one
  };
  std::optional<std::uint64_t> need_of(const ClientWrites& writes, std::string_view primary,
                                       const ReplicaSnapshot& snapshot) const;

  std::shared_ptr<const ReplicaView> view_;
  std::unordered_map<std::size_t, ClientWrites> clients_;
};

// Passes a write's outcome on, telling the ledger first: a failure counts as an answer (the
// write may have run). primary() names the primary that holds the write when it is answered.
class WriteAnswer : public ReplyTarget {
 public:
  WriteAnswer(std::weak_ptr<WriteLedger> ledger, std::size_t client,
              std::shared_ptr<ReplyTarget> inner, std::string primary = {})
      : ledger_(std::move(ledger)),
        client_(client),
        inner_(std::move(inner)),
        primary_(std::move(primary)) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override;
  void on_failure(std::uint64_t tag, std::string_view error) override;
  void on_error(std::uint64_t tag, ErrorKind kind, std::string_view error) override;
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override {
    inner_->note_phases(tag, phases);
  }

 protected:
  virtual std::string primary() const { return primary_; }

 private:
  void answered();
  std::weak_ptr<WriteLedger> ledger_;
  std::size_t client_;
  std::shared_ptr<ReplyTarget> inner_;
  std::string primary_;
};

}  // namespace corral::upstream
