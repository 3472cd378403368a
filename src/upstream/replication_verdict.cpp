// Reads Redis's answer to a SYNC/PSYNC: keep-alives, then either the stream or an error line.
#include "upstream/replication_verdict.hpp"

#include <algorithm>

#include "resp/reply_framer.hpp"

namespace corral::upstream {

ReplicationVerdict read_replication_verdict(std::string_view pending) {
  ReplicationVerdict verdict;
  verdict.keep_alives = std::min(pending.find_first_not_of('\n'), pending.size());
  const std::string_view answer = pending.substr(verdict.keep_alives);
  if (answer.empty()) return verdict;
  if (answer.front() != '-') {
    verdict.kind = ReplicationVerdict::Kind::accepted;
    return verdict;
  }
  // Framed as any reply is, so an error line gets the framer's bounds.
  const auto frame = resp::frame_reply(answer);
  if (frame.status == resp::FrameStatus::need_more) return verdict;
  verdict.kind = ReplicationVerdict::Kind::refused;
  verdict.error_size = frame.status == resp::FrameStatus::complete ? frame.size : 0;
  return verdict;
}

}  // namespace corral::upstream
