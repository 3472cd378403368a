// Policy lookup and script verdicts shared by ROLLOVER and PURGE.
#include "stampede/versioned/versioned_policy.hpp"

#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "stampede/versioned/version_key.hpp"

namespace corral::stampede {

VersionedPolicy find_versioned_policy(CacheRuntime* cache, std::string_view prefix) {
  VersionedPolicy found;
  if (cache == nullptr) {
    found.error = "ERR caching is off: no versioned policies";
    return found;
  }
  found.policies = cache->policies();
  const auto& settings = found.policies->settings;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (settings[i].prefix != prefix) continue;
    if (!settings[i].versioned) {
      found.error = "ERR policy '" + settings[i].prefix + "' is not versioned";
      return found;
    }
    found.settings = &settings[i];
    found.runtime = found.policies->runtimes[i];
    return found;
  }
  found.error = "ERR no policy with prefix '" + std::string(prefix) + "'";
  return found;
}

std::optional<ScriptVerdict> read_script_verdict(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != resp::Reply::Type::array || decoded->elements.size() < 2) {
    return std::nullopt;
  }
  const auto& elements = decoded->elements;
  ScriptVerdict verdict{elements[0].text};
  if (elements[1].type == resp::Reply::Type::integer) {
    verdict.current = static_cast<std::uint64_t>(elements[1].integer);
  } else {
    verdict.current = parse_version(elements[1].text).value_or(0);
  }
  if (elements.size() > 2) verdict.detail = elements[2].integer;
  return verdict;
}

std::string error_reply(std::string_view message) {
  std::string out;
  resp::append_error(out, message);
  return out;
}

}  // namespace corral::stampede
