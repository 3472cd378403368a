// HTTP-date parsing: split into day, month, year and time fields by the form's separators, then
// checked as a calendar date (std::chrono) so "31 Feb" is refused rather than wrapped.
#include "origin/http_date.hpp"

#include <array>
#include <charconv>
#include <string>

namespace corral::origin {

namespace {

constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

std::optional<int> number(std::string_view text) {
  int value = 0;
  if (text.empty() || text.size() > 4) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<unsigned> month_number(std::string_view name) {
  for (std::size_t i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == name) return static_cast<unsigned>(i + 1);
  }
  return std::nullopt;
}

// Splits on any of `separators`, dropping empty pieces (asctime pads single-digit days).
template <std::size_t N>
std::optional<std::array<std::string_view, N>> split(std::string_view text,
                                                     std::string_view separators) {
  std::array<std::string_view, N> out;
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto end = std::min(text.find_first_of(separators, pos), text.size());
    if (end > pos) {
      if (count == N) return std::nullopt;
      out[count++] = text.substr(pos, end - pos);
    }
    pos = end + 1;
  }
  if (count != N) return std::nullopt;
  return out;
}

std::optional<std::chrono::sys_seconds> assemble(std::string_view day_text,
                                                 std::string_view month_text,
                                                 std::string_view year_text,
                                                 std::string_view clock) {
  const auto d = number(day_text);
  const auto m = month_number(month_text);
  auto y = number(year_text);
  const auto hms = split<3>(clock, ":");
  if (!d || !m || !y || !hms || clock.size() != 8) return std::nullopt;
  if (year_text.size() == 2) *y += *y >= 70 ? 1900 : 2000;
  const auto h = number((*hms)[0]);
  const auto min = number((*hms)[1]);
  const auto s = number((*hms)[2]);
  if (!h || !min || !s || *h > 23 || *min > 59 || *s > 60) return std::nullopt;
  namespace chrono = std::chrono;
  const chrono::year_month_day date{chrono::year{*y}, chrono::month{*m},
                                    chrono::day{static_cast<unsigned>(*d)}};
  if (!date.ok()) return std::nullopt;
  return chrono::sys_days(date) + chrono::hours(*h) + chrono::minutes(*min) + chrono::seconds(*s);
}

}  // namespace

std::optional<std::chrono::sys_seconds> parse_http_date(std::string_view text) {
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) {
    // asctime: "Sun Nov  6 08:49:37 1994"
    const auto parts = split<5>(text, " ");
    if (!parts) return std::nullopt;
    return assemble((*parts)[2], (*parts)[1], (*parts)[4], (*parts)[3]);
  }
  const std::string_view rest = text.substr(comma + 1);
  if (comma == 3) {
    // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    const auto parts = split<5>(rest, " ");
    if (!parts || (*parts)[4] != "GMT" || (*parts)[0].size() != 2 || (*parts)[2].size() != 4)
      return std::nullopt;
    return assemble((*parts)[0], (*parts)[1], (*parts)[2], (*parts)[3]);
  }
  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
  const auto parts = split<5>(rest, " -");
  if (!parts || (*parts)[4] != "GMT" || (*parts)[2].size() != 2) return std::nullopt;
  return assemble((*parts)[0], (*parts)[1], (*parts)[2], (*parts)[3]);
}

}  // namespace corral::origin
