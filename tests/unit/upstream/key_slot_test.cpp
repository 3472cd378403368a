// CRC16 and key slots against the vectors Redis publishes (cluster spec, crc16.c) and slots that
// redis-server 7.0's CLUSTER KEYSLOT reported.
#include <catch2/catch.hpp>

#include "upstream/cluster/key_slot.hpp"

using corral::upstream::crc16;
using corral::upstream::key_slot;

TEST_CASE("crc16 is the XMODEM variant Redis Cluster uses", "[upstream][cluster]") {
  CHECK(crc16("123456789") == 0x31C3);
  CHECK(crc16("") == 0);
}

TEST_CASE("key slots follow hash tags as Redis does", "[upstream][cluster]") {
  // Values from CLUSTER KEYSLOT on redis-server 7.0.15.
  CHECK(key_slot("123456789") == 12739);
  CHECK(key_slot("foo") == 12182);
  CHECK(key_slot("{user1000}.following") == 3443);
  CHECK(key_slot("{user1000}.followers") == key_slot("user1000"));
  CHECK(key_slot("foo{}{bar}") == 8363);     // an empty first tag: the whole key
  CHECK(key_slot("foo{{bar}}zap") == 4015);  // the tag is "{bar"
  CHECK(key_slot("foo{bar}{zap}") == key_slot("bar"));
  CHECK(key_slot(std::string_view("\xff\x00", 2)) < 16384);
}
