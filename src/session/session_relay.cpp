// Client session, relay side: after a SYNC/PSYNC the client's later bytes wait unread for the
// server's verdict; accepted, raw bytes pass both ways; refused, the server's error is the
// request's reply and the waiting bytes are requests again, as on a connection Redis refused.
#include <cassert>
#include <string_view>

#include "session/session.hpp"
#include "session/worker.hpp"

namespace corral::session {

template <class Stream>
void Session<Stream>::start_relay(std::uint32_t metric_id) {
  assert(slots_.empty());
  relay_metric_id_ = metric_id;
  relay_verdict_due_ = true;
  take_relay_verdict();
}

template <class Stream>
RelayVerdict Session<Stream>::take_relay_verdict() {
  const RelayVerdict verdict = handler_->relay_verdict();
  if (verdict == RelayVerdict::due) return verdict;
  relaying_ = verdict == RelayVerdict::accepted;
  settle_relay(relaying_ ? metrics::CommandResult::ok : metrics::CommandResult::error);
  return verdict;
}

template <class Stream>
void Session<Stream>::settle_relay(metrics::CommandResult result) {
  relay_verdict_due_ = false;
  // Counted once, when known: the stream that follows is no reply and has no latency.
  worker_.stats.command(relay_metric_id_, result, {});
  if (slots_drained_) slots_drained_->notify();  // process_input waits with the client's bytes
}

template <class Stream>
void Session<Stream>::relay_reply(std::string_view bytes) {
  const RelayVerdict verdict = relay_verdict_due_ ? take_relay_verdict() : RelayVerdict::accepted;
  if (verdict == RelayVerdict::refused_unanswered) return;
  if (verdict != RelayVerdict::refused) {
    relay_output(bytes);
    return;
  }
  // The refusal is an ordinary reply: past the output limit it stops the client's requests (and
  // starts the slow-reader clock) rather than holding an upstream side that no longer relays.
  note_output_available();
  output_.append(bytes);
  want_write();
  check_output_limit(false);
}

template <class Stream>
bool Session<Stream>::relay_input() {
  const bool passed = handler_->relay_input(input_.pending());
  input_.consume(input_.pending().size());
  if (!passed) abort();
  return passed && !relay_input_held();
}

// A replica that sends faster than the server takes its bytes (a stopped or busy server, a slow
// network) stops being read past client.max_output_buffer unwritten, as its replies would.
template <class Stream>
bool Session<Stream>::relay_input_held() {
  return handler_->hold_relay_input(worker_.client.max_output_buffer,
                                    [weak = this->weak_from_this()] {
                                      if (auto self = weak.lock())
                                        self->relay_input_room().notify();
                                    });
}

template <class Stream>
upstream::AsyncEvent& Session<Stream>::relay_input_room() {
  if (!relay_input_room_) {
    relay_input_room_ = std::make_unique<upstream::AsyncEvent>(stream_.get_executor());
  }
  return *relay_input_room_;
}

// session.cpp instantiates the rest of Session.
#define CORRAL_SESSION_RELAY(Stream)                                   \
  template void Session<Stream>::start_relay(std::uint32_t);           \
  template RelayVerdict Session<Stream>::take_relay_verdict();         \
  template void Session<Stream>::settle_relay(metrics::CommandResult); \
  template void Session<Stream>::relay_reply(std::string_view);        \
  template bool Session<Stream>::relay_input();                        \
  template bool Session<Stream>::relay_input_held();                   \
  template upstream::AsyncEvent& Session<Stream>::relay_input_room();
CORRAL_SESSION_RELAY(PlainStream)
CORRAL_SESSION_RELAY(TlsStream)
#undef CORRAL_SESSION_RELAY

}  // namespace corral::session
