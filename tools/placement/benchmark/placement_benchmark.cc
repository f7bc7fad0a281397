// placement_benchmark: Google Benchmark figures for the placement lab. One lookup of a key
// hashed beforehand, per scheme, at 10, 100 and 1000 nodes (the range Lamping & Veach
// compare jump with a 1000-point-per-bucket ring over), and what hashing one key costs with
// each hash the schemes use. Compare rows of one run with each other, as ratios; absolute
// times on a shared machine are noise. scripts/placement_figures.sh runs it in Release.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "tools/placement/crc16.h"
#include "tools/placement/digests.h"
#include "tools/placement/key_hash.h"
#include "tools/placement/node_names.h"
#include "tools/placement/scheme.h"

namespace {

using chord::placement::HashUserKeys;
using chord::placement::KeyHash;
using chord::placement::MakePlacement;
using chord::placement::Md5;
using chord::placement::NodeNames;
using chord::placement::RedisKeySlot;
using chord::placement::Scheme;
using chord::placement::SchemeOptions;
using chord::placement::Sha1;
using chord::placement::Sha256;
using chord::placement::UserKey;

constexpr uint64_t kLookupKeys = 65536;  // cycled; spread over the whole structure

const std::vector<KeyHash>& LookupKeys() {
  static const std::vector<KeyHash> keys = HashUserKeys(kLookupKeys);
  return keys;
}

void Lookup(benchmark::State& state, Scheme scheme, uint32_t vnodes) {
  SchemeOptions options;
  options.vnodes = vnodes;
  options.expected_keys = kLookupKeys;  // bounded: every pass places these keys anew
  auto placement = MakePlacement(scheme, options);
  placement->SetNodes(NodeNames(static_cast<uint32_t>(state.range(0))));
  const std::vector<KeyHash>& keys = LookupKeys();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(placement->Place(keys[i]));
    if (++i == keys.size()) {
      i = 0;
      placement->ClearLoads();
    }
  }
  state.counters["memory_bytes"] = static_cast<double>(placement->MemoryBytes());
}

void BM_Jump(benchmark::State& s) { Lookup(s, Scheme::kJump, 1); }
void BM_Modulo(benchmark::State& s) { Lookup(s, Scheme::kModulo, 1); }
void BM_Ring1Point(benchmark::State& s) { Lookup(s, Scheme::kRing, 1); }
void BM_Ring100Points(benchmark::State& s) { Lookup(s, Scheme::kRing, 100); }
void BM_Ring1000Points(benchmark::State& s) { Lookup(s, Scheme::kRing, 1000); }
void BM_RingMap1000Points(benchmark::State& s) { Lookup(s, Scheme::kRingMap, 1000); }
void BM_Ketama(benchmark::State& s) { Lookup(s, Scheme::kKetama, 1); }
void BM_Rendezvous(benchmark::State& s) { Lookup(s, Scheme::kRendezvous, 1); }
void BM_Maglev(benchmark::State& s) { Lookup(s, Scheme::kMaglev, 1); }
void BM_Bounded100Points(benchmark::State& s) { Lookup(s, Scheme::kBounded, 100); }
void BM_RedisSlots(benchmark::State& s) { Lookup(s, Scheme::kRedis, 1); }
void BM_Kademlia(benchmark::State& s) { Lookup(s, Scheme::kKademlia, 1); }

BENCHMARK(BM_Jump)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Ring1000Points)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_RingMap1000Points)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Ring1Point)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Ring100Points)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Modulo)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Ketama)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Rendezvous)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Maglev)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Bounded100Points)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_RedisSlots)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_Kademlia)->Arg(10)->Arg(100)->Arg(1000);

// Hashing the key, which every lookup pays once before the placement itself.
template <typename Hash>
void KeyHashing(benchmark::State& state, Hash hash) {
  std::vector<std::string> keys;
  for (uint64_t i = 1; i <= 4096; ++i) keys.push_back(UserKey(i));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(hash(keys[i]));
    i = (i + 1) & 4095;
  }
}
void BM_KeySha256(benchmark::State& s) {
  KeyHashing(s, [](const std::string& k) { return Sha256(k); });
}
void BM_KeyMd5(benchmark::State& s) {
  KeyHashing(s, [](const std::string& k) { return Md5(k); });
}
void BM_KeySha1(benchmark::State& s) {
  KeyHashing(s, [](const std::string& k) { return Sha1(k); });
}
void BM_KeyRedisSlot(benchmark::State& s) {
  KeyHashing(s, [](const std::string& k) { return RedisKeySlot(k); });
}
BENCHMARK(BM_KeySha256);
BENCHMARK(BM_KeyMd5);
BENCHMARK(BM_KeySha1);
BENCHMARK(BM_KeyRedisSlot);

}  // namespace

BENCHMARK_MAIN();
