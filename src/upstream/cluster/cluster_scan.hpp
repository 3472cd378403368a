// SCAN over a cluster: one primary after the other. The client's cursor carries the primary's
// index, a fingerprint of the primary set and that primary's own cursor, so a walk resumes on any
// io thread, and a walk whose primaries changed is refused instead of silently skipping keys.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

struct ClusterScanCursor {
  std::uint32_t node = 0;         // index into SlotMap::primaries, < 1024
  std::uint16_t fingerprint = 0;  // of the primary set the walk started on
  std::uint64_t node_cursor = 0;  // < 2^38

  // Cursor 0 starts a walk on the first primary.
  static std::optional<ClusterScanCursor> decode(std::string_view text);
  std::string encode() const;  // "0" when the walk is over (node_cursor 0 past the last node)
};

inline constexpr std::string_view kErrScanTopologyChanged =
    "ERR the cluster's primaries changed during this SCAN; start again with cursor 0";

// The fingerprint of a primary set: CRC16 of their "host:port" list in order.
std::uint16_t primaries_fingerprint(const std::vector<config::Endpoint>& primaries);

// Answers the client's SCAN with the node's reply, its cursor replaced by the walk's next one.
class ClusterScanTarget final : public upstream::ReplyTarget {
 public:
  ClusterScanTarget(ClusterScanCursor at, std::size_t primaries,
                    std::shared_ptr<upstream::ReplyTarget> client)
      : at_(at), primaries_(primaries), client_(std::move(client)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override;
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  ClusterScanCursor at_;
  std::size_t primaries_;
  std::shared_ptr<upstream::ReplyTarget> client_;
};

}  // namespace corral::upstream
