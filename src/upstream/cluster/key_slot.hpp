// Redis Cluster's key -> hash slot function: CRC16 (XMODEM) of the key's hash tag, modulo 16384.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace corral::upstream {

inline constexpr std::size_t kSlotCount = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the variant Redis Cluster uses.
std::uint16_t crc16(std::string_view bytes);

// The slot Redis Cluster stores `key` in: crc16 of hash_tag(key) modulo kSlotCount.
std::uint16_t key_slot(std::string_view key);

}  // namespace corral::upstream
