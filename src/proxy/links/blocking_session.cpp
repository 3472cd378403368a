// Blocking commands on a client's session link: the count of those Redis still blocks on, and the
// link kept between them so that the next one does not wait behind a connect and a handshake.
#include "proxy/links/blocking_session.hpp"

#include <atomic>
#include <utility>

#include "proxy/links/queued_select.hpp"
#include "proxy/local/client_registry.hpp"
#include "upstream/link.hpp"

namespace corral::proxy {
namespace {

// Counts one blocking command as due until its outcome arrives, whichever way it arrives.
class BlockingReply final : public upstream::ReplyTarget {
 public:
  BlockingReply(std::shared_ptr<std::size_t> due, std::shared_ptr<std::atomic<int>> shown,
                std::shared_ptr<upstream::ReplyTarget> client)
      : due_(std::move(due)), shown_(std::move(shown)), client_(std::move(client)) {
    ++*due_;
    if (shown_) shown_->fetch_add(1, std::memory_order_relaxed);
  }
  // A target dropped unanswered (a send the link refused, a test's, a link torn down without
  // failing it) must not leave the client blocked for good, in CLIENT LIST or for its session.
  ~BlockingReply() override { settle(); }
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    settle();
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    settle();
    client_->on_failure(tag, error);
  }
  void on_error(std::uint64_t tag, upstream::ErrorKind kind, std::string_view error) override {
    settle();
    client_->on_error(tag, kind, error);
  }
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override {
    client_->note_phases(tag, phases);
  }

 private:
  void settle() {
    if (due_) --*std::exchange(due_, nullptr);
    if (shown_) std::exchange(shown_, nullptr)->fetch_sub(1, std::memory_order_relaxed);
  }

  std::shared_ptr<std::size_t> due_;
  std::shared_ptr<std::atomic<int>> shown_;
  std::shared_ptr<upstream::ReplyTarget> client_;
};

}  // namespace

std::shared_ptr<upstream::ReplyTarget> track_blocking_reply(
    ClientState& client, std::shared_ptr<upstream::ReplyTarget> target) {
  if (!client.blocking_replies_due) client.blocking_replies_due = std::make_shared<std::size_t>(0);
  client.dedicated_blocked = true;
  return std::make_shared<BlockingReply>(client.blocking_replies_due, client.shown_blocked,
                                         std::move(target));
}

bool blocked_in_redis(const ClientState& client) {
  return client.dedicated && client.blocking_replies_due && *client.blocking_replies_due > 0;
}

void set_dedicated_aside(ClientState& client) {
  // A SELECT that an EXEC ran moved the link: the client follows it at its next command, which
  // may never come (end_session), and the link must be filed under the database it is in.
  apply_database_after_exec(client);
  auto& link = client.dedicated;
  // Known clean: Redis answered everything sent on it and keeps no state for it (no WATCH,
  // transaction, subscription, tracking or reply mode), so it is as good as a new connection.
  const bool clean = link && client.dedicated_blocked && !client.mode.holds_connection() &&
                     link->state() == upstream::Link::State::ready && link->in_flight() == 0;
  if (!clean) {
    release_dedicated(client);
    return;
  }
  KeptLink kept{std::move(link), client.database, client.protocol, client.cluster_slot,
                client.upstream_user};
  kept.link->set_unsolicited_target(nullptr);
  release_dedicated(client);  // nothing to close now: the mode's bookkeeping only
  // Redis's id for the link stays in the client registry: CLIENT UNBLOCK still finds it.
  client.kept = std::move(kept);
}

bool take_kept_link(ClientState& client, int partition) {
  KeptLink kept = std::exchange(client.kept, {});
  if (!kept.link) return false;
  if (kept.link->state() == upstream::Link::State::ready && kept.link->in_flight() == 0 &&
      kept.database == client.database && kept.protocol == client.protocol &&
      kept.partition == partition && kept.upstream_user == client.upstream_user) {
    client.dedicated = std::move(kept.link);
    return true;
  }
  kept.link->close();
  client_registry().clear_upstream_client(client.id);
  return false;
}

}  // namespace corral::proxy
