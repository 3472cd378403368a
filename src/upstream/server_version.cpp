// The upstream's version, shared by every io thread behind a mutex: it is written once per
// handshake and read once per HELLO, never on the data path.
#include "upstream/server_version.hpp"

#include <mutex>
#include <utility>

namespace corral::upstream {

namespace {
std::mutex& version_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::string& version() {
  static std::string value;
  return value;
}
}  // namespace

std::string known_server_version() {
  std::lock_guard lock(version_mutex());
  return version();
}

void set_known_server_version(std::string next) {
  std::lock_guard lock(version_mutex());
  version() = std::move(next);
}

}  // namespace corral::upstream
