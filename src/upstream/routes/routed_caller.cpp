// Routing Corral's own keyed conversations (fleet lock, pointers, purges) like client commands.
#include "upstream/routes/routed_caller.hpp"

#include <algorithm>

namespace corral::upstream {

std::pair<std::size_t, std::string_view> split_qualified(const std::vector<std::string>& qualifiers,
                                                         std::string_view server) {
  for (std::size_t i = 1; i < qualifiers.size(); ++i) {
    if (server.starts_with(qualifiers[i])) return {i, server.substr(qualifiers[i].size())};
  }
  return {kDefaultUpstream, server};
}

namespace {

class RoutedCaller final : public KeyedCaller {
 public:
  RoutedCaller(std::shared_ptr<const RouteTable> routes,
               std::vector<std::shared_ptr<KeyedCaller>> callers,
               std::vector<std::string> qualifiers)
      : routes_(routes), callers_(std::move(callers)), qualifiers_(std::move(qualifiers)) {}

  const boost::asio::any_io_executor& executor() const override {
    return callers_[kDefaultUpstream]->executor();
  }
  bool send(std::string_view key, std::string command, std::shared_ptr<ReplyTarget> target,
            std::uint64_t tag) override {
    return callers_[routes_->upstream_of(key)]->send(key, std::move(command), std::move(target),
                                                     tag);
  }
  std::vector<std::string> primaries() override {
    std::vector<std::string> all;
    for (std::size_t i = 0; i < callers_.size(); ++i) {
      for (auto& primary : callers_[i]->primaries()) all.push_back(qualifiers_[i] + primary);
    }
    return all;
  }
  bool by_slot() const override {
    return std::any_of(callers_.begin(), callers_.end(),
                       [](const auto& caller) { return caller->by_slot(); });
  }
  bool send_to_primary(std::string_view primary, std::string command,
                       std::shared_ptr<ReplyTarget> target, std::uint64_t tag) override {
    const auto [upstream, server] = split_qualified(qualifiers_, primary);
    return callers_[upstream]->send_to_primary(server, std::move(command), std::move(target), tag);
  }

 private:
  std::shared_ptr<const RouteTable> routes_;
  std::vector<std::shared_ptr<KeyedCaller>> callers_;
  std::vector<std::string> qualifiers_;
};

}  // namespace

std::shared_ptr<KeyedCaller> make_routed_caller(std::shared_ptr<const RouteTable> routes,
                                                std::vector<std::shared_ptr<KeyedCaller>> callers,
                                                std::vector<std::string> qualifiers) {
  return std::make_shared<RoutedCaller>(std::move(routes), std::move(callers),
                                        std::move(qualifiers));
}

}  // namespace corral::upstream
