// Id: a 160-bit unsigned position on the Chord identifier ring (SHA-1 sized), with the
// modular arithmetic and ring intervals every other part of the system relies on. Values
// are immutable and cheap to copy; safe to use from any thread.
#ifndef CHORD_PROTOCOL_ID_H_
#define CHORD_PROTOCOL_ID_H_

#include <array>
#include <bit>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace chord {

class Id {
 public:
  static constexpr int kBits = 160;
  static constexpr int kBytes = kBits / 8;

  // Zero.
  constexpr Id() : bytes_{} {}
  explicit Id(const std::array<uint8_t, kBytes>& bytes) : bytes_(bytes) {}

  // SHA-1 of `data` (OpenSSL EVP; the digest is fetched once per process).
  static Id Sha1(std::string_view data);
  // Parses exactly 40 hex digits (either case). Nullopt on anything else.
  static std::optional<Id> FromHex(std::string_view hex);
  // Interprets exactly 20 big-endian bytes. Nullopt on any other length.
  static std::optional<Id> FromBytes(std::string_view bytes);
  // 2^i for 0 <= i < 160.
  static Id PowerOfTwo(int i);
  // The largest id, 2^160 - 1.
  static Id Max();

  // 40 lowercase hex digits.
  std::string ToHex() const;
  // First `n` hex digits, for logs and tables.
  std::string ShortHex(int n = 8) const { return ToHex().substr(0, n); }
  // The 20 big-endian bytes (as carried on the wire and used as a store key prefix).
  std::string ToBytes() const;
  const std::array<uint8_t, kBytes>& bytes() const { return bytes_; }

  // Arithmetic modulo 2^160.
  Id operator+(const Id& other) const;
  Id operator-(const Id& other) const;

  // Numeric order (big-endian bytes compare like the number). Compared as two 64-bit words
  // and one 32-bit word rather than byte by byte: ids are compared in every store lookup and
  // every routing step, and the first word almost always decides.
  friend std::strong_ordering operator<=>(const Id& a, const Id& b) {
    for (int offset : {0, 8}) {
      const uint64_t x = a.Word64(offset);
      const uint64_t y = b.Word64(offset);
      if (x != y) return x < y ? std::strong_ordering::less : std::strong_ordering::greater;
    }
    const uint32_t x = a.Word32(16);
    const uint32_t y = b.Word32(16);
    if (x != y) return x < y ? std::strong_ordering::less : std::strong_ordering::greater;
    return std::strong_ordering::equal;
  }
  friend bool operator==(const Id&, const Id&) = default;

  // Ring intervals, walking clockwise from `a` to `b`. When a == b the arc is the whole
  // ring: (a, a) is every id except a, and (a, a] is every id.
  // x in (a, b)
  static bool InOpen(const Id& x, const Id& a, const Id& b);
  // x in (a, b]
  static bool InHalfOpen(const Id& x, const Id& a, const Id& b);

  // Clockwise distance from `from` to `to`, i.e. (to - from) mod 2^160.
  static Id Distance(const Id& from, const Id& to) { return to - from; }

  // The high 64 bits as a fraction of the ring in [0, 1); for shares and angles.
  double ToUnitFraction() const;

 private:
  // The big-endian word at byte `offset`, as a number.
  uint64_t Word64(int offset) const {
    uint64_t w;
    std::memcpy(&w, bytes_.data() + offset, sizeof(w));
    return FromBigEndian(w);
  }
  uint32_t Word32(int offset) const {
    uint32_t w;
    std::memcpy(&w, bytes_.data() + offset, sizeof(w));
    if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap32(w);
    return w;
  }
  static uint64_t FromBigEndian(uint64_t w) {
    if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap64(w);
    return w;
  }

  std::array<uint8_t, kBytes> bytes_;
};

struct IdHash {
  size_t operator()(const Id& id) const;
};

}  // namespace chord

#endif  // CHORD_PROTOCOL_ID_H_
