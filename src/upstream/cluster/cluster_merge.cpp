// Merging of split and fanned-out replies. The parts' bytes are only split into elements
// (resp::array_elements), never decoded, so RESP3 values pass through as they came.
#include "upstream/cluster/cluster_merge.hpp"

#include <charconv>

#include "resp/array_elements.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"

namespace corral::upstream {

namespace {

std::optional<std::int64_t> integer_reply(std::string_view reply) {
  if (reply.size() < 4 || reply.front() != ':' || !reply.ends_with("\r\n")) return std::nullopt;
  std::int64_t value = 0;
  const char* begin = reply.data() + 1;
  const char* end = reply.data() + reply.size() - 2;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

constexpr std::string_view kOk = "+OK\r\n";

}  // namespace

ClusterMergeTarget::ClusterMergeTarget(ClusterMerge merge, std::size_t parts,
                                       std::vector<std::vector<std::size_t>> positions,
                                       std::shared_ptr<ReplyTarget> client, std::uint64_t tag)
    : merge_(merge),
      positions_(std::move(positions)),
      client_(std::move(client)),
      tag_(tag),
      replies_(parts),
      failed_(parts, false),
      remaining_(parts) {}

void ClusterMergeTarget::on_reply(std::uint64_t part, std::string_view reply) {
  replies_[part] = std::string(reply);
  if (--remaining_ == 0) finish();
}

void ClusterMergeTarget::on_failure(std::uint64_t part, std::string_view error) {
  replies_[part] = std::string(error);
  failed_[part] = true;
  if (--remaining_ == 0) finish();
}

namespace {
// Each primary answers for itself: one killed script is the command's success.
std::optional<std::string> killed_anywhere(const std::vector<std::string>& replies,
                                           const std::vector<bool>& failed) {
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!failed[i] && replies[i] == kOk) return replies[i];
  }
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!failed[i] && classify_error_reply(replies[i]) != ErrorKind::notbusy) return std::nullopt;
  }
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (failed[i]) return std::nullopt;
  }
  return replies.empty() ? std::nullopt : std::optional(replies.front());
}
}  // namespace

void ClusterMergeTarget::finish() {
  if (merge_ == ClusterMerge::killed_anywhere) {
    if (auto reply = killed_anywhere(replies_, failed_)) return client_->on_reply(tag_, *reply);
    // Not killed and not all NOTBUSY: an error reply first, then a failure.
    for (std::size_t i = 0; i < replies_.size(); ++i) {
      if (!failed_[i] && classify_error_reply(replies_[i]) != ErrorKind::notbusy)
        return client_->on_reply(tag_, replies_[i]);
    }
  }
  for (std::size_t i = 0; i < replies_.size(); ++i) {
    if (failed_[i]) return client_->on_failure(tag_, replies_[i]);
    if (!replies_[i].empty() && (replies_[i].front() == '-' || replies_[i].front() == '!'))
      return client_->on_reply(tag_, replies_[i]);
  }
  std::string error;
  const auto merged = merge(merge_, replies_, positions_, error);
  if (!merged) return client_->on_failure(tag_, error);
  client_->on_reply(tag_, *merged);
}

std::optional<std::string> ClusterMergeTarget::merge(
    ClusterMerge merge, const std::vector<std::string>& replies,
    const std::vector<std::vector<std::size_t>>& positions, std::string& error) {
  std::string out;
  switch (merge) {
    case ClusterMerge::killed_anywhere:  // decided in finish(): it needs the failures too
    case ClusterMerge::none:
      return replies.empty() ? std::nullopt : std::optional(replies.front());
    case ClusterMerge::sum: {
      std::int64_t total = 0;
      for (const auto& reply : replies) {
        const auto n = integer_reply(reply);
        if (!n) return error = "ERR a cluster node gave a non-integer reply to sum", std::nullopt;
        total += *n;
      }
      resp::append_integer(out, total);
      return out;
    }
    case ClusterMerge::all_ok:
      for (const auto& reply : replies) {
        if (reply != kOk) return reply;  // e.g. a +QUEUED or another status: pass it on
      }
      return std::string(kOk);
    case ClusterMerge::agree:
      for (const auto& reply : replies) {
        if (reply != replies.front()) {
          error = "ERR the cluster's primaries answered differently";
          return std::nullopt;
        }
      }
      return replies.front();
    case ClusterMerge::concat: {
      std::size_t count = 0;
      std::string body;
      for (const auto& reply : replies) {
        const auto elements = resp::array_elements(reply);
        if (!elements) return error = "ERR a cluster node gave a non-array reply", std::nullopt;
        count += elements->size();
        for (auto element : *elements) body.append(element);
      }
      resp::append_array_header(out, count);
      return out + body;
    }
    case ClusterMerge::values_in_key_order: {
      std::size_t count = 0;
      for (const auto& p : positions) count += p.size();
      std::vector<std::string_view> values(count);
      for (std::size_t part = 0; part < replies.size(); ++part) {
        const auto elements = resp::array_elements(replies[part], positions[part].size());
        if (!elements) return error = "ERR a cluster node gave a malformed reply", std::nullopt;
        for (std::size_t i = 0; i < elements->size(); ++i)
          values[positions[part][i]] = (*elements)[i];
      }
      resp::append_array_header(out, count);
      for (auto value : values) out.append(value);
      return out;
    }
  }
  return std::nullopt;
}

}  // namespace corral::upstream
