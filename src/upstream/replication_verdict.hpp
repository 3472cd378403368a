// What Redis answered a SYNC/PSYNC, read from the first bytes it sent back: an acceptance makes
// the connection a raw relay of the replication stream, an error line leaves it a framed one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace corral::upstream {

struct ReplicationVerdict {
  enum class Kind : std::uint8_t {
    due,       // only keep-alives so far, or an error line not complete yet
    accepted,  // +FULLRESYNC, +CONTINUE, or an old-style SYNC's `$<len>` RDB line
    refused,   // an error line (-NOPERM, -NOMASTERLINK, -ERR ...): the command's reply
  };
  Kind kind = Kind::due;
  // Bare "\n" keep-alives in front (Redis sends them while it prepares the RDB): the replica's
  // whatever the verdict, passed on as they are.
  std::size_t keep_alives = 0;
  // refused: the size of the error line that follows the keep-alives, CRLF included; 0 when it
  // cannot be framed (a protocol violation, as for any reply).
  std::size_t error_size = 0;
};

// Contract: `pending` is what the server sent since the SYNC/PSYNC, keep-alives already passed on
// excluded. Anything but an error line counts as acceptance: that is how the relay always took it.
ReplicationVerdict read_replication_verdict(std::string_view pending);

}  // namespace corral::upstream
