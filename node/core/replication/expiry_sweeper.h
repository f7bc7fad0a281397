// ExpirySweeper: turns every expired record this node holds (any role) into the tombstone
// {key, version + 1, same writer, deleted, expired}, stored last-writer-wins like any record
// (a newer write wins as usual). Every holder does this on its own and stores the same
// tombstone, which then takes part in anti-entropy and the tombstone purge like a delete.
// Work per sweep is bounded: at most kMaxPerSweep records from the ExpiryIndex and, while the
// index has overflowed, a slice of kScanSlice records of the store (more only by keys sharing
// the last one's SHA-1, which a slice never splits; continuing where the last slice stopped),
// whose records with an expiry it notes in the index as room allows. Once a whole pass of the
// store has noted every one without a refusal, the index holds them all again and the scan
// stops. When the store fails (a read, or the tombstone's write), the sweep stops: that key is
// tried again after kRetryMs, and the others it took stay indexed for the next sweep. Reads do
// not wait for it: they treat an expired record as absent. Called by Replication every
// maintenance round; the node's thread only.
#ifndef CHORD_NODE_CORE_REPLICATION_EXPIRY_SWEEPER_H_
#define CHORD_NODE_CORE_REPLICATION_EXPIRY_SWEEPER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "node/core/node_context.h"
#include "protocol/id.h"

namespace chord {

class ExpirySweeper {
 public:
  static constexpr size_t kMaxPerSweep = 1024;
  static constexpr size_t kScanSlice = 4096;
  static constexpr uint64_t kRetryMs = 10'000;

  explicit ExpirySweeper(NodeContext& ctx) : ctx_(ctx) {}

  // Expires what is due now (bounded work).
  void Sweep();

 private:
  // Stores the expiry tombstone of `key` if its stored record has expired. False if the store
  // failed (read or write), so the key must be tried again.
  [[nodiscard]] bool Expire(const Id& key_id, const std::string& key);
  // One slice of the store scan (only while the index has overflowed).
  void ScanSlice();

  NodeContext& ctx_;
  Id cursor_;  // where the next scan slice continues
  // The pass of the store under way: where it began and the index's refusals() then.
  bool pass_open_ = false;
  Id pass_origin_;
  uint64_t pass_refusals_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_EXPIRY_SWEEPER_H_
