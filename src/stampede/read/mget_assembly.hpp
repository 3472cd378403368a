// An MGET reply assembled from its parts (cache hits, flights, the batch fetch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/reply_target.hpp"

namespace corral::stampede {

// An MGET answered part by part (cache hits, flights, the batch fetch); replies to the client
// once every part is in. Lives on one io thread; part replies arrive as on_reply(part index).
class MgetAssembly final : public upstream::ReplyTarget {
 public:
  MgetAssembly(std::shared_ptr<upstream::ReplyTarget> client, std::uint64_t tag, std::size_t parts);
  void set_part(std::size_t part, std::string_view reply);
  void on_reply(std::uint64_t part, std::string_view reply) override;
  void on_failure(std::uint64_t part, std::string_view error) override;

 private:
  void part_done();

  std::shared_ptr<upstream::ReplyTarget> client_;
  std::uint64_t tag_;
  std::vector<std::string> parts_;
  std::size_t pending_;
  std::optional<std::string> error_reply_;  // a part's error reply answers the whole MGET
  std::optional<std::string> failure_;
};

}  // namespace corral::stampede
