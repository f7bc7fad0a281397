#include "node/core/range_digest.h"

#include <algorithm>
#include <cstring>

namespace chord {
namespace {

// SplitMix64 finaliser: spreads every input bit over the output.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Fold(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

uint32_t DigestBucket(const Id& from, const Id& to, uint32_t buckets, const Id& id) {
  if (buckets <= 1) return 0;
  // Exact integer arithmetic on the leading 63 bits of the range's span: arcs stay equal for
  // small ranges too, and both peers compute the same bucket.
  const std::string span_bytes = Id::Distance(from, to).ToBytes();
  const std::string at_bytes = Id::Distance(from, id).ToBytes();
  const bool whole_ring = from == to;
  int top = -1;  // highest set bit of the span; the whole ring spans 2^160
  for (int i = 0; i < Id::kBytes && !whole_ring && top < 0; ++i) {
    const auto byte = static_cast<unsigned char>(span_bytes[i]);
    for (int bit = 7; bit >= 0; --bit) {
      if (byte & (1u << bit)) {
        top = (Id::kBytes - 1 - i) * 8 + bit;
        break;
      }
    }
  }
  if (whole_ring) top = Id::kBits;
  const int shift = std::max(0, top - 62);
  auto shifted = [shift](const std::string& be) {
    // (value >> shift) truncated to 64 bits; be is big-endian.
    unsigned __int128 acc = 0;
    for (int bit_index = shift + 63; bit_index >= shift; --bit_index) {
      acc <<= 1;
      if (bit_index < Id::kBits) {
        const int byte = Id::kBytes - 1 - bit_index / 8;
        acc |= (static_cast<unsigned char>(be[byte]) >> (bit_index % 8)) & 1u;
      }
    }
    return static_cast<uint64_t>(acc);
  };
  const uint64_t span = whole_ring ? (uint64_t{1} << (Id::kBits - shift)) : shifted(span_bytes);
  uint64_t at = shifted(at_bytes);
  if (at == 0 && id == to) at = span;  // (from, to] ends at `to` itself
  if (span == 0) return 0;
  const unsigned __int128 b = static_cast<unsigned __int128>(at) * buckets / span;
  return static_cast<uint32_t>(std::min<unsigned __int128>(b, buckets - 1));
}

uint64_t RecordDigest(const Id& key_id, const wire::Record& record) {
  const std::string id = key_id.ToBytes();
  uint64_t h = Fold(id) ^ Fold(record.key());
  h = Mix(h ^ Mix(record.version()));
  h = Mix(h ^ Fold(record.writer()) ^ (record.deleted() ? 0x5bd1e995ULL : 0));
  return h;
}

Result<std::vector<uint64_t>> ComputeRangeDigests(Store* store, const Id& from, const Id& to,
                                                  uint32_t buckets) {
  std::vector<uint64_t> digests(std::max<uint32_t>(buckets, 1), 0);
  Status s = store->Scan(from, to, [&](const Id& id, const wire::Record& rec) {
    digests[DigestBucket(from, to, buckets, id)] += RecordDigest(id, rec);
    return true;
  });
  if (!s.ok()) return s;
  return digests;
}

}  // namespace chord
