// What a worker asks of each of its sessions: to drain when the process does (SIGTERM), and now
// and then to check whether its client hung up unseen.
#pragma once

namespace corral::session {

// Called on the session's own io thread.
class Drainable {
 public:
  virtual void drain() = 0;
  // A read that found less than its room takes the socket as drained and waits for the next
  // edge; a hang-up that came with those bytes raises none (see upstream/ready_read.hpp).
  virtual void check_hangup() = 0;

 protected:
  ~Drainable() = default;
};

}  // namespace corral::session
