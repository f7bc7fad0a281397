// MemoryStore: the in-memory Store (chord-node --memory, the simulator and tests). Records are
// ordered by (ring id of the key, key bytes), so ring ranges are contiguous scans.
//
// Compact: each record is one block holding the rest of its key id, its key, value, version,
// flags and writer packed by hand (see memory_store.cc), and the order is kept by a B-tree
// (absl::btree_set) of 16-byte slots: the first 8 bytes of the key id, which settle nearly
// every comparison without touching the block, and the block's address. Blocks come from a
// BlockArena, which rounds them up to 8 bytes instead of to an allocator's size class. Writers
// (the ids of the nodes that stamp versions, a handful per ring) are kept once in a table and
// referred to by a one-byte index. A record of a 10-byte key and a 100-byte value takes about
// 160 bytes of RSS (a std::map of protobuf records took about 450).
//
// Records are copied out into the caller's wire::Record (Get) or into one reused record per
// scan (Scan); a visitor must not keep a reference to it past its call. Fields of wire::Record
// the packing does not know are not kept (memory_store_test checks the field list). Not
// thread-safe: the core's thread only.
#ifndef CHORD_NODE_STORAGE_MEMORY_STORE_H_
#define CHORD_NODE_STORAGE_MEMORY_STORE_H_

#include <absl/container/btree_set.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "node/storage/block_arena.h"
#include "node/storage/store.h"

namespace chord {

class MemoryStore final : public Store {
 public:
  MemoryStore() = default;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;
  ~MemoryStore() override;

  Status Put(const Id& key_id, const wire::Record& record) override;
  Status Get(const Id& key_id, std::string_view key, wire::Record* out) override;
  Status GetHeader(const Id& key_id, std::string_view key, wire::Record* out) override;
  Status Erase(const Id& key_id, std::string_view key) override;
  Status Write(const StoreBatch& batch) override;
  Status Scan(const Id& from, const Id& to, const Visitor& visit) override;
  uint64_t Count() override { return records_.size(); }
  uint64_t FreeHeldBytes() override { return arena_.free_bytes(); }
  Status PutMeta(std::string_view name, std::string_view value) override;
  Status GetMeta(std::string_view name, std::string* value) override;
  Status EraseMeta(std::string_view name) override;
  Status ScanMeta(std::string_view prefix, const MetaVisitor& visit) override;

  // Bytes of the records' blocks as packed (B-tree nodes not counted), and the arena's chunks
  // that hold them (FreeHeldBytes of them free); for tests and measurements.
  size_t record_bytes() const { return record_bytes_; }
  size_t arena_bytes() const { return arena_.chunk_bytes(); }

  // The most writers kept in the table; records of further writers carry the writer inline.
  static constexpr size_t kMaxInternedWriters = 255;
  // The longest writer kept in the table.
  static constexpr size_t kMaxInternedWriterBytes = 64;

 private:
  // One record: the key id's first 8 bytes (big-endian, so they order like the id) and the
  // packed block. `block` is mutable: replacing a record swaps in a block with the same id and
  // key, which leaves the order unchanged.
  struct Slot {
    uint64_t id_high;
    mutable uint8_t* block;
  };
  // A (key id, key) or a bare key id (`has_key` false: compares as the id's smallest key,
  // i.e. below every record of that id when it is on the left and above none otherwise).
  struct Probe {
    uint64_t id_high;
    const uint8_t* id_low;  // the id's last 12 bytes
    std::string_view key;
  };
  struct IdProbe {
    uint64_t id_high;
    const uint8_t* id_low;
  };
  struct Less {
    using is_transparent = void;
    // A node's slots are searched in order, not by bisection: the first eight bytes of the id
    // (kept in the slot) decide almost every comparison, so a scan of the node's few slots is
    // a run of predictable branches over adjacent memory, where a bisection mispredicts about
    // every other branch.
    using absl_btree_prefer_linear_node_search = std::true_type;
    bool operator()(const Slot& a, const Slot& b) const;
    bool operator()(const Slot& a, const Probe& b) const;
    bool operator()(const Probe& a, const Slot& b) const;
    bool operator()(const Slot& a, const IdProbe& b) const;
    bool operator()(const IdProbe& a, const Slot& b) const;
  };
  using Records = absl::btree_set<Slot, Less>;

  // Packs `record` of `key_id` into a new block (freed by Free).
  uint8_t* Pack(const Id& key_id, const wire::Record& record);
  void Free(uint8_t* block);
  // Fills `out` from `block`; without `with_value`, all but the value (left empty).
  void Unpack(const uint8_t* block, wire::Record* out, bool with_value = true) const;
  // Get and GetHeader.
  Status Find(const Id& key_id, std::string_view key, wire::Record* out, bool with_value);
  // The table index of `writer`, or -1 when it is not (and cannot be) in the table.
  int InternWriter(const std::string& writer);
  // The slot the last Get or GetHeader found, if it holds (key_id, key) and no insert or erase has
  // moved slots since; else nullptr.
  const Slot* LastFound(const Id& key_id, std::string_view key) const;
  void PutOne(const Id& key_id, const wire::Record& record);
  void EraseOne(const Id& key_id, std::string_view key);

  BlockArena arena_;  // the blocks (declared first: destroyed after the slots are freed)
  Records records_;
  size_t record_bytes_ = 0;
  // Bumped by every insert and erase (which move slots); a scan re-finds its place after a
  // visitor changed the store, and LastFound trusts last_found_ only while it is unchanged:
  // whatever inserts, erases or clears records_ must bump it.
  uint64_t generation_ = 0;
  // The slot the last successful Get found, and generation_ then (see LastFound).
  const Slot* last_found_ = nullptr;
  uint64_t last_found_generation_ = 0;
  std::vector<std::string> writers_;
  std::unordered_map<std::string, uint8_t> writer_index_;
  std::map<std::string, std::string, std::less<>> meta_;
};

}  // namespace chord

#endif  // CHORD_NODE_STORAGE_MEMORY_STORE_H_
