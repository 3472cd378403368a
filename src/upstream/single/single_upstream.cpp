// One Redis behind the Upstream interface.
#include "upstream/single/single_upstream.hpp"

#include <boost/asio/post.hpp>

#include "upstream/out_of_band.hpp"
#include "upstream/sentinel/replica_reads.hpp"
#include "upstream/single/single_caller.hpp"
#include "upstream/user_pools.hpp"

namespace corral::upstream {

bool SingleUpstream::send_with_replica_reads(const Routed& command, std::uint64_t tag,
                                             const std::shared_ptr<ReplyTarget>& target) {
  return replica_reads_->send(command, tag, target);
}

SessionLinkResult SingleUpstream::open_session_link(int, const Routed& command) {
  return {links_.dedicated_link(command.database, command.protocol)};
}

bool SingleUpstream::send_out_of_band(const Routed& command, std::uint64_t tag,
                                      const std::shared_ptr<ReplyTarget>& target) {
  return send_once(links_.dedicated_link(command.database, 2), command.bytes, target, tag);
}

bool SingleUpstream::ask_server(std::string_view command, std::uint64_t tag,
                                const std::shared_ptr<ReplyTarget>& target) {
  return links_.send_shared(database_, 0, command, target, tag, 2);
}

boost::asio::awaitable<CallResult> SingleUpstream::call_server(std::string command) {
  const CommandSender sender = [this](std::string_view bytes, std::shared_ptr<ReplyTarget> target,
                                      std::uint64_t tag) {
    return links_.send_shared(database_, 0, bytes, std::move(target), tag, 2);
  };
  co_return co_await call(sender, command);
}

ServerSend SingleUpstream::send_to_server(std::string_view server, std::string_view command,
                                          int database, std::size_t affinity, int protocol,
                                          std::uint64_t tag,
                                          const std::shared_ptr<ReplyTarget>& target) {
  if (!server.empty()) return ServerSend::no_such_server;
  return links_.send_shared(database, affinity, command, target, tag, protocol)
             ? ServerSend::sent
             : ServerSend::unavailable;
}

void SingleUpstream::answer_info(std::string_view info_command, std::string, bool,
                                 std::size_t affinity, std::uint64_t tag,
                                 const std::shared_ptr<ReplyTarget>& merge,
                                 const std::shared_ptr<ReplyTarget>&) {
  // A client's commands keep their order on its affinity connection; INFO reads nothing of
  // theirs, but a shared connection also answers it without waiting for a dedicated one. RESP2:
  // the merge reads a bulk string (RESP3 would send a verbatim one); INFO's handler shows it to
  // a RESP3 client as Redis would, verbatim.
  if (!links_.send_shared(database_, affinity, info_command, merge, tag, 2)) {
    merge->on_failure(tag, kErrUnavailable);
  }
}

std::shared_ptr<KeyedCaller> SingleUpstream::keyed_caller(const KeyedCallerOptions& options) {
  (void)options;  // one server: no failover to retry through
  return make_single_caller(executor_, links_, database_);
}

void SingleUpstream::fetch(std::span<const std::string_view>, std::string_view bytes, int database,
                           const std::shared_ptr<ReplyTarget>& target) {
  if (links_.send_shared(database, 0, bytes, target, 0, 2)) return;
  // The contract forbids calling back from within fetch(): the caller may still be setting up.
  boost::asio::post(executor_, [target] { target->on_failure(0, kErrUnavailable); });
}

void SingleUpstream::fetch_from_replica(std::span<const std::string_view> argv,
                                        std::string_view bytes, int database,
                                        std::optional<std::chrono::steady_clock::time_point> seen,
                                        const std::shared_ptr<ReplyTarget>& target) {
  if (replica_reads_ == nullptr || !replica_reads_->fill(bytes, database, seen, target)) {
    fetch(argv, bytes, database, target);
  }
}

std::shared_ptr<Link> SingleUpstream::open_own_link(int database, int protocol) {
  return links_.dedicated_link(database, protocol);
}

std::shared_ptr<Link> SingleUpstream::open_own_link_to(std::string_view server, int database,
                                                       int protocol) {
  return server.empty() ? links_.dedicated_link(database, protocol) : nullptr;
}

UserUpstreamResult SingleUpstream::as_user(std::string_view user, std::string_view password,
                                           int entered_database) {
  if (users_ == nullptr) return {};
  return users_->acquire(user, password, entered_database);
}

}  // namespace corral::upstream
