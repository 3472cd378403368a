// One client as the proxy sees it: its connection state (ClientState) and the dispatcher of its
// io thread, behind the session's ClientHandler interface; listed in the process's registry.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "proxy/client_state.hpp"
#include "proxy/dispatcher.hpp"
#include "proxy/local/client_registry.hpp"
#include "proxy/local/queued_local.hpp"
#include "session/handler.hpp"

namespace corral::proxy {

class ClientSession final : public session::ClientHandler {
 public:
  ClientSession(Dispatcher& dispatcher, std::uint64_t id, const session::Peer& peer = {});
  ~ClientSession() override;

  std::uint64_t client_id() const override { return state_.id; }
  std::string client_addr() const override { return record_ ? record_->addr : std::string(); }
  std::string client_name() const override { return state_.name; }
  session::Classified classify(const Request& request) override;
  Action handle(const Request& request, const session::Classified& classified, std::uint64_t tag,
                const std::shared_ptr<upstream::ReplyTarget>& target,
                std::size_t awaiting) override;
  bool tunneling() const override { return state_.mode.tunneling(); }
  Action handle_tunnel(const Request& request, std::string& reply) override;
  bool settling() const override { return dispatcher_.settling(state_); }
  bool takes_unsolicited(std::string_view reply) override;
  void on_unsolicited(std::string_view reply) override;
  session::RelayVerdict relay_verdict() override;
  bool relay_input(std::string_view bytes) override {
    return dispatcher_.relay_input(state_, bytes);
  }
  void hold_relay(bool held) override { dispatcher_.hold_relay(state_, held); }
  bool hold_relay_input(std::size_t limit, std::function<void()> resume) override {
    return dispatcher_.hold_relay_input(state_, limit, std::move(resume));
  }
  bool authenticated() const override { return state_.authenticated; }
  void end_session() override;
  void drain() override;
  bool blocked() const override;

  const ClientState& state() const { return state_; }

 private:
  // CLIENT LIST / INFO show the command running (a held one too, and themselves), as Redis.
  void show_command(const Resolved& resolved);
  // Publishes what CLIENT LIST shows after each command (relaxed stores; the name rarely).
  void publish();
  void publish_subscriptions();
  // True when CLIENT PAUSE holds this request now.
  bool held_by_pause(const Request& request, const Resolved& resolved) const;
  // How a local command inside MULTI is queued (queued_local.hpp), or not at all (nullopt:
  // Corral answers or refuses it now).
  std::optional<QueuedLocalCommands::Kind> queueing_in_multi(const Request& request,
                                                             const Resolved& resolved) const;
  // Runs the transaction's queued local commands for EXEC while this session lives.
  class ExecRunner;
  // Remembers scripts that declare flags (EVALSHA under a pause) and what MULTI queued.
  void follow_scripts_and_queue(const Request& request, const Resolved& resolved,
                                bool was_in_multi);

  Dispatcher& dispatcher_;
  ClientState state_;
  std::shared_ptr<ClientRecord> record_;
  std::string published_name_;
  std::string published_user_;
  bool subscriptions_shown_ = false;  // CLIENT LIST shows a subscription count that is not 0
  // Held by a pause, and not yet let go in turn (ClientRegistry::waits_for_pause).
  bool waits_behind_held_ = false;
  // kWrite / kMayReplicate of the commands queued in the open MULTI, for EXEC under a pause.
  std::uint32_t queued_pause_flags_ = 0;
  std::size_t queued_commands_ = 0;  // in the open MULTI, as Redis numbers EXEC's results
  QueuedLocalCommands queued_locals_;
  std::shared_ptr<ExecRunner> exec_runner_;
  // EXECs sent whose queued local commands have not run yet: a local command after them waits
  // for their replies (a CLIENT GETNAME after an EXEC that sets the name must see it).
  std::size_t execs_running_locals_ = 0;
};

}  // namespace corral::proxy
