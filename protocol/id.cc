#include "protocol/id.h"

// SHA-1 of a key is computed for every request, so it takes OpenSSL's direct SHA1_* functions
// where the library still has them: in OpenSSL 3.0 (Debian 12) EVP_DigestInit_ex frees and
// allocates the digest's provider context on every call, even on a reused EVP_MD_CTX (fixed in
// 3.1), which made hashing a 10-byte key cost about 80 ns instead of 50. The functions are
// deprecated, not removed, in 3.x; a library built without them gets the EVP path. The macro
// must come before any OpenSSL header (this file includes none through id.h).
#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED
#endif
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cstdlib>
#include <cstring>

namespace chord {
namespace {

#if defined(OPENSSL_NO_DEPRECATED_3_0)
// Fetched once; EVP_MD_fetch is comparatively expensive and the result is immutable.
const EVP_MD* Sha1Digest() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA1", nullptr);
    if (fetched == nullptr) std::abort();
    return fetched;
  }();
  return md;
}
#endif

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Id Id::Sha1(std::string_view data) {
  std::array<uint8_t, kBytes> out{};
#if !defined(OPENSSL_NO_DEPRECATED_3_0)
  static_assert(SHA_DIGEST_LENGTH == kBytes);
  SHA_CTX sha;
  if (SHA1_Init(&sha) != 1 || SHA1_Update(&sha, data.data(), data.size()) != 1 ||
      SHA1_Final(out.data(), &sha) != 1) {
    std::abort();  // SHA-1 of a buffer in memory does not fail
  }
#else
  unsigned int len = 0;
  thread_local EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr || EVP_DigestInit_ex(ctx, Sha1Digest(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx, out.data(), &len) != 1 || len != kBytes) {
    std::abort();  // OpenSSL without SHA-1 is not a state we can run in.
  }
#endif
  return Id(out);
}

std::optional<Id> Id::FromHex(std::string_view hex) {
  if (hex.size() != 2 * kBytes) return std::nullopt;
  std::array<uint8_t, kBytes> out{};
  for (int i = 0; i < kBytes; ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return Id(out);
}

std::optional<Id> Id::FromBytes(std::string_view bytes) {
  if (bytes.size() != kBytes) return std::nullopt;
  std::array<uint8_t, kBytes> out{};
  std::memcpy(out.data(), bytes.data(), kBytes);
  return Id(out);
}

Id Id::PowerOfTwo(int i) {
  std::array<uint8_t, kBytes> out{};
  if (i >= 0 && i < kBits) out[kBytes - 1 - i / 8] = static_cast<uint8_t>(1u << (i % 8));
  return Id(out);
}

Id Id::Max() {
  std::array<uint8_t, kBytes> out;
  out.fill(0xff);
  return Id(out);
}

std::string Id::ToHex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * kBytes, '0');
  for (int i = 0; i < kBytes; ++i) {
    out[2 * i] = kDigits[bytes_[i] >> 4];
    out[2 * i + 1] = kDigits[bytes_[i] & 0xf];
  }
  return out;
}

std::string Id::ToBytes() const { return std::string(bytes_.begin(), bytes_.end()); }

Id Id::operator+(const Id& other) const {
  std::array<uint8_t, kBytes> out{};
  unsigned carry = 0;
  for (int i = kBytes - 1; i >= 0; --i) {
    unsigned sum = unsigned{bytes_[i]} + other.bytes_[i] + carry;
    out[i] = static_cast<uint8_t>(sum & 0xff);
    carry = sum >> 8;
  }
  return Id(out);
}

Id Id::operator-(const Id& other) const {
  std::array<uint8_t, kBytes> out{};
  int borrow = 0;
  for (int i = kBytes - 1; i >= 0; --i) {
    int diff = int{bytes_[i]} - other.bytes_[i] - borrow;
    borrow = diff < 0 ? 1 : 0;
    out[i] = static_cast<uint8_t>((diff + 256) & 0xff);
  }
  return Id(out);
}

bool Id::InOpen(const Id& x, const Id& a, const Id& b) {
  if (a < b) return a < x && x < b;
  return a < x || x < b;  // wraps, or a == b: everything but a
}

bool Id::InHalfOpen(const Id& x, const Id& a, const Id& b) {
  if (a < b) return a < x && x <= b;
  return a < x || x <= b;  // wraps, or a == b: the whole ring
}

double Id::ToUnitFraction() const {
  uint64_t high = 0;
  for (int i = 0; i < 8; ++i) high = high << 8 | bytes_[i];
  // 53 bits fit a double exactly, so the result stays below 1.
  return static_cast<double>(high >> 11) / 9007199254740992.0;  // 2^53
}

size_t IdHash::operator()(const Id& id) const {
  size_t h = 0;
  std::memcpy(&h, id.bytes().data() + Id::kBytes - sizeof(h), sizeof(h));
  return h;
}

}  // namespace chord
