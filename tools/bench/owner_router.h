// OwnerRouter: a smart client's copy of the ring (every ring position's id and address, from
// one RingWalk), which names the owner of a key locally: the first position clockwise from
// SHA-1 of the key. chord-bench --direct fetches it once and gives each client thread a copy,
// which that thread refreshes when a node answers NOT_OWNER. Not thread-safe: one per thread.
#ifndef CHORD_TOOLS_BENCH_OWNER_ROUTER_H_
#define CHORD_TOOLS_BENCH_OWNER_ROUTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/id.h"

namespace chord::bench {

class OwnerRouter {
 public:
  // `seeds`: the nodes to walk the ring from, tried in turn. Each status call of a walk is
  // bounded by `timeout_ms`.
  OwnerRouter(std::vector<std::string> seeds, uint64_t timeout_ms);

  // Walks the ring from the first seed that answers and replaces the copy. On failure the old
  // copy is kept and the error names the last seed tried.
  Status Refresh();

  // The address (HOST:PORT or HOST:PORT#i) of the owner of `key`. Requires size() > 0.
  const std::string& OwnerOf(std::string_view key) const;

  size_t size() const { return ids_.size(); }
  uint64_t refreshes() const { return refreshes_; }

 private:
  std::vector<std::string> seeds_;
  uint64_t timeout_ms_;
  std::vector<Id> ids_;             // ascending
  std::vector<std::string> addrs_;  // addrs_[i] listens for ids_[i]
  uint64_t refreshes_ = 0;          // successful walks
};

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_OWNER_ROUTER_H_
