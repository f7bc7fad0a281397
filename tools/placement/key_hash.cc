#include "tools/placement/key_hash.h"

#include "tools/placement/crc16.h"

namespace chord::placement {

KeyHash HashKey(std::string_view key) {
  KeyHash h;
  h.sha256 = Sha256(key);
  h.point = LoadBigEndian64(h.sha256.data());
  h.sha1 = Sha1(key);
  const Md5Digest md5 = Md5(key);
  h.ketama = static_cast<uint32_t>(md5[3]) << 24 | static_cast<uint32_t>(md5[2]) << 16 |
             static_cast<uint32_t>(md5[1]) << 8 | md5[0];
  h.slot = RedisKeySlot(key);
  return h;
}

std::string UserKey(uint64_t index) { return "user-" + std::to_string(index); }

std::vector<KeyHash> HashUserKeys(uint64_t count) {
  std::vector<KeyHash> keys;
  keys.reserve(count);
  for (uint64_t i = 1; i <= count; ++i) keys.push_back(HashKey(UserKey(i)));
  return keys;
}

}  // namespace chord::placement
