// The process-wide client registry: membership under a lock, per-client activity in atomics.
#include "proxy/local/client_registry.hpp"

#include <algorithm>

#include "cache/clock.hpp"

namespace corral::proxy {

// Within a session's read (cache::TurnTime) the read's own clock reading: activity is recorded
// per request, and CLIENT LIST shows it in seconds.
std::int64_t ClientRegistry::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             cache::SystemClock::instance().now().time_since_epoch())
      .count();
}

std::shared_ptr<ClientRecord> ClientRegistry::add(
    std::uint64_t id, std::string addr, std::string laddr, std::function<void()> close,
    std::function<void(std::chrono::milliseconds)> close_if_idle,
    std::function<void(std::function<void(upstream::ReplyTarget&)>)> post,
    std::shared_ptr<const session::ClientBuffers> buffers, std::function<void()> show_buffers) {
  auto record = std::make_shared<ClientRecord>();
  record->id = id;
  record->addr = std::move(addr);
  record->laddr = std::move(laddr);
  record->close = std::move(close);
  record->close_if_idle = std::move(close_if_idle);
  record->post = std::move(post);
  record->buffers = std::move(buffers);
  record->show_buffers = std::move(show_buffers);
  record->last_active_ms.store(now_ms(), std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  clients_[id] = Entry{record, {}, {}, {}, 0};
  return record;
}

void ClientRegistry::remove(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto it = clients_.find(id);
  if (it == clients_.end()) return;
  // A held client that leaves must not keep the clients held after it waiting.
  if (it->second.hold_ticket != 0) held_order_.erase(it->second.hold_ticket);
  clients_.erase(it);
}

std::shared_ptr<ClientRecord> ClientRegistry::find(std::uint64_t id) const {
  std::lock_guard lock(mutex_);
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : it->second.record;
}

void ClientRegistry::set_name(std::uint64_t id, std::string_view name) {
  std::lock_guard lock(mutex_);
  if (auto it = clients_.find(id); it != clients_.end()) it->second.name = name;
}

void ClientRegistry::set_user(std::uint64_t id, std::string_view user) {
  std::lock_guard lock(mutex_);
  if (auto it = clients_.find(id); it != clients_.end()) {
    it->second.user = user == "default" ? std::string_view() : user;
  }
}

void ClientRegistry::set_upstream_client(std::uint64_t id, UpstreamClient upstream) {
  std::lock_guard lock(mutex_);
  if (auto it = clients_.find(id); it != clients_.end()) it->second.upstream = std::move(upstream);
}

void ClientRegistry::clear_upstream_client(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  if (auto it = clients_.find(id); it != clients_.end()) it->second.upstream = {};
}

std::optional<UpstreamClient> ClientRegistry::upstream_client(std::uint64_t id) const {
  std::lock_guard lock(mutex_);
  auto it = clients_.find(id);
  if (it == clients_.end()) return std::nullopt;
  if (it->second.upstream.redis_id == 0 && !it->second.upstream.pending) return std::nullopt;
  return it->second.upstream;
}

bool ClientRegistry::matches(const Entry& entry, const ClientFilter& filter) const {
  const ClientRecord& r = *entry.record;
  if (!filter.ids.empty() &&
      std::find(filter.ids.begin(), filter.ids.end(), r.id) == filter.ids.end()) {
    return false;
  }
  if (!filter.addr.empty() && filter.addr != r.addr) return false;
  if (!filter.laddr.empty() && filter.laddr != r.laddr) return false;
  if (!filter.user.empty() &&
      filter.user != (entry.user.empty() ? std::string_view("default") : entry.user)) {
    return false;
  }
  if (filter.skip_id != 0 && filter.skip_id == r.id) return false;
  if (!filter.type.empty()) {
    // A client relaying SYNC/PSYNC is a replica, none is a master of Corral; a MONITOR client
    // is "normal", as in Redis.
    const bool pubsub =
        r.pubsub.load(std::memory_order_relaxed) && !r.monitoring.load(std::memory_order_relaxed);
    const bool replica = r.replica.load(std::memory_order_relaxed);
    if (filter.type != (replica ? "replica" : pubsub ? "pubsub" : "normal")) return false;
  }
  if (filter.max_age_seconds > 0) {
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - r.created);
    if (age.count() < filter.max_age_seconds) return false;
  }
  return true;
}

// Redis's CLIENT LIST fields, with Corral's own values: its buffers for this client (fd is -1:
// Corral does not show its descriptors; multi-mem is 0: queued commands are forwarded at once,
// never held).
void ClientRegistry::append_line(std::string& out, const Entry& entry) const {
  const ClientRecord& r = *entry.record;
  const auto now = std::chrono::steady_clock::now();
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - r.created).count();
  const auto idle = (now_ms() - r.last_active_ms.load(std::memory_order_relaxed)) / 1000;
  const CommandSpec* last = r.last_command.load(std::memory_order_relaxed);
  const bool pubsub = r.pubsub.load(std::memory_order_relaxed);
  const bool monitoring = r.monitoring.load(std::memory_order_relaxed);
  const bool replica = r.replica.load(std::memory_order_relaxed);
  const int queued_in_multi = r.queued_in_multi.load(std::memory_order_relaxed);
  const bool multi = queued_in_multi >= 0;
  // Redis flags a client that CLIENT PAUSE holds as blocked, like one in a blocking command.
  const bool blocked = r.blocked_commands.load(std::memory_order_relaxed) > 0 ||
                       (r.held_by_pause.load(std::memory_order_relaxed) && paused());
  const int protocol = r.protocol.load(std::memory_order_relaxed);
  const session::ClientBuffers none;
  const session::ClientBuffers& b = r.buffers ? *r.buffers : none;
  const auto field = [&](std::string_view name, std::uint64_t value) {
    out += ' ';
    out += name;
    out += '=';
    out += std::to_string(value);
  };
  // In Redis's order; MONITOR is a kind of replica there, and Corral counts it as pub/sub.
  std::string flags;
  if (replica || monitoring) flags += replica ? 'S' : 'O';
  if (pubsub && !monitoring) flags += 'P';
  if (multi) flags += 'x';
  if (blocked) flags += 'b';
  if (r.tracking.load(std::memory_order_relaxed)) flags += 't';
  if (r.no_evict.load(std::memory_order_relaxed)) flags += 'e';
  if (flags.empty()) flags = "N";
  out += "id=" + std::to_string(r.id) + " addr=" + r.addr + " laddr=" + r.laddr +
         " fd=-1 name=" + entry.name + " age=" + std::to_string(age) +
         " idle=" + std::to_string(std::max<std::int64_t>(0, idle)) + " flags=" + flags +
         " db=" + std::to_string(r.database.load(std::memory_order_relaxed)) +
         " sub=" + std::to_string(r.channels.load(std::memory_order_relaxed)) +
         " psub=" + std::to_string(r.patterns.load(std::memory_order_relaxed)) +
         " ssub=" + std::to_string(r.shard_channels.load(std::memory_order_relaxed)) +
         " multi=" + std::to_string(queued_in_multi);
  field("qbuf", b.load(b.query));
  field("qbuf-free", b.load(b.query_free));
  field("argv-mem", b.load(b.argv_memory));
  out += " multi-mem=0";
  // rbp, Redis's peak of the reply buffer: Corral's only grows until it is given back.
  field("rbs", b.load(b.reply_buffer));
  field("rbp", b.load(b.reply_buffer));
  field("obl", b.load(b.output));
  field("oll", b.load(b.parked_replies));
  field("omem", b.load(b.parked_bytes));
  field("tot-mem", b.total());
  out += std::string(" events=") + (b.load(b.output) > 0 ? "rw" : "r") +
         " cmd=" + (last ? std::string(last->name) : std::string("NULL")) +
         " user=" + (entry.user.empty() ? std::string("default") : entry.user) +
         " redir=-1 resp=" + std::to_string(protocol) + "\n";
}

std::string ClientRegistry::list(const ClientFilter& filter) const {
  std::string out;
  std::lock_guard lock(mutex_);
  for (const auto& [id, entry] : clients_) {
    if (matches(entry, filter)) append_line(out, entry);
  }
  return out;
}

std::string ClientRegistry::info(std::uint64_t id) const {
  std::string out;
  std::lock_guard lock(mutex_);
  if (auto it = clients_.find(id); it != clients_.end()) append_line(out, it->second);
  return out;
}

std::size_t ClientRegistry::kill(const ClientFilter& filter) const {
  std::vector<std::function<void()>> closes;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, entry] : clients_) {
      if (matches(entry, filter) && entry.record->close) closes.push_back(entry.record->close);
    }
  }
  // Outside the lock: a close posts to the client's thread, which removes it from here later.
  for (auto& close : closes) close();
  return closes.size();
}

std::size_t ClientRegistry::close_idle(std::chrono::milliseconds idle) const {
  const std::int64_t quiet_since = now_ms() - idle.count();
  std::vector<std::function<void(std::chrono::milliseconds)>> asks;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, entry] : clients_) {
      const ClientRecord& r = *entry.record;
      if (r.pubsub.load(std::memory_order_relaxed) || !r.close_if_idle) continue;
      if (r.last_active_ms.load(std::memory_order_relaxed) > quiet_since) continue;
      asks.push_back(r.close_if_idle);
    }
  }
  for (auto& ask : asks) ask(idle);
  return asks.size();
}

void ClientRegistry::pause(std::chrono::steady_clock::time_point until, bool all) {
  const auto until_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(until.time_since_epoch()).count();
  // Like Redis: a pause never shortens a longer one in force, and ALL wins over WRITE. Under the
  // lock: two CLIENT PAUSE on two io threads must not undo each other.
  std::lock_guard lock(mutex_);
  if (paused_until_ms_.load() > now_ms()) {
    pause_all_.store(pause_all_.load() || all);
    if (until_ms > paused_until_ms_.load()) paused_until_ms_.store(until_ms);
    return;
  }
  pause_all_.store(all);
  paused_until_ms_.store(until_ms);
}

void ClientRegistry::unpause() { paused_until_ms_.store(0); }

bool ClientRegistry::holds(std::uint32_t flags) const {
  if (!paused()) return false;
  return pause_all_.load(std::memory_order_relaxed) || (flags & (kWrite | kMayReplicate)) != 0;
}

bool ClientRegistry::paused() const {
  const auto until = paused_until_ms_.load(std::memory_order_relaxed);
  return until != 0 && until > now_ms();
}

std::size_t ClientRegistry::held_by_pause() const {
  if (!paused()) return 0;  // the held retry within moments
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(clients_.begin(), clients_.end(), [](const auto& client) {
        return client.second.record->held_by_pause.load(std::memory_order_relaxed);
      }));
}

bool ClientRegistry::waits_for_pause(std::uint64_t id, bool held_now) {
  std::lock_guard lock(mutex_);
  const auto it = clients_.find(id);
  if (it == clients_.end()) return held_now;
  std::uint64_t& ticket = it->second.hold_ticket;
  if (held_now) {
    if (ticket == 0) {
      ticket = ++last_hold_ticket_;
      held_order_.emplace(ticket, id);
    }
    return true;
  }
  if (ticket == 0) return false;
  if (held_order_.begin()->first != ticket) return true;
  held_order_.erase(held_order_.begin());
  ticket = 0;
  return false;
}

ClientRegistry& client_registry() {
  static ClientRegistry* const registry = new ClientRegistry();  // never destroyed: io threads
  return *registry;                                              // may outlive static teardown
}

}  // namespace corral::proxy
