// Array splitting over the reply framer.
#include "resp/array_elements.hpp"

#include <charconv>

#include "resp/reply_framer.hpp"

namespace corral::resp {

std::optional<std::vector<std::string_view>> array_elements(std::string_view reply,
                                                            std::optional<std::size_t> expected) {
  const auto header_end = reply.find("\r\n");
  if (reply.empty() || reply.front() != '*' || header_end == std::string_view::npos) {
    return std::nullopt;
  }
  std::size_t count = 0;
  const auto digits = reply.substr(1, header_end - 1);
  const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  if (parsed.ec != std::errc() || parsed.ptr != digits.data() + digits.size()) return std::nullopt;
  if (expected && count != *expected) return std::nullopt;
  std::vector<std::string_view> elements;
  std::string_view rest = reply.substr(header_end + 2);
  // Never reserve from the wire count: each element needs at least three bytes.
  if (count > rest.size() / 3) return std::nullopt;
  elements.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto frame = frame_reply(rest);
    if (frame.status != FrameStatus::complete) return std::nullopt;
    elements.push_back(rest.substr(0, frame.size));
    rest.remove_prefix(frame.size);
  }
  if (!rest.empty()) return std::nullopt;
  return elements;
}

}  // namespace corral::resp
