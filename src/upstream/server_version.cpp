// The upstream's version, shared by every io thread behind a mutex: it is written once per
// handshake and read once per HELLO, never on the data path.
#include "upstream/server_version.hpp"

#include <mutex>
#include <utility>

#include "resp/reply.hpp"

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

void note_hello_reply(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded ||
      (decoded->type != resp::Reply::Type::map && decoded->type != resp::Reply::Type::array)) {
    return;
  }
  const auto& pairs = decoded->elements;
  for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
    if (pairs[i].text == "version" && pairs[i + 1].type == resp::Reply::Type::bulk) {
      set_known_server_version(pairs[i + 1].text);
    }
  }
}

}  // namespace corral::upstream
