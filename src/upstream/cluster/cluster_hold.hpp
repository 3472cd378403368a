// The client requests of one io thread that wait for their slot's primary during a failover:
// one queue in arrival order, retried together every 100 ms, so that requests of one slot reach
// the promoted replica in the order their clients sent them.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace corral::upstream {

class ClusterCommand;
class ClusterLinks;

class ClusterHold {
 public:
  explicit ClusterHold(ClusterLinks& links) : links_(links) {}
  ClusterHold(const ClusterHold&) = delete;
  ClusterHold& operator=(const ClusterHold&) = delete;

  // True while a request of `slot` waits here: a newer one must queue behind it, or it could
  // overtake it on the promoted replica (an INCR then a GET of one key, say).
  bool holding(int slot) const { return !waiting_.empty() && waiting_[slot] > 0; }
  // For the request being retried: one of its slot, ahead of it, went back to wait.
  bool requeued(int slot) const { return !requeued_.empty() && requeued_[slot] > 0; }
  // Queues `command` (of `slot`); it is started again on the next retry pass. After close(), it
  // is answered with kErrClosed instead.
  void add(int slot, std::shared_ptr<ClusterCommand> command);
  std::size_t size() const { return queue_.size() + arrivals_.size(); }
  // The thread's connections are closing (shutdown): what waits is answered with kErrClosed, and
  // nothing is retried on connections that are gone.
  void close();

 private:
  using Entry = std::pair<int, std::shared_ptr<ClusterCommand>>;
  void retry();

  ClusterLinks& links_;
  std::vector<Entry> queue_;
  // Held during a retry pass by requests that are not part of it: they go after the pass's own.
  std::vector<Entry> arrivals_;
  std::vector<std::uint32_t> waiting_;   // per slot (kSlotCount once used): not answered yet
  std::vector<std::uint32_t> requeued_;  // per slot: sent back to wait during the current pass
  const ClusterCommand* retrying_ = nullptr;
  bool in_pass_ = false;
  bool scheduled_ = false;
  bool closed_ = false;
  // The retry timer may fire after the thread's links are gone (shutdown): it checks this first.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace corral::upstream
