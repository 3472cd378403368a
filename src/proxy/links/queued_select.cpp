// SELECT queued inside MULTI: the client follows it only when EXEC's reply says it ran.
#include "proxy/links/queued_select.hpp"

#include <string_view>
#include <utility>

namespace corral::proxy {
namespace {

// EXEC's reply is an array when the transaction ran; a nil (a WATCH that failed: "*-1" in RESP2,
// "_" in RESP3) or an error (EXECABORT) when nothing of it did.
bool transaction_ran(std::string_view reply) {
  return reply.starts_with('*') && !reply.starts_with("*-1");
}

class DatabaseAtExec final : public upstream::ReplyTarget {
 public:
  DatabaseAtExec(std::shared_ptr<upstream::ReplyTarget> client, std::shared_ptr<int> cell,
                 int database)
      : client_(std::move(client)), cell_(std::move(cell)), database_(database) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (transaction_ran(reply)) *cell_ = database_;
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  std::shared_ptr<int> cell_;
  int database_;
};

}  // namespace

std::shared_ptr<upstream::ReplyTarget> select_at_exec(
    ClientState& client, std::shared_ptr<upstream::ReplyTarget> reply_to) {
  const int queued = std::exchange(client.queued_database, -1);
  if (queued < 0) return reply_to;
  if (!client.database_after_exec) client.database_after_exec = std::make_shared<int>(-1);
  return std::make_shared<DatabaseAtExec>(std::move(reply_to), client.database_after_exec, queued);
}

void apply_database_after_exec(ClientState& client) {
  if (!client.database_after_exec || *client.database_after_exec < 0) return;
  client.database = std::exchange(*client.database_after_exec, -1);
}

}  // namespace corral::proxy
