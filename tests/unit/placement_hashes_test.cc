// Tests for the placement lab's hashing layer (tools/placement): CRC16-XMODEM and Redis key
// slots with hash tags, the SHA-256/SHA-1/MD5 wrappers, KeyHash, node names and user keys.
// Expected values are published test vectors or were computed with Python's hashlib and a
// bitwise CRC16 (poly 0x1021, init 0) in a scratch script outside the repository.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/placement/crc16.h"
#include "tools/placement/digests.h"
#include "tools/placement/key_hash.h"
#include "tools/placement/node_names.h"

namespace chord::placement {
namespace {

// Lower-case hex of a digest, for comparing against published digests.
template <size_t kSize>
std::string Hex(const std::array<uint8_t, kSize>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

TEST(PlacementCrc16Test, XmodemCheckValue) {
  // The CRC catalogue's check value of CRC-16/XMODEM.
  EXPECT_EQ(Crc16Xmodem("123456789"), 0x31C3);
  EXPECT_EQ(Crc16Xmodem(""), 0);
}

TEST(PlacementCrc16Test, XmodemMoreValues) {
  // Bitwise CRC16 (poly 0x1021, init 0, no reflection, no final xor) in Python.
  EXPECT_EQ(Crc16Xmodem("A"), 0x58E5);
  EXPECT_EQ(Crc16Xmodem("foo"), 0xAF96);
  EXPECT_EQ(Crc16Xmodem("user-1"), 0xF0FE);
  EXPECT_EQ(Crc16Xmodem(std::string_view("a\0b", 3)), 0xE0BF);  // embedded NUL is data
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  EXPECT_EQ(Crc16Xmodem(all_bytes), 0x7E55);  // bytes 0x00..0xff: high bytes are unsigned
}

TEST(PlacementRedisSlotTest, KnownSlots) {
  // "foo" -> 12182 and "somekey" -> 11058 are the Redis documentation's CLUSTER KEYSLOT
  // examples; the others come from the Python CRC16 above, mod 16384.
  EXPECT_EQ(RedisKeySlot("foo"), 12182);
  EXPECT_EQ(RedisKeySlot("somekey"), 11058);
  EXPECT_EQ(RedisKeySlot("foo{hash_tag}"), 2515);
  EXPECT_EQ(RedisKeySlot("bar"), 5061);
  EXPECT_EQ(RedisKeySlot("hello"), 866);
  EXPECT_EQ(RedisKeySlot("user-1"), 12542);
  EXPECT_EQ(RedisKeySlot("user1000"), 3443);
}

TEST(PlacementRedisSlotTest, HashTagsShareTheTagSlot) {
  EXPECT_EQ(RedisHashTag("{user1000}.following"), "user1000");
  EXPECT_EQ(RedisHashTag("{user1000}.followers"), "user1000");
  EXPECT_EQ(RedisKeySlot("{user1000}.following"), RedisKeySlot("user1000"));
  EXPECT_EQ(RedisKeySlot("{user1000}.followers"), RedisKeySlot("user1000"));
  EXPECT_EQ(RedisKeySlot("{user1000}.following"), 3443);
  // Without the tag rule these two would land in slots 12218 and 3696 (Python).
  EXPECT_NE(Crc16Xmodem("{user1000}.following") % kRedisSlots, 3443u);
}

TEST(PlacementRedisSlotTest, HashTagEdgeCases) {
  // The Redis Cluster specification's examples.
  EXPECT_EQ(RedisHashTag("foo{}{bar}"), "foo{}{bar}");  // empty first tag: whole key
  EXPECT_EQ(RedisKeySlot("foo{}{bar}"), 8363);
  EXPECT_EQ(RedisHashTag("foo{{bar}}zap"), "{bar");  // from the first '{' to the first '}'
  EXPECT_EQ(RedisKeySlot("foo{{bar}}zap"), 4015);
  EXPECT_EQ(RedisKeySlot("foo{{bar}}zap"), RedisKeySlot("{bar"));
  EXPECT_EQ(RedisHashTag("foo{bar}{zap}"), "bar");  // only the first tag counts
  EXPECT_EQ(RedisKeySlot("foo{bar}{zap}"), 5061);
  EXPECT_EQ(RedisKeySlot("foo{bar}{zap}"), RedisKeySlot("bar"));
  EXPECT_EQ(RedisHashTag("foo{bar"), "foo{bar");  // '{' without '}': whole key
  EXPECT_EQ(RedisKeySlot("foo{bar"), 15278);
  EXPECT_EQ(RedisHashTag("foo}bar{"), "foo}bar{");  // '}' before '{' does not close it
  EXPECT_EQ(RedisHashTag("plain"), "plain");
  EXPECT_EQ(RedisHashTag("{x}"), "x");
}

TEST(PlacementDigestTest, KnownDigests) {
  // FIPS 180-2 / RFC 1321 test vectors for "abc" and the empty string.
  EXPECT_EQ(Hex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(Sha1("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Hex(Md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Hex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex(Sha1("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Hex(Md5("")), "d41d8cd98f00b204e9800998ecf8427e");
}

TEST(PlacementDigestTest, LoadBigEndian64) {
  const std::array<uint8_t, 9> bytes = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xff};
  EXPECT_EQ(LoadBigEndian64(bytes.data()), 0x0123456789abcdefULL);
  EXPECT_EQ(LoadBigEndian64(bytes.data() + 1), 0x23456789abcdefffULL);
}

TEST(PlacementKeyHashTest, HashKeyOfUser1) {
  // hashlib in Python: sha256("user-1") = c6c289e49e9c05b2... (the background article's
  // position 77.6 = 0xc6c2.../2^64 * 100), sha1 = 9dfffe45..., md5 = d6d77053....
  const KeyHash h = HashKey("user-1");
  EXPECT_EQ(Hex(h.sha256), "c6c289e49e9c05b2145860387b73bcb18df43fb09a1e4a4a9713c76c88bb541b");
  EXPECT_EQ(h.point, 0xc6c289e49e9c05b2ULL);
  EXPECT_EQ(Hex(h.sha1), "9dfffe450852c20c8876f6e5a37da6e469bf2c9c");
  // MD5 bytes 0-3 (d6 d7 70 53) read little-endian.
  EXPECT_EQ(h.ketama, 0x5370d7d6u);
  EXPECT_EQ(h.slot, 12542);
}

TEST(PlacementKeyHashTest, HashKeyFieldsAgreeWithTheHashes) {
  for (const std::string key : {"user-2", "hello", "{user1000}.following", ""}) {
    const KeyHash h = HashKey(key);
    EXPECT_EQ(h.sha256, Sha256(key)) << key;
    EXPECT_EQ(h.point, LoadBigEndian64(Sha256(key).data())) << key;
    EXPECT_EQ(h.sha1, Sha1(key)) << key;
    const Md5Digest md5 = Md5(key);
    EXPECT_EQ(h.ketama, uint32_t{md5[0]} | uint32_t{md5[1]} << 8 | uint32_t{md5[2]} << 16 |
                            uint32_t{md5[3]} << 24)
        << key;
    EXPECT_EQ(h.slot, RedisKeySlot(key)) << key;
  }
}

TEST(PlacementKeyHashTest, UserKeys) {
  EXPECT_EQ(UserKey(1), "user-1");
  EXPECT_EQ(UserKey(1000), "user-1000");
  const std::vector<KeyHash> keys = HashUserKeys(3);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0].point, 0xc6c289e49e9c05b2ULL);  // user-1, as above
  EXPECT_EQ(keys[2].sha256, Sha256("user-3"));
  EXPECT_TRUE(HashUserKeys(0).empty());
}

TEST(PlacementNodeNamesTest, SpreadsheetColumnOrder) {
  EXPECT_EQ(NodeName(0), "server-a");
  EXPECT_EQ(NodeName(1), "server-b");
  EXPECT_EQ(NodeName(25), "server-z");
  EXPECT_EQ(NodeName(26), "server-aa");
  EXPECT_EQ(NodeName(27), "server-ab");
  EXPECT_EQ(NodeName(51), "server-az");
  EXPECT_EQ(NodeName(52), "server-ba");
  EXPECT_EQ(NodeName(701), "server-zz");
  EXPECT_EQ(NodeName(702), "server-aaa");
}

TEST(PlacementNodeNamesTest, NodeNamesListsTheFirstCount) {
  EXPECT_EQ(NodeNames(4),
            (std::vector<std::string>{"server-a", "server-b", "server-c", "server-d"}));
  EXPECT_TRUE(NodeNames(0).empty());
  const std::vector<std::string> many = NodeNames(703);
  ASSERT_EQ(many.size(), 703u);
  EXPECT_EQ(many[702], "server-aaa");
}

}  // namespace
}  // namespace chord::placement
