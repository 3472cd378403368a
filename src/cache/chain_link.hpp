// Internal to the store: a hash-chain link that carries a 16-bit fingerprint of the linked
// node's hash beside its address, so a lookup passes over nodes of other keys without their key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace corral::cache::detail {

struct Node;

// User-space addresses on x86-64 and AArch64 (48-bit virtual addresses; glibc's malloc never
// maps above them unprompted) leave the top 16 bits of a pointer zero: the fingerprint goes there.
// A node whose fingerprint differs from the probed hash's is not the key's, and the lookup moves
// on after reading only its header's first line (for the next link), not the key bytes on the
// next line; one whose fingerprint matches is almost surely the key's (1 in 65,536 is not), so
// its key and value lines are fetched at once, in parallel with the header's.
class ChainLink {
 public:
  static constexpr int kShift = 48;
  static constexpr std::uintptr_t kAddressMask = (std::uintptr_t{1} << kShift) - 1;

  ChainLink() = default;
  // Requires fits(node).
  ChainLink(Node* node, std::size_t hash)
      : bits_(reinterpret_cast<std::uintptr_t>(node) | (fingerprint(hash) << kShift)) {}

  static bool fits(const void* address) {
    return (reinterpret_cast<std::uintptr_t>(address) & ~kAddressMask) == 0;
  }
  static std::uintptr_t fingerprint(std::size_t hash) {
    // The hash's top bits: the bucket index takes the low ones, the shard bits 32 and up.
    return static_cast<std::uintptr_t>(static_cast<std::uint64_t>(hash) >> kShift);
  }

  Node* node() const { return reinterpret_cast<Node*>(bits_ & kAddressMask); }
  bool may_hold(std::size_t hash) const { return (bits_ >> kShift) == fingerprint(hash); }
  explicit operator bool() const { return bits_ != 0; }
  bool operator==(const ChainLink&) const = default;

 private:
  std::uintptr_t bits_ = 0;
};

static_assert(sizeof(ChainLink) == sizeof(void*) && sizeof(void*) == 8,
              "the fingerprint lives in a 64-bit pointer's unused top bits");

}  // namespace corral::cache::detail
