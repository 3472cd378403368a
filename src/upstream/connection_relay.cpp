// A connection that carries a replica's SYNC/PSYNC: Redis's verdict first (keep-alives passed on
// meanwhile), then either the raw replication stream or, after a refusal, framed replies again.
#include <functional>
#include <memory>
#include <string_view>
#include <utility>

#include "upstream/connection.hpp"
#include "upstream/replication_verdict.hpp"

namespace corral::upstream {

bool Connection::start_raw_relay() {
  if (closing_ || !in_flight_.empty()) return false;
  relay_ = RelayState::awaiting_verdict;
  return true;
}

void Connection::hold_raw_relay(bool held) {
  if (relay_ == RelayState::off || held == relay_held_) return;
  relay_held_ = held;
  if (!relay_resumed_) relay_resumed_ = std::make_unique<AsyncEvent>(executor_);
  if (!held) relay_resumed_->notify();
}

bool Connection::hold_relay_input(std::size_t limit, std::function<void()> resume) {
  if (closing_ || state_ != State::ready || write_buffer_.size() + writing_.size() <= limit) {
    return false;
  }
  relay_input_written_ = std::move(resume);
  return true;
}

void Connection::resume_relay_input() {
  if (auto resume = std::exchange(relay_input_written_, nullptr)) resume();
}

Connection::RelayStep Connection::deliver_relayed() {
  std::string_view pending(read_buffer_.data() + read_begin_, read_end_ - read_begin_);
  if (relay_ == RelayState::awaiting_verdict) {
    const ReplicationVerdict verdict = read_replication_verdict(pending);
    if (verdict.keep_alives > 0) {
      read_begin_ += verdict.keep_alives;
      if (unsolicited_) unsolicited_->on_reply(0, pending.substr(0, verdict.keep_alives));
      pending.remove_prefix(verdict.keep_alives);
    }
    switch (verdict.kind) {
      case ReplicationVerdict::Kind::due:
        return RelayStep::delivered;
      case ReplicationVerdict::Kind::refused: {
        if (verdict.error_size == 0) return RelayStep::invalid;
        // A hold was the relay's: the replies that follow must be read.
        relay_ = RelayState::off;
        relay_held_ = false;
        read_begin_ += verdict.error_size;
        // Moved out first: the target, which no longer relays, may let go of this link.
        if (auto target = std::move(unsolicited_)) {
          target->on_reply(0, pending.substr(0, verdict.error_size));
        }
        return RelayStep::frame_rest;
      }
      case ReplicationVerdict::Kind::accepted:
        relay_ = RelayState::relaying;
        break;
    }
  }
  // The replica's stream: bulk RDB without a trailing CRLF, newline keep-alives, then commands.
  read_begin_ = read_end_;
  if (unsolicited_ && !pending.empty()) unsolicited_->on_reply(0, pending);
  return RelayStep::delivered;
}

}  // namespace corral::upstream
