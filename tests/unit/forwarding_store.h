// ForwardingStore: a Store that keeps its records in a MemoryStore and forwards every call to
// it, for tests that override a few calls to make them fail (as a RocksDB store does on an I/O
// error or a corrupt block). Test code only.
#ifndef CHORD_TESTS_UNIT_FORWARDING_STORE_H_
#define CHORD_TESTS_UNIT_FORWARDING_STORE_H_

#include <string_view>

#include "node/storage/memory_store.h"
#include "node/storage/store.h"

namespace chord::test_support {

class ForwardingStore : public Store {
 public:
  Status Put(const Id& key_id, const wire::Record& record) override {
    return inner_.Put(key_id, record);
  }
  Status Get(const Id& key_id, std::string_view key, wire::Record* out) override {
    return inner_.Get(key_id, key, out);
  }
  Status Erase(const Id& key_id, std::string_view key) override {
    return inner_.Erase(key_id, key);
  }
  Status Write(const StoreBatch& batch) override { return inner_.Write(batch); }
  Status Scan(const Id& from, const Id& to, const Visitor& visit) override {
    return inner_.Scan(from, to, visit);
  }
  uint64_t Count() override { return inner_.Count(); }
  Status PutMeta(std::string_view name, std::string_view value) override {
    return inner_.PutMeta(name, value);
  }
  Status GetMeta(std::string_view name, std::string* value) override {
    return inner_.GetMeta(name, value);
  }
  Status EraseMeta(std::string_view name) override { return inner_.EraseMeta(name); }
  Status ScanMeta(std::string_view prefix, const MetaVisitor& visit) override {
    return inner_.ScanMeta(prefix, visit);
  }

 private:
  MemoryStore inner_;
};

}  // namespace chord::test_support

#endif  // CHORD_TESTS_UNIT_FORWARDING_STORE_H_
