// Which settings weaken Corral's protection, and why each matters.
#include "config/weakened_settings.hpp"

#include <string_view>

namespace corral::config {
namespace {

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace

std::vector<WeakenedSetting> weakened_settings(const Settings& settings) {
  std::vector<WeakenedSetting> out;
  if (settings.upstream.tls.enabled && !settings.upstream.tls.verify) {
    out.push_back({"upstream.tls.verify",
                   "the upstream's certificate and name are not checked: anyone on the network "
                   "path can pose as Redis and read every command"});
  }
  const bool plain_off_loopback = settings.listen_plain && !is_loopback(settings.listen.host);
  const bool tls_off_loopback = settings.tls.listen && !is_loopback(settings.tls.listen->host);
  if (settings.client.password.empty() && (plain_off_loopback || tls_off_loopback)) {
    out.push_back(
        {"client.password", "clients are not authenticated, and a listener is not on loopback"});
  }
  if (!settings.client.allow_commands.empty()) {
    out.push_back({"client.allow_commands", "clients may run commands Corral refuses by default: " +
                                                joined(settings.client.allow_commands)});
  }
  return out;
}

}  // namespace corral::config
