// Versioned keys (`versioned:` policies): how version keys are named, and the origin that reads
// `<key>:v<N>` and falls back to the previous version for keys missing in version N.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "origin/origin.hpp"
#include "stampede/version_key.hpp"  // versioned_key()

namespace corral::stampede {

class PolicyRuntime;
class PolicyStats;

// A version is written in decimal without sign, spaces or leading zeros ("0" parses to 0, which
// means "no version"). nullopt for anything else, and on overflow.
std::optional<std::uint64_t> parse_version(std::string_view text);

struct VersionedKey {
  std::string_view user_key;  // the key without its ":v<N>" suffix
  std::uint64_t version = 0;
};
// Splits "<user_key>:v<N>" (N as parse_version reads it, user_key not empty); nullopt when the
// key carries no version suffix.
std::optional<VersionedKey> split_versioned_key(std::string_view key);

// `text` with the glob characters of SCAN MATCH (* ? [ ] \) escaped by a backslash.
std::string glob_escape(std::string_view text);
// The SCAN MATCH pattern of every key of `version` under `prefix`: "<prefix>*:v<version>".
std::string version_pattern(std::string_view prefix, std::uint64_t version);

// Wraps a policy's redis origin. fetch() gets requests whose keys are versioned (`<key>:v<N>`:
// argv[1] of GET and the like, every key of an MGET, all of one version). A nil answer (an
// MGET's nil elements) is asked again of the policy's previous version, when it has one other
// than N, and that answer is returned with both durations; each key asked again counts as a
// version fallback. Same threading contract as the inner origin (one io thread).
class VersionedOrigin final : public origin::Origin {
 public:
  VersionedOrigin(std::shared_ptr<origin::Origin> inner, std::shared_ptr<PolicyRuntime> runtime,
                  std::shared_ptr<PolicyStats> stats, std::string prefix);

  std::string_view name() const override;
  void fetch(std::span<const std::string_view> argv, origin::FetchCallback done) override;
  // A background refresh goes to the inner origin's refresh(); a fallback read is a fetch.
  void refresh(std::span<const std::string_view> argv, origin::FetchReason reason,
               origin::FetchCallback done) override;

  struct Context;  // what a fetch's callbacks need, kept alive by them

 private:
  void ask(std::span<const std::string_view> argv, std::optional<origin::FetchReason> reason,
           origin::FetchCallback done);

  std::shared_ptr<PolicyRuntime> runtime_;
  std::shared_ptr<Context> context_;
};

}  // namespace corral::stampede
