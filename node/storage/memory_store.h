// MemoryStore: the in-memory Store (chord-node --memory, the simulator and tests). An ordered
// map keyed by (ring id of the key, key bytes), so ring ranges are contiguous scans. Not
// thread-safe: the core's thread only.
#ifndef CHORD_NODE_STORAGE_MEMORY_STORE_H_
#define CHORD_NODE_STORAGE_MEMORY_STORE_H_

#include <map>
#include <string>
#include <utility>

#include "node/storage/store.h"

namespace chord {

class MemoryStore final : public Store {
 public:
  Status Put(const Id& key_id, const wire::Record& record) override;
  Status Get(const Id& key_id, std::string_view key, wire::Record* out) override;
  Status Erase(const Id& key_id, std::string_view key) override;
  Status Write(const StoreBatch& batch) override;
  Status Scan(const Id& from, const Id& to, const Visitor& visit) override;
  uint64_t Count() override { return records_.size(); }
  Status PutMeta(std::string_view name, std::string_view value) override;
  Status GetMeta(std::string_view name, std::string* value) override;
  Status EraseMeta(std::string_view name) override;
  Status ScanMeta(std::string_view prefix, const MetaVisitor& visit) override;

 private:
  using Key = std::pair<Id, std::string>;
  // Orders by id, then key bytes; also compares a bare Id against the id part.
  struct Less {
    using is_transparent = void;
    bool operator()(const Key& a, const Key& b) const { return a < b; }
    bool operator()(const Id& a, const Key& b) const { return a < b.first; }
    bool operator()(const Key& a, const Id& b) const { return a.first < b; }
  };
  std::map<Key, wire::Record, Less> records_;
  std::map<std::string, std::string, std::less<>> meta_;
};

}  // namespace chord

#endif  // CHORD_NODE_STORAGE_MEMORY_STORE_H_
