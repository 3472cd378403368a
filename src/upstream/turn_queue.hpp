// Work deferred to the end of the event loop's current turn, for every session and connection of
// an io_context at once: one posted handler per turn instead of one per write.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>

namespace corral::upstream {

// An io_context's service (boost::asio::use_service<TurnQueue>(io)). Asio 1.74 keeps one spare
// handler block per thread, so with fifty clients each posting its write most posts cost a
// malloc; the queue posts one handler when its first item arrives and runs every item queued by
// then, in order, from it. Items queued while it runs go in the next turn. Single-threaded: only
// the io_context's thread uses it.
class TurnQueue final : public boost::asio::execution_context::service {
 public:
  using key_type = TurnQueue;
  static inline boost::asio::execution_context::id id;

  // `context` must be an io_context: the one whose turns these are.
  explicit TurnQueue(boost::asio::execution_context& context);

  // run(object.get(), argument) once the handlers ready now have run; `object` is kept alive
  // until then.
  void defer(std::shared_ptr<void> object, void (*run)(void*, std::uint64_t),
             std::uint64_t argument = 0);

  // Items queued and not run yet.
  std::size_t pending() const { return queued_.size(); }
  // Handlers posted to the io_context so far (one per turn that had items).
  std::uint64_t posts() const { return posts_; }

 private:
  struct Item {
    std::shared_ptr<void> object;
    void (*run)(void*, std::uint64_t);
    std::uint64_t argument;
  };
  void run_queued();
  void shutdown() override;

  boost::asio::io_context& io_;
  std::vector<Item> queued_;
  std::vector<Item> running_;  // swapped with queued_ for a run; both keep their capacity
  bool posted_ = false;
  std::uint64_t posts_ = 0;
};

}  // namespace corral::upstream
