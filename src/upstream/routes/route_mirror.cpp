// The mirror's copies and what their replies count for.
#include "upstream/routes/route_mirror.hpp"

namespace corral::upstream {

struct RouteMirror::State {
  std::size_t in_flight = 0;  // this thread's copies awaiting a reply
  std::shared_ptr<MirrorCounters> counters;
};

namespace {

// Counts the copy's outcome; nobody waits for its reply.
class MirrorReply final : public ReplyTarget {
 public:
  explicit MirrorReply(std::shared_ptr<void> state_holder, std::size_t& in_flight,
                       MirrorCounters& counters)
      : holder_(std::move(state_holder)), in_flight_(in_flight), counters_(counters) {}

  void on_reply(std::uint64_t, std::string_view reply) override {
    if (reply.starts_with('-')) counters_.failed.fetch_add(1, std::memory_order_relaxed);
    done();
  }
  void on_failure(std::uint64_t, std::string_view) override {
    counters_.failed.fetch_add(1, std::memory_order_relaxed);
    done();
  }

 private:
  void done() {
    --in_flight_;
    counters_.queued.fetch_sub(1, std::memory_order_relaxed);
  }

  std::shared_ptr<void> holder_;  // keeps in_flight_ and counters_ alive
  std::size_t& in_flight_;
  MirrorCounters& counters_;
};

}  // namespace

RouteMirror::RouteMirror(std::shared_ptr<Upstream> mirror, std::size_t max_queue, int reads_percent,
                         std::shared_ptr<MirrorCounters> counters)
    : mirror_(std::move(mirror)),
      max_queue_(max_queue),
      reads_percent_(reads_percent),
      state_(std::make_shared<State>(State{0, std::move(counters)})) {}

void RouteMirror::copy(const Routed& command) {
  if (command.shape.read_only()) {
    read_credit_ += reads_percent_;
    if (read_credit_ < 100) return;
    read_credit_ -= 100;
  }
  auto& counters = *state_->counters;
  if (state_->in_flight >= max_queue_) {
    counters.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // In the database the command ran in; its reply is discarded, so RESP2 whatever the client
  // speaks. Counted in flight before the send: a failure may be reported from within it.
  const Routed copy{command.shape,    command.argv,     command.bytes,
                    command.database, command.affinity, 2};
  ++state_->in_flight;
  counters.queued.fetch_add(1, std::memory_order_relaxed);
  auto reply = std::make_shared<MirrorReply>(state_, state_->in_flight, counters);
  if (!mirror_->send(copy, 0, reply)) {
    --state_->in_flight;
    counters.queued.fetch_sub(1, std::memory_order_relaxed);
    counters.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counters.sent.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace corral::upstream
