// Shared helpers for the resp/ tests: seeded generators of requests and replies; hiredis, the
// reference implementation, comes from the fuzz targets' oracle header.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../../fuzz/hiredis_oracle.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"

namespace corral::resp::test {

using Rng = std::mt19937_64;

inline std::size_t pick(Rng& rng, std::size_t below) {
  return std::uniform_int_distribution<std::size_t>(0, below - 1)(rng);
}

// Short strings most of the time, sometimes empty, sometimes a few KB; bytes from `alphabet`.
inline std::string random_string(Rng& rng, std::string_view alphabet, std::size_t max_long = 3000) {
  const std::size_t kind = pick(rng, 10);
  const std::size_t size = kind == 0 ? 0 : kind < 9 ? pick(rng, 16) + 1 : pick(rng, max_long) + 1;
  std::string out;
  for (std::size_t i = 0; i < size; ++i) out.push_back(alphabet[pick(rng, alphabet.size())]);
  return out;
}

inline std::string binary_alphabet() {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  return all + "\r\n\r\n$*";  // make protocol bytes inside payloads common
}

// Simple strings and errors may hold anything but CR and LF.
inline std::string line_alphabet() {
  std::string out;
  for (int c = 0; c < 256; ++c) {
    if (c != '\r' && c != '\n') out.push_back(static_cast<char>(c));
  }
  return out;
}

inline std::int64_t random_integer(Rng& rng) {
  switch (pick(rng, 6)) {
    case 0:
      return 0;
    case 1:
      return std::numeric_limits<std::int64_t>::min();
    case 2:
      return std::numeric_limits<std::int64_t>::max();
    case 3:
      return -static_cast<std::int64_t>(pick(rng, 1000));
    default:
      return static_cast<std::int64_t>(rng());
  }
}

// A random reply and its encoding. `null_array` picks *-1 over $-1 for nulls (both decode to null).
// hiredis 0.14 refuses arrays nested deeper than 7, so `max_depth` stays below that in oracle
// tests.
inline Reply random_reply(Rng& rng, std::string& bytes, int max_depth) {
  Reply reply;
  const std::size_t kind = pick(rng, max_depth > 0 ? 8 : 6);
  switch (kind) {
    case 0:
      reply.type = Reply::Type::simple;
      reply.text = random_string(rng, line_alphabet(), 200);
      append_simple(bytes, reply.text);
      break;
    case 1:
      reply.type = Reply::Type::error;
      reply.text = "ERR " + random_string(rng, line_alphabet(), 200);
      append_error(bytes, reply.text);
      break;
    case 2:
      reply.type = Reply::Type::integer;
      reply.integer = random_integer(rng);
      append_integer(bytes, reply.integer);
      break;
    case 3:
    case 4:
      reply.type = Reply::Type::bulk;
      reply.text = random_string(rng, binary_alphabet());
      append_bulk(bytes, reply.text);
      break;
    case 5:
      append_null(bytes);
      break;
    case 6:
      append_null_array(bytes);
      break;
    default: {
      reply.type = Reply::Type::array;
      const std::size_t count = pick(rng, 6);
      append_array_header(bytes, count);
      for (std::size_t i = 0; i < count; ++i) {
        reply.elements.push_back(random_reply(rng, bytes, max_depth - 1));
      }
    }
  }
  return reply;
}

using oracle::HiredisReader;

}  // namespace corral::resp::test
