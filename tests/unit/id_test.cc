// Tests for chord::Id (protocol/id.h): SHA-1, hex and byte conversions, modular arithmetic
// and the ring intervals, checked exhaustively against a small-ring reference.
#include "protocol/id.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace chord {
namespace {

// An id whose low 64 bits are `v` and whose other bits are zero.
Id FromUint64(uint64_t v) {
  std::array<uint8_t, Id::kBytes> b{};
  for (int i = 0; i < 8; ++i) b[Id::kBytes - 1 - i] = static_cast<uint8_t>(v >> (8 * i));
  return Id(b);
}

// An id whose low 128 bits are `v` and whose other bits are zero.
Id FromUint128(unsigned __int128 v) {
  std::array<uint8_t, Id::kBytes> b{};
  for (int i = 0; i < 16; ++i) b[Id::kBytes - 1 - i] = static_cast<uint8_t>(v >> (8 * i));
  return Id(b);
}

// The low 128 bits of `id`; the test fails if any higher bit is set.
unsigned __int128 Low128(const Id& id) {
  for (int i = 0; i < Id::kBytes - 16; ++i) EXPECT_EQ(id.bytes()[i], 0) << id.ToHex();
  unsigned __int128 v = 0;
  for (int i = Id::kBytes - 16; i < Id::kBytes; ++i) v = v << 8 | id.bytes()[i];
  return v;
}

Id MustHex(const std::string& hex) {
  auto id = Id::FromHex(hex);
  EXPECT_TRUE(id.has_value()) << hex;
  return id.value_or(Id());
}

std::array<uint8_t, Id::kBytes> RandomBytes(std::mt19937_64& rng) {
  std::array<uint8_t, Id::kBytes> b{};
  for (auto& byte : b) byte = static_cast<uint8_t>(rng());
  return b;
}

TEST(IdTest, DefaultIsZero) {
  EXPECT_EQ(Id().ToHex(), std::string(40, '0'));
  EXPECT_EQ(Id(), FromUint64(0));
}

TEST(IdTest, Sha1KnownVectors) {
  // FIPS 180 / RFC 3174 test vectors.
  EXPECT_EQ(Id::Sha1("").ToHex(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Id::Sha1("abc").ToHex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Id::Sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").ToHex(),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(Id::Sha1("The quick brown fox jumps over the lazy dog").ToHex(),
            "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
  EXPECT_EQ(Id::Sha1(std::string(1000000, 'a')).ToHex(),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(IdTest, Sha1IsDeterministicAndBinarySafe) {
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(Id::Sha1(with_nul), Id::Sha1(with_nul));
  EXPECT_NE(Id::Sha1(with_nul), Id::Sha1("a"));
  EXPECT_NE(Id::Sha1("127.0.0.1:4000"), Id::Sha1("127.0.0.1:4001"));
}

TEST(IdTest, HexRoundTrip) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200; ++i) {
    const Id id(RandomBytes(rng));
    const std::string hex = id.ToHex();
    ASSERT_EQ(hex.size(), 40u);
    for (char c : hex) {
      EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << hex;
    }
    auto parsed = Id::FromHex(hex);
    ASSERT_TRUE(parsed.has_value()) << hex;
    EXPECT_EQ(*parsed, id);
  }
}

TEST(IdTest, FromHexAcceptsUpperCaseAndPrintsLowerCase) {
  auto id = Id::FromHex("A9993E364706816ABA3E25717850C26C9CD0D89D");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->ToHex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(*id, Id::Sha1("abc"));
}

TEST(IdTest, FromHexRejectsBadLengths) {
  const std::string good = "a9993e364706816aba3e25717850c26c9cd0d89d";
  EXPECT_FALSE(Id::FromHex("").has_value());
  EXPECT_FALSE(Id::FromHex("a").has_value());
  EXPECT_FALSE(Id::FromHex(good.substr(0, 39)).has_value());
  EXPECT_FALSE(Id::FromHex(good + "0").has_value());
  EXPECT_FALSE(Id::FromHex(good + good).has_value());
  EXPECT_FALSE(Id::FromHex(good.substr(0, 20)).has_value());
}

TEST(IdTest, FromHexRejectsBadCharacters) {
  const std::string good = "a9993e364706816aba3e25717850c26c9cd0d89d";
  static constexpr char kBad[] = "gGzZ -+x:/@`\0\xff";
  for (char bad : std::string(kBad, sizeof(kBad) - 1)) {
    for (size_t pos : {size_t{0}, size_t{1}, size_t{19}, size_t{38}, size_t{39}}) {
      std::string hex = good;
      hex[pos] = bad;
      EXPECT_FALSE(Id::FromHex(hex).has_value())
          << "char " << static_cast<int>(static_cast<unsigned char>(bad)) << " at " << pos;
    }
  }
  EXPECT_FALSE(Id::FromHex("0x9993e364706816aba3e25717850c26c9cd0d89d").has_value());
}

TEST(IdTest, FromBytes) {
  std::string bytes(20, '\0');
  for (int i = 0; i < 20; ++i) bytes[i] = static_cast<char>(i * 13 + 1);
  auto id = Id::FromBytes(bytes);
  ASSERT_TRUE(id.has_value());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(id->bytes()[i], static_cast<uint8_t>(i * 13 + 1));
  EXPECT_EQ(id->ToBytes(), bytes);
  EXPECT_EQ(id->ToHex().substr(0, 6), "010e1b");

  EXPECT_FALSE(Id::FromBytes("").has_value());
  EXPECT_FALSE(Id::FromBytes(bytes.substr(0, 19)).has_value());
  EXPECT_FALSE(Id::FromBytes(bytes + "x").has_value());
  EXPECT_FALSE(Id::FromBytes(Id::Sha1("abc").ToHex()).has_value());  // 40 bytes of hex

  const Id sha = Id::Sha1("abc");
  EXPECT_EQ(Id::FromBytes(sha.ToBytes()), sha);
}

TEST(IdTest, ShortHexIsAPrefix) {
  const Id id = Id::Sha1("abc");
  EXPECT_EQ(id.ShortHex(), "a9993e36");
  EXPECT_EQ(id.ShortHex(4), "a999");
}

TEST(IdTest, PowerOfTwo) {
  EXPECT_EQ(Id::PowerOfTwo(0).ToHex(), std::string(39, '0') + "1");
  EXPECT_EQ(Id::PowerOfTwo(7).ToHex(), std::string(38, '0') + "80");
  EXPECT_EQ(Id::PowerOfTwo(8).ToHex(), std::string(37, '0') + "100");
  EXPECT_EQ(Id::PowerOfTwo(63).ToHex(), std::string(24, '0') + "8" + std::string(15, '0'));
  EXPECT_EQ(Id::PowerOfTwo(159).ToHex(), "8" + std::string(39, '0'));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(Id::PowerOfTwo(i), FromUint64(uint64_t{1} << i)) << i;
  // 2^(i+1) == 2^i + 2^i, and 2^159 + 2^159 wraps to zero.
  for (int i = 0; i + 1 < Id::kBits; ++i) {
    EXPECT_EQ(Id::PowerOfTwo(i) + Id::PowerOfTwo(i), Id::PowerOfTwo(i + 1)) << i;
  }
  EXPECT_EQ(Id::PowerOfTwo(159) + Id::PowerOfTwo(159), Id());
}

TEST(IdTest, MaxIsAllOnes) {
  EXPECT_EQ(Id::Max().ToHex(), std::string(40, 'f'));
  for (int i = 0; i < Id::kBits; ++i) EXPECT_LT(Id::PowerOfTwo(i), Id::Max()) << i;
}

TEST(IdTest, AdditionAndSubtractionWrapAround) {
  const Id zero;
  const Id one = FromUint64(1);
  EXPECT_EQ(Id::Max() + one, zero);
  EXPECT_EQ(zero - one, Id::Max());
  EXPECT_EQ(one + Id::Max(), zero);
  EXPECT_EQ(Id::Max() + Id::Max(), Id::Max() - one);  // 2^161 - 2 mod 2^160
  EXPECT_EQ(zero - Id::Max(), one);
  EXPECT_EQ(Id::Max() - Id::Max(), zero);
  EXPECT_EQ(zero - Id::PowerOfTwo(159), Id::PowerOfTwo(159));
  EXPECT_EQ(Id::Max() + FromUint64(5), FromUint64(4));
  EXPECT_EQ(FromUint64(3) - FromUint64(5), Id::Max() - one);
}

TEST(IdTest, CarryAndBorrowPropagateAcrossBytes) {
  EXPECT_EQ(MustHex(std::string(38, '0') + "ff") + FromUint64(1), FromUint64(0x100));
  EXPECT_EQ(MustHex("00" + std::string(38, 'f')) + FromUint64(1),
            MustHex("01" + std::string(38, '0')));
  EXPECT_EQ(MustHex("01" + std::string(38, '0')) - FromUint64(1),
            MustHex("00" + std::string(38, 'f')));
  EXPECT_EQ(FromUint64(0x100) - FromUint64(1), FromUint64(0xff));
}

TEST(IdTest, ArithmeticMatchesWideIntegers) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    // Operands below 2^126 so that sums stay below 2^128.
    const unsigned __int128 a = (static_cast<unsigned __int128>(rng() >> 2) << 64) | rng();
    const unsigned __int128 b = (static_cast<unsigned __int128>(rng() >> 2) << 64) | rng();
    EXPECT_TRUE(Low128(FromUint128(a) + FromUint128(b)) == a + b);
    const unsigned __int128 hi = a > b ? a : b;
    const unsigned __int128 lo = a > b ? b : a;
    EXPECT_TRUE(Low128(FromUint128(hi) - FromUint128(lo)) == hi - lo);
  }
}

TEST(IdTest, AdditionAndSubtractionAreInverse) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 500; ++i) {
    const Id a(RandomBytes(rng));
    const Id b(RandomBytes(rng));
    EXPECT_EQ((a + b) - b, a);
    EXPECT_EQ((a - b) + b, a);
    EXPECT_EQ(a + b, b + a);
    EXPECT_EQ(Id::Distance(a, b), b - a);
    EXPECT_EQ(a + Id::Distance(a, b), b);
  }
}

TEST(IdTest, OrderingIsNumeric) {
  EXPECT_LT(Id(), FromUint64(1));
  EXPECT_LT(FromUint64(0xff), FromUint64(0x100));  // not lexicographic on the low byte
  EXPECT_LT(MustHex("00" + std::string(38, 'f')), MustHex("01" + std::string(38, '0')));
  EXPECT_LT(Id::PowerOfTwo(158), Id::PowerOfTwo(159));
  EXPECT_GT(Id::Max(), Id::PowerOfTwo(159));
  EXPECT_EQ(FromUint64(77), FromUint64(77));
  EXPECT_NE(FromUint64(77), FromUint64(78));

  // Sorting ids sorts their hex strings (fixed width, lower case) and vice versa.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    const Id a(RandomBytes(rng));
    const Id b(RandomBytes(rng));
    EXPECT_EQ(a < b, a.ToHex() < b.ToHex());
    EXPECT_EQ(a == b, a.ToHex() == b.ToHex());
  }
}

// Ids that agree on a prefix and differ in one byte at every position (the comparison works on
// machine words): the order is still that of the bytes.
TEST(IdTest, OrderingDecidedAtEveryByte) {
  std::mt19937_64 rng(5);
  for (int pos = 0; pos < Id::kBytes; ++pos) {
    for (int trial = 0; trial < 20; ++trial) {
      std::array<uint8_t, Id::kBytes> x = RandomBytes(rng);
      std::array<uint8_t, Id::kBytes> y = x;
      y[pos] = static_cast<uint8_t>(rng());
      for (int k = pos + 1; k < Id::kBytes; ++k) y[k] = static_cast<uint8_t>(rng());
      const Id a(x);
      const Id b(y);
      EXPECT_EQ(a < b, x < y) << "byte " << pos;
      EXPECT_EQ(a > b, x > y) << "byte " << pos;
      EXPECT_EQ(a == b, x == y) << "byte " << pos;
    }
  }
}

TEST(IdTest, HashDistinguishesIds) {
  IdHash hash;
  EXPECT_EQ(hash(Id::Sha1("x")), hash(Id::Sha1("x")));
  EXPECT_NE(hash(FromUint64(1)), hash(FromUint64(2)));
}

// --- Ring intervals, exhaustively against a reference on a small ring ----------------------
//
// The ring is cyclic, so interval membership depends only on the cyclic order of x, a and b.
// Each id below is paired with a point on a ring of kSmallRing positions such that both lists
// have the same order; the reference is then plain modular arithmetic on small ints.

constexpr int kSmallRing = 1000;

struct Point {
  Id id;
  int small;
};

std::vector<Point> Points() {
  const Id half = Id::PowerOfTwo(159);
  const Id one = FromUint64(1);
  return {
      {Id(), 0},
      {FromUint64(1), 1},
      {FromUint64(2), 2},
      {FromUint64(3), 3},
      {FromUint64(4), 4},
      {FromUint64(5), 5},
      {FromUint64(6), 6},
      {FromUint64(7), 7},
      {FromUint64(0x100), 8},
      {half - one, 499},
      {half, 500},
      {half + one, 501},
      {Id::Max() - FromUint64(3), 996},
      {Id::Max() - FromUint64(2), 997},
      {Id::Max() - one, 998},
      {Id::Max(), 999},
  };
}

// Position of x on the clockwise walk from a, in (0, kSmallRing]: a itself is reached only
// after a full lap.
int Lap(int a, int x) {
  const int d = ((x - a) % kSmallRing + kSmallRing) % kSmallRing;
  return d == 0 ? kSmallRing : d;
}
// x in (a, b]; for a == b the arc is the full lap, so everything.
bool RefHalfOpen(int x, int a, int b) { return Lap(a, x) <= Lap(a, b); }
// x in (a, b); for a == b everything but a.
bool RefOpen(int x, int a, int b) { return Lap(a, x) < Lap(a, b); }

TEST(IdIntervalTest, PointsAreInTheSameOrderAsTheirSmallImages) {
  const auto points = Points();
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_LT(points[i - 1].id, points[i].id) << i;
    EXPECT_LT(points[i - 1].small, points[i].small) << i;
  }
  EXPECT_LT(points.back().small, kSmallRing);
}

TEST(IdIntervalTest, ReferenceAgreesWithRingMdBetween) {
  // RING.md: between(a, b, c) is a < b < c when a < c, else a < b || b < c.
  for (int a = 0; a < 12; ++a) {
    for (int b = 0; b < 12; ++b) {
      for (int c = 0; c < 12; ++c) {
        const bool between = a < c ? (a < b && b < c) : (a < b || b < c);
        // Scale into the small ring so the check is not vacuous.
        EXPECT_EQ(RefOpen(b * 80, a * 80, c * 80), between) << a << " " << b << " " << c;
      }
    }
  }
}

TEST(IdIntervalTest, ExhaustiveAgainstModularReference) {
  const auto points = Points();
  int checked = 0;
  for (const Point& x : points) {
    for (const Point& a : points) {
      for (const Point& b : points) {
        EXPECT_EQ(Id::InOpen(x.id, a.id, b.id), RefOpen(x.small, a.small, b.small))
            << "x=" << x.id.ToHex() << " a=" << a.id.ToHex() << " b=" << b.id.ToHex();
        EXPECT_EQ(Id::InHalfOpen(x.id, a.id, b.id), RefHalfOpen(x.small, a.small, b.small))
            << "x=" << x.id.ToHex() << " a=" << a.id.ToHex() << " b=" << b.id.ToHex();
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 16 * 16 * 16);
}

TEST(IdIntervalTest, EqualEndpointsCoverTheRing) {
  for (const Point& a : Points()) {
    for (const Point& x : Points()) {
      EXPECT_TRUE(Id::InHalfOpen(x.id, a.id, a.id)) << x.id.ToHex() << " " << a.id.ToHex();
      EXPECT_EQ(Id::InOpen(x.id, a.id, a.id), x.id != a.id) << x.id.ToHex() << " " << a.id.ToHex();
    }
  }
}

TEST(IdIntervalTest, Endpoints) {
  const auto points = Points();
  for (const Point& a : points) {
    for (const Point& b : points) {
      if (a.id == b.id) continue;
      EXPECT_FALSE(Id::InOpen(a.id, a.id, b.id));
      EXPECT_FALSE(Id::InHalfOpen(a.id, a.id, b.id));
      EXPECT_FALSE(Id::InOpen(b.id, a.id, b.id));
      EXPECT_TRUE(Id::InHalfOpen(b.id, a.id, b.id));
    }
  }
}

TEST(IdIntervalTest, WrapAround) {
  const Id max = Id::Max();
  const Id zero;
  const Id five = FromUint64(5);
  // (Max - 1, 5] wraps through zero.
  EXPECT_TRUE(Id::InHalfOpen(max, max - FromUint64(1), five));
  EXPECT_TRUE(Id::InHalfOpen(zero, max - FromUint64(1), five));
  EXPECT_TRUE(Id::InHalfOpen(five, max - FromUint64(1), five));
  EXPECT_FALSE(Id::InHalfOpen(FromUint64(6), max - FromUint64(1), five));
  EXPECT_FALSE(Id::InHalfOpen(Id::PowerOfTwo(159), max - FromUint64(1), five));
  // (5, 0) is everything above 5; (5, 0] adds zero.
  EXPECT_TRUE(Id::InOpen(max, five, zero));
  EXPECT_FALSE(Id::InOpen(zero, five, zero));
  EXPECT_TRUE(Id::InHalfOpen(zero, five, zero));
  EXPECT_FALSE(Id::InHalfOpen(FromUint64(1), five, zero));
  // (Max, 0] holds only zero; (Max, 0) is empty.
  for (const Point& x : Points()) {
    EXPECT_EQ(Id::InHalfOpen(x.id, max, zero), x.id == zero) << x.id.ToHex();
    EXPECT_FALSE(Id::InOpen(x.id, max, zero)) << x.id.ToHex();
  }
}

TEST(IdIntervalTest, RandomIdsAgreeWithDistances) {
  // x in (a, b] exactly when 0 < dist(a, x) <= dist(a, b); (a, a] is the whole ring and
  // (a, a) all of it but a.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 5000; ++i) {
    const Id a(RandomBytes(rng));
    const Id b = (i % 10 == 0) ? a : Id(RandomBytes(rng));
    const Id x = (i % 7 == 0) ? b : Id(RandomBytes(rng));
    const Id dx = Id::Distance(a, x);
    const Id db = Id::Distance(a, b);
    const bool half_open = db == Id() || (dx != Id() && dx <= db);
    const bool open = dx != Id() && (db == Id() || dx < db);
    EXPECT_EQ(Id::InHalfOpen(x, a, b), half_open);
    EXPECT_EQ(Id::InOpen(x, a, b), open);
  }
}

TEST(IdTest, ToUnitFraction) {
  EXPECT_EQ(Id().ToUnitFraction(), 0.0);
  EXPECT_DOUBLE_EQ(Id::PowerOfTwo(159).ToUnitFraction(), 0.5);
  EXPECT_DOUBLE_EQ(Id::PowerOfTwo(158).ToUnitFraction(), 0.25);
  EXPECT_DOUBLE_EQ((Id::PowerOfTwo(159) + Id::PowerOfTwo(158)).ToUnitFraction(), 0.75);
  // Only the high 64 bits count.
  EXPECT_EQ(FromUint64(12345).ToUnitFraction(), 0.0);
  // Monotone in the id.
  EXPECT_LT(Id::PowerOfTwo(120).ToUnitFraction(), Id::PowerOfTwo(121).ToUnitFraction());
}

TEST(IdTest, ToUnitFractionStaysBelowOne) {
  // The documented range is [0, 1): the largest ids must not round up to 1.0.
  EXPECT_LT(Id::Max().ToUnitFraction(), 1.0);
  EXPECT_GT(Id::Max().ToUnitFraction(), 0.999);
  EXPECT_LT((Id::Max() - Id::PowerOfTwo(100)).ToUnitFraction(), 1.0);
}

}  // namespace
}  // namespace chord
