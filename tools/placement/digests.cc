#include "tools/placement/digests.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

namespace chord::placement {
namespace {

struct MdFree {
  void operator()(EVP_MD* md) const { EVP_MD_free(md); }
};
using MdPtr = std::unique_ptr<EVP_MD, MdFree>;

// Fetched once: passing EVP_sha256() and friends to EVP_Digest makes OpenSSL 3 fetch the
// implementation again on every call, which would dominate the cost of a short key.
EVP_MD* Fetch(const char* name) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  if (md == nullptr) std::abort();  // the default provider always has these three
  return md;
}

template <size_t kSize>
std::array<uint8_t, kSize> Digest(const EVP_MD* md, std::string_view data) {
  std::array<uint8_t, kSize> out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, md, nullptr) != 1 || len != kSize) {
    std::abort();  // cannot fail for an in-memory buffer and a fetched algorithm
  }
  return out;
}

}  // namespace

Sha256Digest Sha256(std::string_view data) {
  static const MdPtr md(Fetch("SHA2-256"));
  return Digest<32>(md.get(), data);
}

Sha1Digest Sha1(std::string_view data) {
  static const MdPtr md(Fetch("SHA1"));
  return Digest<20>(md.get(), data);
}

Md5Digest Md5(std::string_view data) {
  static const MdPtr md(Fetch("MD5"));
  return Digest<16>(md.get(), data);
}

uint64_t LoadBigEndian64(const uint8_t* bytes) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | bytes[i];
  return v;
}

}  // namespace chord::placement
