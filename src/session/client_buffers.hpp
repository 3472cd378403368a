// A client's buffers as CLIENT LIST shows them (Redis's qbuf, rbs, obl ... fields): written by the
// client's session on its io thread when they change, read by CLIENT LIST on any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace corral::session {

struct ClientBuffers {
  std::atomic<std::uint64_t> query{0};           // qbuf: request bytes read and not yet handled
  std::atomic<std::uint64_t> query_free{0};      // qbuf-free: room left in the input buffer
  std::atomic<std::uint64_t> input_capacity{0};  // the input buffer (0 while idle: given back)
  std::atomic<std::uint64_t> argv_memory{0};     // argv-mem: the argument vector (views into it)
  std::atomic<std::uint64_t> reply_buffer{0};    // rbs: the reply buffers' capacity
  std::atomic<std::uint64_t> output{0};          // obl: reply bytes not yet taken by the socket
  std::atomic<std::uint64_t> parked_replies{0};  // oll: replies waiting for an earlier one
  std::atomic<std::uint64_t> parked_bytes{0};    // omem: their bytes
  std::atomic<std::uint64_t> session_memory{0};  // the session itself and its reply slots

  // tot-mem: everything above that is memory.
  std::uint64_t total() const {
    return load(input_capacity) + load(argv_memory) + load(reply_buffer) + load(parked_bytes) +
           load(session_memory);
  }
  void store(std::atomic<std::uint64_t>& field, std::uint64_t value) {
    field.store(value, std::memory_order_relaxed);
  }
  std::uint64_t load(const std::atomic<std::uint64_t>& field) const {
    return field.load(std::memory_order_relaxed);
  }
};

}  // namespace corral::session
