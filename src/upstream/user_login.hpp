// Who an upstream user's connections log in as: the seam between the per-user pools (user_pools.*)
// and the kinds of upstream that build them.
#pragma once

#include <memory>
#include <string>

namespace corral::upstream {

class Upstream;

// The upstream ACL user a pool's connections log in as, and the database its client was in when
// it authenticated (Redis keeps that one without a SELECT the user may not be allowed).
struct UserLogin {
  std::string user;
  std::string password;
  int entered_database = 0;
};

// The connections of one upstream ACL user and the Upstream over them, alive together.
class UserUpstream {
 public:
  virtual ~UserUpstream() = default;
  virtual Upstream& upstream() = 0;
  // The server refused the last login of a shared connection (the user was deleted or its
  // password changed): until a retry succeeds, this serves nothing.
  virtual bool refused() const = 0;
};

}  // namespace corral::upstream
