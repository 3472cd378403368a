// Versioned keys (`versioned:` policies): the origin that reads `<key>:v<N>` and falls back to
// the previous version for keys missing in version N.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "origin/origin.hpp"
#include "stampede/versioned/version_key.hpp"

namespace corral::stampede {

class PolicyRuntime;
class PolicyStats;

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
