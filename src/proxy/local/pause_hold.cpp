// CLIENT PAUSE WRITE's judgement of a request, after Redis's processCommand and
// evalGetCommandFlags (7.0): script shebang flags, and the flags of scripts seen by SHA1.
#include "proxy/local/pause_hold.hpp"

#include <openssl/evp.h>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "proxy/local/function_flags.hpp"
#include "resp/ascii.hpp"

namespace corral::proxy {

namespace {
constexpr std::uint32_t kPausedByWrite = kWrite | kMayReplicate;
constexpr std::size_t kShaHexLength = 40;

// Redis's shebang grammar: "#!lua" then space-separated "flags=a,b" options on the first line.
// Anything it would refuse reads as undeclared: Redis then judges by the command's own flags.
DeclaredWrites declared_writes(std::string_view body) {
  if (!body.starts_with("#!")) return DeclaredWrites::undeclared;
  std::string_view line = body.substr(0, body.find('\n'));
  bool no_writes = false;
  bool engine_seen = false;
  while (!line.empty()) {
    const std::size_t space = line.find(' ');
    const std::string_view part = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    if (part.empty()) continue;
    if (!engine_seen) {
      if (part != "#!lua") return DeclaredWrites::undeclared;
      engine_seen = true;
    } else if (part.starts_with("flags=")) {
      std::string_view flags = part.substr(6);
      while (!flags.empty()) {
        const std::size_t comma = flags.find(',');
        if (flags.substr(0, comma) == "no-writes") no_writes = true;
        flags = comma == std::string_view::npos ? std::string_view() : flags.substr(comma + 1);
      }
    } else {
      return DeclaredWrites::undeclared;
    }
  }
  return no_writes ? DeclaredWrites::no_writes : DeclaredWrites::writes;
}

std::optional<std::string> sha1_hex(std::string_view body) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(body.data(), body.size(), digest, &length, EVP_sha1(), nullptr) != 1) {
    return std::nullopt;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

struct RememberedScripts {
  std::mutex mutex;
  std::unordered_map<std::string, DeclaredWrites> by_sha;
};

RememberedScripts& remembered() {
  static RememberedScripts* const scripts = new RememberedScripts();  // io threads may outlive
  return *scripts;                                                    // static teardown
}

std::uint32_t judged(DeclaredWrites writes, std::uint32_t own) {
  switch (writes) {
    case DeclaredWrites::no_writes:
      return 0;
    case DeclaredWrites::writes:
      return kWrite;
    case DeclaredWrites::undeclared:
      break;
  }
  return own;
}

DeclaredWrites remembered_writes(std::string_view sha) {
  if (sha.size() != kShaHexLength) return DeclaredWrites::undeclared;
  std::string key(sha);
  for (char& c : key) c = resp::to_lower_ascii(c);
  auto& scripts = remembered();
  std::lock_guard lock(scripts.mutex);
  const auto it = scripts.by_sha.find(key);
  return it == scripts.by_sha.end() ? DeclaredWrites::undeclared : it->second;
}
}  // namespace

std::uint32_t pause_flags(const CommandSpec& row, std::span<const std::string_view> argv) {
  const std::uint32_t own = row.flags & kPausedByWrite;
  if (!(row.flags & kRunsScript) || argv.size() < 2) return own;
  if (row.name == "eval") return judged(declared_writes(argv[1]), own);
  if (row.name == "evalsha") return judged(remembered_writes(argv[1]), own);
  if (row.name == "fcall") return judged(function_writes(argv[1]), own);
  return own;
}

void remember_script(std::string_view body) {
  const DeclaredWrites writes = declared_writes(body);
  const auto sha = sha1_hex(body);
  if (!sha) return;
  auto& scripts = remembered();
  std::lock_guard lock(scripts.mutex);
  if (scripts.by_sha.size() >= kMaxRememberedScripts && !scripts.by_sha.contains(*sha)) {
    scripts.by_sha.clear();
  }
  scripts.by_sha[*sha] = writes;
}

}  // namespace corral::proxy
