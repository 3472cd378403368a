// ACL DRYRUN verdicts per (user, command, key), learned on first use and dropped on ACL changes.
#include "proxy/local/acl_verdicts.hpp"

#include <atomic>
#include <utility>

#include "resp/encoder.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
std::atomic<std::uint64_t> rules_epoch{0};

constexpr std::string_view kDryRunAllowed = "+OK\r\n";

}  // namespace

void forget_acl_rules() { rules_epoch.fetch_add(1, std::memory_order_relaxed); }

namespace {
class ForgetAtReply final : public upstream::ReplyTarget {
 public:
  explicit ForgetAtReply(std::shared_ptr<upstream::ReplyTarget> client)
      : client_(std::move(client)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    forget_acl_rules();
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    forget_acl_rules();  // it may have run all the same
    client_->on_failure(tag, error);
  }
  void on_error(std::uint64_t tag, upstream::ErrorKind kind, std::string_view error) override {
    forget_acl_rules();
    client_->on_error(tag, kind, error);
  }
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override {
    client_->note_phases(tag, phases);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
};
}  // namespace

std::shared_ptr<upstream::ReplyTarget> forget_acl_rules_at_reply(
    std::shared_ptr<upstream::ReplyTarget> target) {
  return std::make_shared<ForgetAtReply>(std::move(target));
}

AclVerdicts::AclVerdicts(upstream::Upstream& upstream, std::size_t capacity)
    : upstream_(upstream),
      capacity_(capacity),
      epoch_(rules_epoch.load(std::memory_order_relaxed)) {}

void AclVerdicts::renew_if_stale() {
  const auto epoch = rules_epoch.load(std::memory_order_relaxed);
  if (epoch != epoch_ || table_->size() >= capacity_) {
    epoch_ = epoch;
    table_ = std::make_shared<Table>();
  }
}

bool AclVerdicts::may_serve_cached(std::string_view user, const CommandSpec& row,
                                   std::span<const std::string_view> argv) {
  renew_if_stale();
  key_indices(row, argv, keys_);
  if (keys_.empty()) return false;
  bool allowed = true;
  for (const auto index : keys_) {
    // User names hold no NUL byte: the entry's parts cannot run into each other.
    entry_.assign(user).append(1, '\0').append(row.name).append(1, '\0').append(argv[index]);
    const auto found = table_->find(entry_);
    if (found == table_->end()) {
      // A single-key read is asked as it came (DRYRUN checks its arity too); a multi-key one
      // (MGET) key by key, since each key's cached value is served on its own.
      std::vector<std::string_view> question{"ACL", "DRYRUN", user};
      if (keys_.size() == 1) {
        question.insert(question.end(), argv.begin(), argv.end());
      } else {
        question.push_back(argv[0]);
        question.push_back(argv[index]);
      }
      ask(entry_, question);
      allowed = false;
    } else if (found->second != Verdict::allowed) {
      allowed = false;
    }
  }
  return allowed;
}

AclVerdicts::Verdict AclVerdicts::may_run(std::string_view user, const CommandSpec& row,
                                          std::span<const std::string_view> argv) {
  renew_if_stale();
  // A second NUL keeps these entries apart from may_serve_cached's (user, command, key) ones.
  entry_.assign(user).append(1, '\0').append(row.name).append(2, '\0');
  // PING's and ECHO's argument is a message, not an option: keyed by it, each new message would
  // cost a DRYRUN and fill the table.
  const bool message = row.name == "ping" || row.name == "echo";
  if (!message && row.name.find('|') == std::string_view::npos && argv.size() > 1) {
    entry_.append(argv[1]);
  }
  const auto found = table_->find(entry_);
  if (found != table_->end()) return found->second;
  std::vector<std::string_view> question{"ACL", "DRYRUN", user};
  question.insert(question.end(), argv.begin(), argv.end());
  return ask(entry_, question) ? Verdict::pending : Verdict::unavailable;
}

bool AclVerdicts::ask(std::string entry, std::span<const std::string_view> question) {
  std::string command;
  resp::append_command(command, question);
  auto target = upstream::CallbackTarget::make(
      [weak = std::weak_ptr<Table>(table_), entry](std::string_view reply, bool failed) {
        const auto table = weak.lock();
        if (!table) return;  // forgotten meanwhile: the answer may predate the change
        if (failed) {
          table->erase(entry);  // asked again on the next request
        } else {
          (*table)[entry] = reply == kDryRunAllowed ? Verdict::allowed : Verdict::denied;
        }
      });
  (*table_)[entry] = Verdict::pending;
  if (upstream_.ask_server(command, 0, target)) return true;
  table_->erase(entry);
  return false;
}

}  // namespace corral::proxy
