// Cluster SCAN cursors: bits 0-9 the primary's index, 10-25 the fingerprint, 26-63 the node's
// cursor (a Redis cursor is a reversed bucket index, far below 2^38 for any real table).
#include "upstream/cluster/cluster_scan.hpp"

#include <charconv>

#include "resp/array_elements.hpp"
#include "resp/encoder.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::upstream {

namespace {
constexpr unsigned kNodeBits = 10;
constexpr unsigned kFingerprintBits = 16;
constexpr unsigned kCursorShift = kNodeBits + kFingerprintBits;
constexpr std::uint64_t kMaxNodeCursor = (std::uint64_t{1} << (64 - kCursorShift)) - 1;

std::optional<std::uint64_t> parse_u64(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}
}  // namespace

std::optional<ClusterScanCursor> ClusterScanCursor::decode(std::string_view text) {
  const auto value = parse_u64(text);
  if (!value) return std::nullopt;
  ClusterScanCursor cursor;
  cursor.node = static_cast<std::uint32_t>(*value & ((1u << kNodeBits) - 1));
  cursor.fingerprint = static_cast<std::uint16_t>((*value >> kNodeBits) & 0xffff);
  cursor.node_cursor = *value >> kCursorShift;
  return cursor;
}

std::string ClusterScanCursor::encode() const {
  const std::uint64_t value = (node_cursor << kCursorShift) |
                              (std::uint64_t{fingerprint} << kNodeBits) | std::uint64_t{node};
  return std::to_string(value);
}

std::uint16_t primaries_fingerprint(const std::vector<config::Endpoint>& primaries) {
  std::string list;
  for (const auto& e : primaries) list += e.host + ":" + std::to_string(e.port) + ",";
  return upstream::crc16(list);
}

void ClusterScanTarget::on_reply(std::uint64_t tag, std::string_view reply) {
  const auto parts = resp::array_elements(reply, 2);
  if (!parts || (*parts)[0].size() < 4 || (*parts)[0].front() != '$') {
    client_->on_reply(tag, reply);  // an error reply, or not a SCAN reply: as it came
    return;
  }
  // "$<n>\r\n<cursor>\r\n"
  const auto bulk = (*parts)[0];
  const auto body_start = bulk.find("\r\n") + 2;
  const auto node_cursor = parse_u64(bulk.substr(body_start, bulk.size() - body_start - 2));
  if (!node_cursor || *node_cursor > kMaxNodeCursor) {
    client_->on_failure(tag, "ERR a cluster node's SCAN cursor does not fit Corral's cursor");
    return;
  }
  ClusterScanCursor next = at_;
  next.node_cursor = *node_cursor;
  if (*node_cursor == 0) ++next.node;  // this primary is done: the next one starts at 0
  const bool done = *node_cursor == 0 && next.node >= primaries_;
  std::string out;
  resp::append_array_header(out, 2);
  resp::append_bulk(out, done ? std::string("0") : next.encode());
  out.append((*parts)[1]);
  client_->on_reply(tag, out);
}

}  // namespace corral::upstream
