// CLIENT TRACKING ... REDIRECT <id> through Corral. Clients name Corral's client ids, and Redis
// redirects only to a connection of its own: each redirecting client gets a RESP3 connection of
// Corral's (its sink), whose Redis id the command names instead, and what Redis pushes there is
// delivered to the target client, on whichever io thread serves it, in the form Redis would use.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/client_state.hpp"
#include "proxy/commands/command_table.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

// One redirecting client's sink and the target its invalidations go to. Lives on the client's io
// thread; the sink's pushes arrive there and are posted to the target's.
class TrackingRedirect final : public upstream::ReplyTarget,
                               public std::enable_shared_from_this<TrackingRedirect> {
 public:
  enum class Phase : std::uint8_t { opening, ready, failed, ended };

  // Opens the sink (a RESP3 connection) and asks Redis its id.
  static std::shared_ptr<TrackingRedirect> open(upstream::Upstream& upstream, int database,
                                                std::uint64_t tracker_id);

  Phase phase() const { return phase_; }
  std::int64_t sink_id() const { return sink_id_; }
  std::uint64_t target_id() const { return target_id_; }
  bool broken() const { return broken_; }

  // Redis accepted CLIENT TRACKING ON naming the sink (target_id != 0) or without a redirect
  // (target_id 0: the sink is closed); `tracker` is the client's own reply target, for
  // tracking-redir-broken pushes.
  void redirect_to(std::uint64_t target_id, const std::shared_ptr<upstream::ReplyTarget>& tracker);
  // The client's dedicated connection, where Redis keeps its tracking state: closed if the sink
  // is lost, so that the client learns its invalidations stopped (as from any lost state).
  void bind_tracker_link(const std::shared_ptr<upstream::Link>& link) { tracker_link_ = link; }
  // Closes the sink; nothing more is delivered.
  void end();

  // The sink's CLIENT ID reply (tag kIdTag) and its pushes (tag 0).
  void on_reply(std::uint64_t tag, std::string_view reply) override;
  void on_failure(std::uint64_t tag, std::string_view error) override;

 private:
  void deliver(std::string_view push);
  void report_broken();
  void lose_sink();

  std::shared_ptr<upstream::Link> sink_;
  std::uint64_t tracker_id_ = 0;
  Phase phase_ = Phase::opening;
  std::int64_t sink_id_ = 0;
  std::uint64_t target_id_ = 0;
  bool broken_ = false;
  std::weak_ptr<upstream::ReplyTarget> tracker_;
  std::weak_ptr<upstream::Link> tracker_link_;
};

// What the dispatcher does with a CLIENT TRACKING request.
enum class TrackingStep : std::uint8_t {
  forward,  // send `argv` (the client's own when empty) and answer through `reply_to`
  wait,     // the sink is still opening: ask again shortly (Action::wait_then_retry)
  answered  // `reply` holds Corral's answer (an error Redis would give)
};

struct TrackingPlan {
  TrackingStep step = TrackingStep::forward;
  std::vector<std::string> argv;                    // the rewritten command, if any
  std::shared_ptr<upstream::ReplyTarget> reply_to;  // wraps the client's target
};

// Plans CLIENT TRACKING ON|OFF [REDIRECT id] ... for `client`: validates the id as Redis does,
// opens the client's sink when it first redirects, names the sink instead of the Corral id, and
// follows Redis's answer. `cluster`: a Redis Cluster upstream, where REDIRECT is refused.
TrackingPlan plan_tracking(ClientState& client, upstream::Upstream& upstream, bool partitioned,
                           std::span<const std::string_view> argv,
                           const std::shared_ptr<upstream::ReplyTarget>& target,
                           std::string& reply);

// CLIENT GETREDIR / TRACKINGINFO of a redirecting client: Redis names the sink, the client must
// see its target's Corral id (and broken_redirect once Corral found that target gone). Returns
// `target` itself when nothing needs rewriting.
std::shared_ptr<upstream::ReplyTarget> redirect_naming_target(
    const ClientState& client, const CommandSpec& row,
    const std::shared_ptr<upstream::ReplyTarget>& target);

// Rewrites a CLIENT TRACKINGINFO reply (RESP2 or RESP3): the redirect `from` becomes `to`, and
// broken_redirect joins the flags when `broken`.
std::string rename_redirect(std::string_view reply, std::int64_t from, std::uint64_t to,
                            bool broken);

// The client leaves or its dedicated connection went: its sink closes.
void end_tracking_redirect(ClientState& client);

}  // namespace corral::proxy
