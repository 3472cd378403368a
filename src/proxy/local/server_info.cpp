// INFO [section ...]: forwarded to the upstream, whose text keeps Redis's fields (redis_version,
// memory, keyspace, stats ...); Corral replaces what describes the proxy and adds its sections.
// A cluster's INFO is Corral's sections and one line per node.
#include "proxy/local/server_info.hpp"
#include "upstream/upstream.hpp"

#include <unistd.h>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "cache/store.hpp"
#include "proxy/ascii.hpp"
#include "proxy/local/client_registry.hpp"
#include "proxy/resp3.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "upstream/link.hpp"
#include "upstream/server_version.hpp"

namespace corral::proxy {

namespace {
void field(std::string& out, std::string_view name, const std::string& value) {
  out.append(name).append(":").append(value).append("\r\n");
}

// What a client of Corral sees as "the server": the proxy process, not the Redis behind it.
void server_fields(std::string& out, const LocalCall& call) {
  const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - call.info.started);
  field(out, "process_id", std::to_string(::getpid()));
  field(out, "tcp_port", std::to_string(call.settings.listen.port));
  field(out, "uptime_in_seconds", std::to_string(uptime.count()));
  field(out, "uptime_in_days", std::to_string(uptime.count() / 86400));
  field(out, "config_file", call.settings.source);
}

void client_fields(std::string& out, const LocalCall& call) {
  field(out, "connected_clients", std::to_string(call.info.connected_clients.load()));
  field(out, "maxclients", std::to_string(call.client_settings.max_clients));
}

// Redis counts a client that CLIENT PAUSE holds in blocked_clients, beside those blocked in a
// command; Corral holds its clients itself, so they are added to the upstream's count.
constexpr std::string_view kBlockedClients = "blocked_clients:";

void add_held_clients(std::string& text, std::size_t held) {
  if (held == 0) return;
  for (std::size_t at = text.find(kBlockedClients); at != std::string::npos;
       at = text.find(kBlockedClients, at + 1)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    const std::size_t begin = at + kBlockedClients.size();
    const std::size_t end = text.find_first_of("\r\n", begin);
    const std::size_t length = (end == std::string::npos ? text.size() : end) - begin;
    std::uint64_t blocked = 0;
    const auto parsed = std::from_chars(text.data() + begin, text.data() + begin + length, blocked);
    if (parsed.ec != std::errc() || parsed.ptr != text.data() + begin + length) return;
    text.replace(begin, length, std::to_string(blocked + held));
    return;
  }
}

// Used when the upstream cannot answer: Redis's server section minus what only Redis knows.
void server_section(std::string& out, const LocalCall& call) {
  out += "# Server\r\n";
  // The version the upstream's handshake reported: clients gate features on it.
  const std::string version = upstream::known_server_version();
  if (!version.empty()) field(out, "redis_version", version);
  field(out, "redis_mode", "standalone");
  server_fields(out, call);
}

void clients_section(std::string& out, const LocalCall& call) {
  out += "# Clients\r\n";
  client_fields(out, call);
  field(out, "blocked_clients", std::to_string(client_registry().held_by_pause()));
}

void proxy_section(std::string& out, const LocalCall& call) {
  const auto& upstream = call.settings.upstream;
  out += "# Proxy\r\n";
  field(out, "corral_version", CORRAL_VERSION);
  field(out, "io_threads", std::to_string(call.info.threads));
  field(out, "upstream_mode", std::string(upstream.kind_name()));
  std::string servers;
  // A Sentinel upstream's configured servers are the Sentinels (the primary is what they name).
  for (const auto& server : upstream.sentinel ? upstream.sentinel->addresses : upstream.servers) {
    if (!servers.empty()) servers += ',';
    servers += server.host + ":" + std::to_string(server.port);
  }
  field(out, "upstream_servers", servers);
  field(out, "upstream_ready_connections",
        std::to_string(call.info.ready_upstream_connections.load()));
  field(out, "upstream_stalled_threads", std::to_string(call.info.stalled_upstreams.load()));
  field(out, "total_connections_received", std::to_string(call.info.total_connections.load()));
  field(out, "config_file", call.settings.source);
}

void cache_section(std::string& out, const LocalCall& call) {
  out += "# Cache\r\n";
  field(out, "cache_policies", std::to_string(call.settings.policies.size()));
  if (call.cache == nullptr) return;
  const auto& store = call.cache->store();
  field(out, "cache_entries", std::to_string(store.entries()));
  field(out, "cache_bytes", std::to_string(store.bytes()));
  field(out, "cache_max_memory", std::to_string(store.max_memory()));
  field(out, "cache_evictions", std::to_string(store.evictions()));
}

struct Section {
  std::string_view name;
  void (*render)(std::string&, const LocalCall&);
};
// Corral's own sections, added to the upstream's.
constexpr Section kOwnSections[] = {{"proxy", proxy_section}, {"cache", cache_section}};
// Sections Corral can render alone, without the upstream.
constexpr Section kFallbackSections[] = {{"server", server_section}, {"clients", clients_section}};

bool wants(std::span<const std::string_view> argv, std::string_view section) {
  if (argv.size() == 1) return true;
  return std::any_of(argv.begin() + 1, argv.end(), [&](std::string_view asked) {
    return iequals(asked, section) || iequals(asked, "all") || iequals(asked, "default") ||
           iequals(asked, "everything");
  });
}

void append_sections(std::string& text, std::span<const Section> sections, const LocalCall& call) {
  for (const auto& section : sections) {
    if (!wants(call.argv, section.name)) continue;
    if (!text.empty() && !text.ends_with("\r\n\r\n")) text += "\r\n";
    section.render(text, call);
  }
}

// Renders everything Corral knows now (the reply may come much later, from another turn of the
// loop; `call` does not outlive this request).
struct Rendered {
  std::string overrides;  // "name:value\r\n" lines that replace the upstream's
  std::string own;        // Corral's sections
  std::string fallback;   // the whole answer when the upstream cannot give one
  std::size_t held_by_pause = 0;
  int protocol = kResp2;  // the client's: RESP3 gets text as a verbatim string
};

Rendered render(const LocalCall& call) {
  Rendered r;
  server_fields(r.overrides, call);
  client_fields(r.overrides, call);
  append_sections(r.own, kOwnSections, call);
  append_sections(r.fallback, kFallbackSections, call);
  append_sections(r.fallback, kOwnSections, call);
  r.held_by_pause = client_registry().held_by_pause();
  r.protocol = call.client.protocol;
  return r;
}

class MergeInfo : public upstream::ReplyTarget {
 public:
  MergeInfo(std::shared_ptr<upstream::ReplyTarget> client, Rendered rendered)
      : client_(std::move(client)), rendered_(std::move(rendered)) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    const auto decoded = resp::decode_reply(reply);
    // A RESP3 session link's INFO (inside EXEC) is a verbatim string: "txt:" then the text.
    constexpr std::size_t kFormatPrefix = 4;
    const bool verbatim = decoded && decoded->type == resp::Reply::Type::verbatim &&
                          decoded->text.size() >= kFormatPrefix;
    if (!decoded || (decoded->type != resp::Reply::Type::bulk && !verbatim)) {
      return on_failure(tag, {});
    }
    const std::string_view upstream_text =
        verbatim ? std::string_view(decoded->text).substr(kFormatPrefix) : decoded->text;
    std::string text = merge_info_text(upstream_text, rendered_.overrides);
    add_held_clients(text, rendered_.held_by_pause);
    if (!rendered_.own.empty()) {
      if (!text.empty() && !text.ends_with("\r\n\r\n")) text += "\r\n";
      text += rendered_.own;
    }
    std::string out;
    resp::append_text(out, text, rendered_.protocol);
    client_->on_reply(tag, out);
  }
  // The upstream is down or answered oddly: INFO still describes the proxy.
  void on_failure(std::uint64_t tag, std::string_view) override {
    std::string out;
    resp::append_text(out, rendered_.fallback, rendered_.protocol);
    client_->on_reply(tag, out);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  Rendered rendered_;
};
// A RESP3 client's INFO from an upstream of several servers, which answers Corral's sections
// (and a line per node) itself, as a bulk string: Redis 7 sends a RESP3 client a verbatim one.
class AsVerbatim final : public upstream::ReplyTarget {
 public:
  explicit AsVerbatim(std::shared_ptr<upstream::ReplyTarget> client) : client_(std::move(client)) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    const auto decoded = resp::decode_reply(reply);
    if (!decoded || decoded->type != resp::Reply::Type::bulk) return client_->on_reply(tag, reply);
    std::string out;
    resp::append_text(out, decoded->text, kResp3);
    client_->on_reply(tag, out);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
};
}  // namespace

std::string merge_info_text(std::string_view upstream, std::string_view overrides) {
  std::string out;
  out.reserve(upstream.size() + overrides.size());
  while (!upstream.empty()) {
    const std::size_t eol = upstream.find('\n');
    const std::string_view line = upstream.substr(0, eol == std::string_view::npos ? eol : eol + 1);
    upstream.remove_prefix(line.size());
    const std::size_t colon = line.find(':');
    std::string_view replacement;
    if (!line.starts_with("#") && colon != std::string_view::npos) {
      // Find "\nname:" (or "name:" at the start) among the overrides.
      const std::string_view name = line.substr(0, colon + 1);
      for (std::size_t at = overrides.find(name); at != std::string_view::npos;
           at = overrides.find(name, at + 1)) {
        if (at != 0 && overrides[at - 1] != '\n') continue;
        const std::size_t end = overrides.find('\n', at);
        replacement = overrides.substr(at, end == std::string_view::npos ? end : end - at + 1);
        break;
      }
    }
    out.append(replacement.empty() ? line : replacement);
  }
  return out;
}

Action info(LocalCall& call) {
  Rendered rendered = render(call);
  if (call.upstream == nullptr || call.target == nullptr) {
    resp::append_text(call.reply, rendered.fallback, call.client.protocol);
    return Action::done;
  }
  std::string command;
  resp::append_command(command, call.argv);
  call.deferred = true;
  std::string corral_only = rendered.fallback;
  std::shared_ptr<upstream::ReplyTarget> client = *call.target;
  auto merge = std::make_shared<MergeInfo>(client, std::move(rendered));
  if (call.client.protocol == kResp3) client = std::make_shared<AsVerbatim>(std::move(client));
  // Queued in MULTI: Redis answered within EXEC.
  if (call.upstream_answer) {
    merge->on_reply(call.tag, *call.upstream_answer);
    return Action::done;
  }
  call.upstream->answer_info(command, std::move(corral_only), wants(call.argv, "clusternodes"),
                             call.client.id, call.tag, merge, client);
  return Action::done;
}

}  // namespace corral::proxy
