// Test support: a ReplyTarget that records what reached it, one "<tag> <reply>" or
// "<tag> failed <error>" line per call, in order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/reply_target.hpp"

namespace corral::upstream::test {

class RecordingTarget final : public ReplyTarget {
 public:
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    log.push_back(std::to_string(tag) + " " + std::string(reply));
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    log.push_back(std::to_string(tag) + " failed " + std::string(error));
  }
  std::vector<std::string> log;
};

}  // namespace corral::upstream::test
