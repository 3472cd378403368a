// Sentinel's event payloads (sentinel.c, sentinelEvent): an instance is written
// "<type> <name> <ip> <port>", and a replica's adds "@ <master-name> <master-ip> <master-port>";
// +switch-master is "<master-name> <old-ip> <old-port> <new-ip> <new-port>".
#include "upstream/sentinel/sentinel_event.hpp"

#include <array>
#include <charconv>
#include <vector>

#include "resp/reply.hpp"

namespace corral::upstream {

namespace {

constexpr std::string_view kSwitchMaster = "+switch-master";
constexpr std::string_view kPromotedSlave = "+promoted-slave";

// A failover's steps before the promotion, in sentinel.c's order: +try-failover (when SENTINEL
// FAILOVER is run, or when a Sentinel starts an election for a primary it sees down), at its
// next timer tick (every 50-100 ms) +elected-leader and +failover-state-select-slave, the tick
// after +selected-slave and +failover-state-send-slaveof-noone, and the one after that SLAVEOF
// NO ONE with +failover-state-wait-promotion. Holding from the first leaves at least two ticks
// before the promotion for the hold to reach every io thread and for the commands already sent
// to the old primary to be answered and replicated; holding from send-slaveof-noone left one.
constexpr std::array<std::string_view, 6> kStarting{"+try-failover",
                                                    "+elected-leader",
                                                    "+failover-state-select-slave",
                                                    "+selected-slave",
                                                    "+failover-state-send-slaveof-noone",
                                                    "+failover-state-wait-promotion"};
constexpr std::array<std::string_view, 4> kAborts{
    "-failover-abort-not-elected", "-failover-abort-no-good-slave", "-failover-abort-slave-timeout",
    "-failover-abort-master-is-not-leader"};

// Events about one replica (the payload starts with "slave").
constexpr std::array<std::string_view, 5> kReplicaChanges{
    "+slave", "+sdown", "-sdown", "+slave-reconf-done", "+convert-to-slave"};

constexpr std::array<std::string_view, 17> kChannels{
    kStarting[0],       kStarting[1],       kStarting[2],       kStarting[3],
    kStarting[4],       kStarting[5],       kPromotedSlave,     kSwitchMaster,
    kAborts[0],         kAborts[1],         kAborts[2],         kAborts[3],
    kReplicaChanges[0], kReplicaChanges[1], kReplicaChanges[2], kReplicaChanges[3],
    kReplicaChanges[4]};

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = std::min(text.find(' ', at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::optional<config::Endpoint> endpoint(std::string_view host, std::string_view port) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535 ||
      host.empty()) {
    return std::nullopt;
  }
  return config::Endpoint{std::string(host), static_cast<std::uint16_t>(value)};
}

// The master name of an instance payload: after "@" for a replica, else the second word.
std::optional<std::string> master_of(const std::vector<std::string_view>& w) {
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] == "@") return std::string(w[i + 1]);
  }
  if (w.size() >= 2 && w[0] == "master") return std::string(w[1]);
  return std::nullopt;
}

// The address of the master an instance payload is about: after its name.
std::optional<config::Endpoint> master_address_of(const std::vector<std::string_view>& w) {
  for (std::size_t i = 0; i + 3 < w.size(); ++i) {
    if (w[i] == "@") return endpoint(w[i + 2], w[i + 3]);
  }
  if (w.size() >= 4 && w[0] == "master") return endpoint(w[2], w[3]);
  return std::nullopt;
}

bool one_of(std::string_view channel, std::span<const std::string_view> names) {
  for (const auto name : names) {
    if (channel == name) return true;
  }
  return false;
}

}  // namespace

std::span<const std::string_view> sentinel_event_channels() { return kChannels; }

std::optional<SentinelEvent> parse_sentinel_event(std::string_view channel,
                                                  std::string_view payload) {
  const auto w = words(payload);
  if (channel == kSwitchMaster) {
    if (w.size() != 5) return std::nullopt;
    const auto primary = endpoint(w[3], w[4]);
    if (!primary) return std::nullopt;
    return SentinelEvent{SentinelEventKind::switched, std::string(w[0]), *primary, {}};
  }
  auto master = master_of(w);
  if (!master) return std::nullopt;
  if (channel == kPromotedSlave) {
    // "slave <ip>:<port> <ip> <port> @ <master> ...": the promoted replica's own address.
    if (w.size() < 4 || w[0] != "slave") return std::nullopt;
    const auto primary = endpoint(w[2], w[3]);
    if (!primary) return std::nullopt;
    return SentinelEvent{SentinelEventKind::promoted, std::move(*master), *primary, {}};
  }
  if (one_of(channel, kStarting)) {
    const auto from = master_address_of(w);
    if (!from) return std::nullopt;
    return SentinelEvent{SentinelEventKind::failover_starting, std::move(*master), {}, *from};
  }
  if (one_of(channel, kAborts)) {
    return SentinelEvent{SentinelEventKind::aborted, std::move(*master), {}, {}};
  }
  if (one_of(channel, kReplicaChanges) && w[0] == "slave") {
    return SentinelEvent{SentinelEventKind::replicas_changed, std::move(*master), {}, {}};
  }
  return std::nullopt;
}

std::optional<config::Endpoint> parse_master_address(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != resp::Reply::Type::array || decoded->elements.size() != 2) {
    return std::nullopt;
  }
  return endpoint(decoded->elements[0].text, decoded->elements[1].text);
}

bool role_is_primary(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  return decoded && decoded->type == resp::Reply::Type::array && !decoded->elements.empty() &&
         decoded->elements[0].text == "master";
}

}  // namespace corral::upstream
