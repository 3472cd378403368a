// Corral's own keyed calls on one Redis: every key on the shared connection of the database.
#include "upstream/single/single_caller.hpp"

namespace corral::upstream {

namespace {

class PoolCaller final : public KeyedCaller {
 public:
  PoolCaller(const boost::asio::any_io_executor& executor, Links& links, int database)
      : executor_(executor), links_(links), database_(database) {}

  const boost::asio::any_io_executor& executor() const override { return executor_; }
  bool send(std::string_view, std::string command, std::shared_ptr<ReplyTarget> target,
            std::uint64_t tag) override {
    return links_.send_shared(database_, 0, command, std::move(target), tag, 2);
  }
  std::vector<std::string> primaries() override { return {"upstream"}; }
  bool by_slot() const override { return false; }
  bool send_to_primary(std::string_view, std::string command, std::shared_ptr<ReplyTarget> target,
                       std::uint64_t tag) override {
    return links_.send_shared(database_, 0, command, std::move(target), tag, 2);
  }

 private:
  boost::asio::any_io_executor executor_;
  Links& links_;
  int database_;
};

}  // namespace

std::shared_ptr<KeyedCaller> make_single_caller(const boost::asio::any_io_executor& executor,
                                                Links& links, int database) {
  return std::make_shared<PoolCaller>(executor, links, database);
}

}  // namespace corral::upstream
