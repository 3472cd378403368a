// INFO [section ...]: server, clients and proxy sections.
#include "proxy/server_info.hpp"

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <chrono>

#include "proxy/ascii.hpp"
#include "resp/encoder.hpp"

namespace corral::proxy {

namespace {
void field(std::string& out, std::string_view name, const std::string& value) {
  out.append(name).append(":").append(value).append("\r\n");
}

void server_section(std::string& out, const LocalCall& call) {
  const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - call.info.started);
  out += "# Server\r\n";
  field(out, "redis_version", "7.0.0");
  field(out, "corral_version", CORRAL_VERSION);
  field(out, "redis_mode", "standalone");
  field(out, "process_id", std::to_string(::getpid()));
  field(out, "tcp_port", std::to_string(call.settings.listen.port));
  field(out, "uptime_in_seconds", std::to_string(uptime.count()));
  field(out, "io_threads", std::to_string(call.info.threads));
}

void clients_section(std::string& out, const LocalCall& call) {
  out += "# Clients\r\n";
  field(out, "connected_clients", std::to_string(call.info.connected_clients.load()));
  field(out, "maxclients", std::to_string(call.settings.client.max_clients));
}

void proxy_section(std::string& out, const LocalCall& call) {
  const auto& upstream = call.settings.upstream;
  out += "# Proxy\r\n";
  field(out, "upstream_mode", upstream.cluster ? "cluster" : "standalone");
  std::string servers;
  for (const auto& server : upstream.servers) {
    if (!servers.empty()) servers += ',';
    servers += server.host + ":" + std::to_string(server.port);
  }
  field(out, "upstream_servers", servers);
  field(out, "upstream_ready_connections",
        std::to_string(call.info.ready_upstream_connections.load()));
  field(out, "total_connections_received", std::to_string(call.info.total_connections.load()));
  field(out, "cache_policies", std::to_string(call.settings.policies.size()));
  field(out, "config_file", call.settings.source);
}

struct Section {
  std::string_view name;
  void (*render)(std::string&, const LocalCall&);
};
constexpr Section kSections[] = {
    {"server", server_section}, {"clients", clients_section}, {"proxy", proxy_section}};

bool wants(const LocalCall& call, std::string_view section) {
  if (call.argv.size() == 1) return true;
  return std::any_of(call.argv.begin() + 1, call.argv.end(), [&](std::string_view asked) {
    return iequals(asked, section) || iequals(asked, "all") || iequals(asked, "default") ||
           iequals(asked, "everything");
  });
}
}  // namespace

Action info(LocalCall& call) {
  std::string text;
  for (const auto& section : kSections) {
    if (!wants(call, section.name)) continue;
    if (!text.empty()) text += "\r\n";
    section.render(text, call);
  }
  resp::append_bulk(call.reply, text);
  return Action::done;
}

}  // namespace corral::proxy
