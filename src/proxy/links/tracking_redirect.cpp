// CLIENT TRACKING REDIRECT: the sink connection, delivery to the target client in Redis's form
// (a RESP3 push, or a __redis__:invalidate message to a subscribed RESP2 client), and the Corral
// id shown where Redis would show the sink's.
#include "proxy/links/tracking_redirect.hpp"

#include <charconv>
#include <utility>

#include "proxy/ascii.hpp"
#include "proxy/links/client_unblock.hpp"
#include "proxy/local/client_registry.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"

namespace corral::proxy {

namespace {
constexpr std::uint64_t kIdTag = 1;
constexpr std::uint64_t kNameTag = 2;
constexpr std::string_view kClientIdCommand = "*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n";
// The sink's name in the upstream's CLIENT LIST, for operators.
constexpr std::string_view kSetNameCommand =
    "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$15\r\ncorral-redirect\r\n";
// What Redis sends a RESP3 redirect target, and a RESP2 one in pub/sub mode, before the keys
// (an array of keys, or a null when the whole database was flushed).
constexpr std::string_view kInvalidatePush = ">2\r\n$10\r\ninvalidate\r\n";
constexpr std::string_view kInvalidateMessage =
    "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n";
constexpr std::string_view kBrokenPush = ">2\r\n$21\r\ntracking-redir-broken\r\n";
constexpr std::string_view kBrokenFlag = "$15\r\nbroken_redirect\r\n";
constexpr std::string_view kRedirectField = "$8\r\nredirect\r\n";
constexpr std::string_view kFlagsField = "$5\r\nflags\r\n";
constexpr std::string_view kErrNoSuchClient =
    "ERR The client ID you want redirect to does not exist";
constexpr std::string_view kErrOneRedirect =
    "ERR A client can only redirect to a single other client";
constexpr std::string_view kErrNotInteger = "ERR value is not an integer or out of range";
constexpr std::string_view kErrClusterRedirect =
    "ERR Corral does not support CLIENT TRACKING REDIRECT on a Redis Cluster upstream or with "
    "routes: (keys on several servers); use RESP3 tracking (HELLO 3, CLIENT TRACKING ON) instead";

bool parse_id(std::string_view text, long long& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool accepted(std::string_view reply) { return reply == "+OK\r\n" || reply == "+QUEUED\r\n"; }

// Follows Redis's answer to a CLIENT TRACKING command: the redirect changes only when Redis
// accepted it (an option it refused leaves tracking as it was).
class TrackingAnswer final : public upstream::ReplyTarget {
 public:
  TrackingAnswer(std::shared_ptr<upstream::ReplyTarget> client,
                 std::shared_ptr<TrackingRedirect> redirect, std::uint64_t target_id)
      : client_(std::move(client)), redirect_(std::move(redirect)), target_id_(target_id) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (accepted(reply)) redirect_->redirect_to(target_id_, client_);
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  std::shared_ptr<TrackingRedirect> redirect_;
  std::uint64_t target_id_;
};

// CLIENT GETREDIR / TRACKINGINFO answered by Redis for the client's connection.
class RedirectNaming final : public upstream::ReplyTarget {
 public:
  RedirectNaming(std::shared_ptr<upstream::ReplyTarget> client,
                 std::shared_ptr<TrackingRedirect> redirect)
      : client_(std::move(client)), redirect_(std::move(redirect)) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    client_->on_reply(tag, rename_redirect(reply, redirect_->sink_id(), redirect_->target_id(),
                                           redirect_->broken()));
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  std::shared_ptr<TrackingRedirect> redirect_;
};

// Where REDIRECT's id is in argv (0: none), or Redis's error for the options.
struct RedirectOption {
  std::size_t index = 0;
  std::uint64_t target = 0;
  std::string_view error;
};

// Redis's checks, in Redis's order: each REDIRECT names one live client, at most once; the other
// options are left to Redis, except that an unknown one after a REDIRECT is answered here (the
// sink would be opened for nothing).
RedirectOption find_redirect(std::span<const std::string_view> argv) {
  RedirectOption found;
  for (std::size_t j = 3; j < argv.size(); ++j) {
    const bool more = j + 1 < argv.size();
    if (iequals(argv[j], "redirect") && more) {
      ++j;
      long long id = 0;
      if (found.index != 0) return {0, 0, kErrOneRedirect};
      if (!parse_id(argv[j], id)) return {0, 0, kErrNotInteger};
      if (id <= 0 || !client_registry().find(static_cast<std::uint64_t>(id))) {
        return {0, 0, kErrNoSuchClient};
      }
      found.index = j;
      found.target = static_cast<std::uint64_t>(id);
    } else if (iequals(argv[j], "prefix") && more) {
      ++j;
    } else if (!iequals(argv[j], "bcast") && !iequals(argv[j], "optin") &&
               !iequals(argv[j], "optout") && !iequals(argv[j], "noloop") && found.index != 0) {
      found.error = "ERR syntax error";
      return found;
    }
  }
  return found;
}
}  // namespace

std::shared_ptr<TrackingRedirect> TrackingRedirect::open(upstream::Upstream& upstream, int database,
                                                         std::uint64_t tracker_id) {
  auto redirect = std::make_shared<TrackingRedirect>();
  redirect->tracker_id_ = tracker_id;
  redirect->sink_ = upstream.open_own_link(database, 3);
  if (!redirect->sink_) {
    redirect->phase_ = Phase::failed;
    return redirect;
  }
  redirect->sink_->set_unsolicited_target(redirect);
  if (!redirect->sink_->send(kSetNameCommand, redirect, kNameTag) ||
      !redirect->sink_->send(kClientIdCommand, redirect, kIdTag)) {
    redirect->lose_sink();
  }
  return redirect;
}

void TrackingRedirect::redirect_to(std::uint64_t target_id,
                                   const std::shared_ptr<upstream::ReplyTarget>& tracker) {
  if (target_id == 0) {
    end();
    return;
  }
  if (phase_ == Phase::failed) {
    // The sink died while Redis was enabling tracking towards it: as when it dies later.
    if (auto link = tracker_link_.lock()) link->close();
    return;
  }
  target_id_ = target_id;
  broken_ = false;  // Redis clears it too when tracking is enabled again
  tracker_ = tracker;
}

void TrackingRedirect::end() {
  phase_ = Phase::ended;
  target_id_ = 0;
  if (!sink_) return;
  // Closing must not read as a lost sink.
  sink_->set_unsolicited_target(nullptr);
  sink_->close();
  sink_.reset();
}

void TrackingRedirect::on_reply(std::uint64_t tag, std::string_view reply) {
  if (tag == 0) {
    deliver(reply);
    return;
  }
  if (tag == kNameTag || phase_ != Phase::opening) return;
  sink_id_ = parse_client_id_reply(reply);
  if (sink_id_ > 0) {
    phase_ = Phase::ready;
  } else {
    lose_sink();
  }
}

void TrackingRedirect::on_failure(std::uint64_t, std::string_view) { lose_sink(); }

void TrackingRedirect::lose_sink() {
  if (phase_ == Phase::ended || phase_ == Phase::failed) return;
  phase_ = Phase::failed;
  // Tracking still redirects to a connection that is gone: the client's tracking state is lost
  // with its connection, which the client then hears about like any lost state.
  if (target_id_ != 0) {
    if (auto link = tracker_link_.lock()) link->close();
  }
  target_id_ = 0;
}

void TrackingRedirect::deliver(std::string_view push) {
  if (target_id_ == 0 || !push.starts_with(kInvalidatePush)) return;
  const auto record = client_registry().find(target_id_);
  if (!record || !record->post) {
    report_broken();
    return;
  }
  // The target's protocol and pub/sub mode are read on its own thread, when the message is
  // written: Redis decides at that moment too.
  record->post([record, keys = std::string(push.substr(kInvalidatePush.size()))](
                   upstream::ReplyTarget& out) {
    std::string message;
    if (record->protocol.load(std::memory_order_relaxed) >= 3) {
      message.append(kInvalidatePush).append(keys);
    } else if (record->pubsub.load(std::memory_order_relaxed)) {
      message.append(kInvalidateMessage).append(keys);
    } else {
      return;  // RESP2 and not subscribed: Redis sends such a target nothing either
    }
    out.on_reply(0, message);
  });
}

// Redis tells a RESP3 tracking client that its redirect target is gone, on every invalidation
// it cannot deliver; a RESP2 one hears nothing (TRACKINGINFO shows broken_redirect).
void TrackingRedirect::report_broken() {
  broken_ = true;
  const auto tracker_record = client_registry().find(tracker_id_);
  auto tracker = tracker_.lock();
  if (!tracker || !tracker_record || tracker_record->protocol.load(std::memory_order_relaxed) < 3)
    return;
  std::string push(kBrokenPush);
  resp::append_integer(push, static_cast<std::int64_t>(target_id_));
  tracker->on_reply(0, push);
}

TrackingPlan plan_tracking(ClientState& client, upstream::Upstream& upstream, bool partitioned,
                           std::span<const std::string_view> argv,
                           const std::shared_ptr<upstream::ReplyTarget>& target,
                           std::string& reply) {
  TrackingPlan plan;
  const RedirectOption redirect = find_redirect(argv);
  auto answer = [&](std::string_view error) {
    reply.clear();
    resp::append_error(reply, error);
    plan.step = TrackingStep::answered;
    return plan;
  };
  if (!redirect.error.empty()) return answer(redirect.error);
  const bool on = iequals(argv[2], "on");
  auto& state = client.tracking_redirect;
  if (!on || redirect.index == 0) {
    // OFF checks the id and ignores it; ON without REDIRECT stops redirecting. Either ends the
    // sink once Redis agrees.
    if (redirect.index != 0) {
      plan.argv.assign(argv.begin(), argv.end());
      plan.argv.erase(plan.argv.begin() + static_cast<std::ptrdiff_t>(redirect.index) - 1,
                      plan.argv.begin() + static_cast<std::ptrdiff_t>(redirect.index) + 1);
    }
    if (state) plan.reply_to = std::make_shared<TrackingAnswer>(target, state, 0);
    return plan;
  }
  if (partitioned) return answer(kErrClusterRedirect);
  if (!state || state->phase() == TrackingRedirect::Phase::ended) {
    state = TrackingRedirect::open(upstream, client.database, client.id);
  }
  switch (state->phase()) {
    case TrackingRedirect::Phase::opening:
      plan.step = TrackingStep::wait;
      return plan;
    case TrackingRedirect::Phase::failed:
      state->end();
      state.reset();
      return answer(upstream::kErrUnavailable);
    case TrackingRedirect::Phase::ready:
    case TrackingRedirect::Phase::ended:
      break;
  }
  plan.argv.assign(argv.begin(), argv.end());
  plan.argv[redirect.index] = std::to_string(state->sink_id());
  plan.reply_to = std::make_shared<TrackingAnswer>(target, state, redirect.target);
  return plan;
}

std::shared_ptr<upstream::ReplyTarget> redirect_naming_target(
    const ClientState& client, const CommandSpec& row,
    const std::shared_ptr<upstream::ReplyTarget>& target) {
  const auto& state = client.tracking_redirect;
  if (!state || state->phase() != TrackingRedirect::Phase::ready || state->target_id() == 0 ||
      (row.name != "client|getredir" && row.name != "client|trackinginfo")) {
    return target;
  }
  return std::make_shared<RedirectNaming>(target, state);
}

std::string rename_redirect(std::string_view reply, std::int64_t from, std::uint64_t to,
                            bool broken) {
  const std::string sink = ":" + std::to_string(from) + "\r\n";
  const std::string corral = ":" + std::to_string(to) + "\r\n";
  if (reply == sink) return corral;  // CLIENT GETREDIR
  std::string out(reply);
  const auto field = out.find(kRedirectField);
  if (field == std::string::npos) return out;  // an error, or not a TRACKINGINFO reply
  if (out.compare(field + kRedirectField.size(), sink.size(), sink) == 0) {
    out.replace(field + kRedirectField.size(), sink.size(), corral);
  }
  const auto flags = out.find(kFlagsField);
  if (!broken || flags == std::string::npos || out.find(kBrokenFlag) != std::string::npos) {
    return out;
  }
  // The flags are an array (RESP2) or a set (RESP3) ending where the redirect field starts:
  // broken_redirect is Redis's last flag.
  const auto count_at = flags + kFlagsField.size() + 1;
  const auto count_end = out.find("\r\n", count_at);
  long long count = 0;
  if (count_end == std::string::npos ||
      !parse_id(std::string_view(out).substr(count_at, count_end - count_at), count)) {
    return out;
  }
  out.insert(field, kBrokenFlag);
  out.replace(count_at, count_end - count_at, std::to_string(count + 1));
  return out;
}

void end_tracking_redirect(ClientState& client) {
  if (client.tracking_redirect) client.tracking_redirect->end();
  client.tracking_redirect.reset();
}

}  // namespace corral::proxy
