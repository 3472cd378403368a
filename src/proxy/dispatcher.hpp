// Decides for each client request: answer locally, refuse, or forward upstream (shared or
// dedicated connection). One Dispatcher per io thread; it never blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "metrics/process_info.hpp"
#include "proxy/client_state.hpp"
#include "proxy/commands/command_lookup.hpp"
#include "proxy/commands/command_table.hpp"
#include "proxy/local/acl_verdicts.hpp"
#include "proxy/request.hpp"
#include "proxy/upstream_user_auth.hpp"
#include "session/handler.hpp"
#include "stampede/core/hot_keys.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {
class Link;
class KeyedCaller;
class Upstream;
struct Routed;
}  // namespace corral::upstream
namespace corral::stampede {
class ReadThrough;
class CacheRuntime;
}  // namespace corral::stampede
namespace corral::slowlog {
class SlowLog;
}

namespace corral::proxy {

struct LocalCall;
using metrics::ProcessInfo;

using Action = session::Action;

struct Resolved {
  const CommandSpec* spec = nullptr;  // nullptr: unknown command
  const CommandSpec* sub = nullptr;   // the subcommand row, when the command has one
  std::size_t metric_id = 0;          // index for per-command metrics (unknown commands share one)

  // The row that decides: the subcommand's when there is one. Only for a known command.
  const CommandSpec& row() const { return sub ? *sub : *spec; }
};

class Dispatcher : public session::Handler {
 public:
  // Everything upstream goes through `upstream` (this io thread's; it must outlive the
  // dispatcher). `read_through` (may be null: no cache) serves the reads that cache policies cover.
  Dispatcher(const config::Settings& settings, upstream::Upstream& upstream, ProcessInfo& info,
             stampede::ReadThrough* read_through = nullptr,
             stampede::CacheRuntime* cache = nullptr);

  // Corral's own keys (CORRAL.ROLLOVER / CORRAL.PURGE, tag purge counts) go through `caller`, by
  // slot on a cluster; unset, ROLLOVER and PURGE answer unavailable.
  void set_keyed_caller(std::shared_ptr<upstream::KeyedCaller> caller) {
    keyed_caller_ = std::move(caller);
  }

  // The process's slowlog, for SLOWLOG and CORRAL.SLOWLOG (unset: they answer that it is off).
  void set_slowlog(slowlog::SlowLog* log) { slowlog_ = log; }
  // Hot-key detection (hot_keys.detect): this io thread, number `thread`, counts a sample of its
  // keyed requests into `keys`, which CORRAL.HOTKEYS reports.
  void set_hot_keys(stampede::HotKeys* keys, std::size_t thread);

  static std::size_t metric_id_count();
  static std::string metric_name(std::size_t metric_id);

  Resolved resolve(const Request& request) const;
  // True when client.allow_commands leaves this dangerous command refused (or client.
  // refuse_scripts this script).
  bool refuses(const Resolved& resolved) const;

  // session::Handler: a ClientSession (proxy/client_session.hpp) per client.
  std::unique_ptr<session::ClientHandler> open_session() override;
  std::unique_ptr<session::ClientHandler> open_session(const session::Peer& peer) override;
  std::uint32_t protocol_error_metric() const override;

  // Handles a request that owns reply slot `tag` of `target`; `awaiting` counts the client's
  // earlier requests whose replies have not arrived yet.
  Action handle(ClientState& client, const Request& request, const Resolved& resolved,
                std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                std::size_t awaiting);

  // In tunnel mode (dispatcher_tunnel.cpp) requests have no slots: subscription commands and
  // PING go to the dedicated connection as they are; Corral answers the others in `reply`, as
  // Redis would, once a barrier has settled that the client is still subscribed (until then it
  // returns drain_then_retry: ask again once settling() is false). Returns close_after_reply,
  // with `reply` to send last, when the client must be disconnected (QUIT, connection gone).
  Action handle_tunnel(ClientState& client, const Request& request, std::string& reply);
  // True while a barrier is unanswered: the client's next request waits for it.
  bool settling(const ClientState& client) const;
  // True when `reply` is a barrier's, which only Corral reads (the client must not see it).
  bool takes_unsolicited(ClientState& client, std::string_view reply);

  // A reply on the client's dedicated connection that matched no request (subscribed mode ...).
  void on_unsolicited(ClientState& client, std::string_view reply);

  // After SYNC/PSYNC (dispatcher_replication.cpp): what the upstream made of it, from the
  // client's link. Refused, the client is an ordinary one again (no longer CLIENT LIST's replica).
  session::RelayVerdict relay_verdict(ClientState& client);
  // Relay mode (after SYNC/PSYNC, dispatcher_replication.cpp): the client's bytes go up as
  // they are; false when its connection cannot take them.
  bool relay_input(ClientState& client, std::string_view bytes);
  // Relay mode: the client is behind (held) or has caught up; its upstream bytes wait meanwhile.
  void hold_relay(ClientState& client, bool held);
  // Relay mode, the other way: see upstream::Link::hold_relay_input.
  bool hold_relay_input(ClientState& client, std::size_t limit, std::function<void()> resume);

  void end_session(ClientState& client);

  // A command Corral answers itself, for a client of an upstream ACL user: answered here as Redis
  // would refuse it (NOPERM, which also aborts an open transaction), or asked to wait for the
  // user's rights; nullopt when the user may run it (always, for other clients).
  std::optional<Action> refuse_without_rights(ClientState& client, const CommandSpec& row,
                                              std::span<const std::string_view> argv,
                                              std::uint64_t tag,
                                              const std::shared_ptr<upstream::ReplyTarget>& target);
  // A local row without a handler (SLOWLOG's unknown subcommands, COMMAND HELP): Redis answers
  // it, inside MULTI too; never CORRAL.ROLLOVER/PURGE, which Corral runs against Redis itself.
  static bool answered_by_redis(const CommandSpec& row);
  // True when `row` queued inside MULTI goes upstream as itself and Corral merges its part into
  // Redis's answer at EXEC (kMergedAtExec, on an upstream of one server).
  bool merges_at_exec(const ClientState& client, const CommandSpec& row) const;
  // That merge: appends to `answer` the reply `argv` gets from Corral given `upstream_answer`,
  // Redis's (no error) element of EXEC's reply.
  void merge_queued_local(ClientState& client, std::span<const std::string_view> argv,
                          std::string_view upstream_answer, std::string& answer);
  // A local command queued inside MULTI, run once EXEC has run the transaction (queued_local.hpp):
  // its one reply appended to `answer`. For rows marked kRunsAtExec, whose handlers answer at once.
  void run_queued_local(ClientState& client, std::span<const std::string_view> argv,
                        std::string& answer);
  // The upstream that runs the client's commands: its ACL user's, or Corral's own.
  upstream::Upstream& upstream_for(const ClientState& client) const {
    return client.user_upstream ? *client.user_upstream : upstream_;
  }

  const config::Settings& settings() const { return settings_; }
  // client.*: the settings at start, then a SIGHUP reload's (applied on this io thread); the
  // clients already connected keep their authentication.
  const config::ClientSettings& client_settings() const { return client_; }
  void apply_client_settings(const config::ClientSettings& client);
  ProcessInfo& process_info() { return info_; }

 private:
  // Where one request goes, once the route column has been read against its arguments.
  // `pushed`: a RESP3 client's (un)subscribe, confirmed by pushes on its dedicated connection.
  // `out_of_band`: SCRIPT KILL and friends, on a connection of their own at once.
  enum class Path { shared, dedicated, tunnel, pushed, out_of_band };

  // `pushes_confirm`: the client speaks RESP3 outside MULTI, where Redis confirms (un)subscribe
  // with pushes.
  // handle() in reply mode ON (CLIENT REPLY OFF and SKIP withhold what it answers).
  Action handle_command(ClientState& client, const Request& request, const Resolved& resolved,
                        std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                        std::size_t awaiting);
  static Path path_for(const CommandSpec& row, std::span<const std::string_view> argv,
                       bool pushes_confirm);
  // `answer`, when set, receives Redis's reply instead of `target` (which still gets pushes).
  Action forward(ClientState& client, const Request& request, const CommandSpec& row,
                 std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                 std::size_t awaiting,
                 const std::shared_ptr<upstream::ReplyTarget>& answer = nullptr);
  // CLIENT TRACKING: a REDIRECT names Corral's id, Redis must see its own (tracking_redirect.hpp).
  Action forward_tracking(ClientState& client, const Request& request, const CommandSpec& row,
                          std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                          std::size_t awaiting);
  // Route::replication: REPLCONF on the client's own link; SYNC/PSYNC then make it a raw relay
  // and return Action::relay.
  Action forward_replication(ClientState& client, const Request& request, const CommandSpec& row,
                             std::uint64_t tag,
                             const std::shared_ptr<upstream::ReplyTarget>& target,
                             std::size_t awaiting);
  std::shared_ptr<upstream::ReplyTarget> invalidating_target(
      ClientState& client, const CommandSpec& row, const Request& request,
      const std::shared_ptr<upstream::ReplyTarget>& target);
  // A handler's call with what every local command gets (dispatcher_local.cpp).
  LocalCall local_call(ClientState& client, std::span<const std::string_view> argv,
                       std::size_t awaiting, std::string& reply);
  Action answer_locally(ClientState& client, const Request& request, const CommandSpec& row,
                        std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                        std::size_t awaiting);
  enum class LinkStep : std::uint8_t { ready, drain, wait };
  LinkStep acquire_dedicated(ClientState& client, Path path, std::size_t awaiting,
                             const upstream::Routed& command);
  bool waits_for_failover(ClientState& client, upstream::ErrorKind refusal);
  // Opens the client's session link for `partition` (null when the upstream has none); false
  // when the request must wait instead (a failover, or a cluster's first slot map).
  bool open_dedicated(ClientState& client, int partition, const upstream::Routed& command);
  bool send(ClientState& client, const CommandSpec& row, const upstream::Routed& command, Path path,
            std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& reply_to,
            const std::shared_ptr<upstream::ReplyTarget>& target);
  std::string_view wire_bytes(const Request& request);
  // Sends a tunnel barrier on the client's dedicated connection; false when it is gone.
  bool send_tunnel_barrier(ClientState& client);
  // handle_tunnel before CLIENT REPLY OFF is applied to Corral's own answer.
  Action tunnel_request(ClientState& client, const Request& request, std::string& reply);
  bool command_allowed(const Resolved& resolved) const;
  // A client of an upstream ACL user gets a cached value only for a read the upstream said that
  // user may run (a value cached from another user's read must not widen its rights).
  bool may_serve_cached(const ClientState& client, const CommandSpec& row,
                        std::span<const std::string_view> argv);
  void sample_hot_key(const CommandSpec& row, std::span<const std::string_view> argv);

  const config::Settings& settings_;
  upstream::Upstream& upstream_;
  // Refused unless client.allow_commands lists them: kDangerous, and with client.refuse_scripts
  // the commands that run server-side code (for setups whose upstream has no ACL for scripts).
  std::uint32_t refused_flags_ = 0;
  std::shared_ptr<upstream::KeyedCaller> keyed_caller_;  // null in tests
  slowlog::SlowLog* slowlog_ = nullptr;
  stampede::HotKeys* hot_keys_ = nullptr;
  std::optional<stampede::HotKeySampler> hot_sampler_;
  ProcessInfo& info_;
  stampede::ReadThrough* read_through_;
  stampede::CacheRuntime* cache_;
  CommandLookup lookup_;  // names the table lacks, asked of the upstream
  UpstreamUserAuth user_auth_;
  AclVerdicts acl_verdicts_;
  std::vector<std::size_t> keys_;  // reused for write invalidation
  config::ClientSettings client_;
  std::vector<std::string> allowed_;  // client.allow_commands as table names ("config|get")
  std::string scratch_;
  // While a withheld request is handled: the session's own target, for the pushes and
  // unsolicited replies of the connection it may subscribe or tunnel (those are not withheld).
  const std::shared_ptr<upstream::ReplyTarget>* pushes_to_ = nullptr;
};

}  // namespace corral::proxy
