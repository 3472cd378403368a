// What a worker asks of each of its sessions when the process drains (SIGTERM).
#pragma once

namespace corral::session {

// Called on the session's own io thread.
class Drainable {
 public:
  virtual void drain() = 0;

 protected:
  ~Drainable() = default;
};

}  // namespace corral::session
