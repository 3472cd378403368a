// One posted handler per loop turn runs every deferred write of the turn.
#include "upstream/turn_queue.hpp"

#include <boost/asio/post.hpp>

namespace corral::upstream {

TurnQueue::TurnQueue(boost::asio::execution_context& context)
    : boost::asio::execution_context::service(context),
      io_(static_cast<boost::asio::io_context&>(context)) {}

void TurnQueue::defer(std::shared_ptr<void> object, void (*run)(void*, std::uint64_t),
                      std::uint64_t argument) {
  queued_.push_back({std::move(object), run, argument});
  if (posted_) return;
  posted_ = true;
  ++posts_;
  boost::asio::post(io_, [this] { run_queued(); });
}

void TurnQueue::run_queued() {
  posted_ = false;
  running_.swap(queued_);
  // An item may defer more (a write that completed another): those land in queued_ and post the
  // next turn's handler.
  for (auto& item : running_) item.run(item.object.get(), item.argument);
  running_.clear();
}

void TurnQueue::shutdown() {
  // The objects may own handlers of this context: dropped now, before the context goes.
  queued_.clear();
  running_.clear();
}

}  // namespace corral::upstream
