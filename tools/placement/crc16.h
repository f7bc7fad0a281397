// CRC16-XMODEM (polynomial 0x1021, initial value 0, no reflection, no final xor) and the
// Redis Cluster key-to-slot rule built on it. Pure functions; any thread.
#ifndef CHORD_TOOLS_PLACEMENT_CRC16_H_
#define CHORD_TOOLS_PLACEMENT_CRC16_H_

#include <cstdint>
#include <string_view>

namespace chord::placement {

inline constexpr uint32_t kRedisSlots = 16384;

[[nodiscard]] uint16_t Crc16Xmodem(std::string_view data);

// The part of `key` Redis Cluster hashes: the text between the first '{' and the first '}'
// after it when that text is non-empty, else the whole key ("foo{}{bar}" hashes whole).
[[nodiscard]] std::string_view RedisHashTag(std::string_view key);

// CRC16-XMODEM of the hash tag, mod 16384.
[[nodiscard]] uint16_t RedisKeySlot(std::string_view key);

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_CRC16_H_
