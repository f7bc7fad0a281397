// RedisSlots: Redis Cluster's placement. A key's slot is CRC16-XMODEM of its hash tag mod
// 16384; a slot table says which node serves each slot. The first membership splits the
// slots evenly into contiguous ranges (node i: [floor(i*16384/N), floor((i+1)*16384/N)); the
// boundaries can differ by one slot from redis-cli's float cursor); later changes
// rebalance like `redis-cli --cluster rebalance`: slots of departed nodes and surplus slots of
// nodes above their even share move to nodes below it, nothing else moves. Stateful across
// SetNodes calls, matched by node name. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_REDIS_SLOTS_H_
#define CHORD_TOOLS_PLACEMENT_REDIS_SLOTS_H_

#include <vector>

#include "tools/placement/crc16.h"
#include "tools/placement/placement.h"

namespace chord::placement {

class RedisSlots final : public Placement {
 public:
  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override { return owner_[key.slot]; }
  // The slot table as a cluster node keeps it: one 2-byte node number per slot.
  [[nodiscard]] size_t MemoryBytes() const override { return kRedisSlots * sizeof(uint16_t); }
  // Slot -> index into the node list. (Balance is counted from keys, not slots: the slots
  // are even by construction, the keys' CRC16 values need not be.)
  [[nodiscard]] const std::vector<uint32_t>& owners() const { return owner_; }

 private:
  std::vector<std::string> names_;
  std::vector<uint32_t> owner_;  // slot -> index into names_
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_REDIS_SLOTS_H_
