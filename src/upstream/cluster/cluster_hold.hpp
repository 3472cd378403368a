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
  bool holding(int slot) const { return !per_slot_.empty() && per_slot_[slot] > 0; }
  // Queues `command` (of `slot`); it is started again on the next retry pass. After close(), it
  // is answered with kErrClosed instead.
  void add(int slot, std::shared_ptr<ClusterCommand> command);
  std::size_t size() const { return queue_.size(); }
  // The thread's connections are closing (shutdown): what waits is answered with kErrClosed, and
  // nothing is retried on connections that are gone.
  void close();

 private:
  void retry();

  ClusterLinks& links_;
  std::vector<std::pair<int, std::shared_ptr<ClusterCommand>>> queue_;
  std::vector<std::uint32_t> per_slot_;  // kSlotCount counters once anything was held
  bool scheduled_ = false;
  bool closed_ = false;
  // The retry timer may fire after the thread's links are gone (shutdown): it checks this first.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace corral::upstream
