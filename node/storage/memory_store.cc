#include "node/storage/memory_store.h"

namespace chord {

Status MemoryStore::Put(const Id& key_id, const wire::Record& record) {
  records_.insert_or_assign(Key{key_id, record.key()}, record);
  return Status::Ok();
}

Status MemoryStore::Get(const Id& key_id, std::string_view key, wire::Record* out) {
  auto it = records_.find(Key{key_id, std::string(key)});
  if (it == records_.end()) return Status::NotFound("no such key");
  *out = it->second;
  return Status::Ok();
}

Status MemoryStore::Erase(const Id& key_id, std::string_view key) {
  records_.erase(Key{key_id, std::string(key)});
  return Status::Ok();
}

Status MemoryStore::PutMeta(std::string_view name, std::string_view value) {
  meta_.insert_or_assign(std::string(name), std::string(value));
  return Status::Ok();
}

Status MemoryStore::GetMeta(std::string_view name, std::string* value) {
  auto it = meta_.find(name);
  if (it == meta_.end()) return Status::NotFound("no such value");
  *value = it->second;
  return Status::Ok();
}

Status MemoryStore::EraseMeta(std::string_view name) {
  auto it = meta_.find(name);
  if (it != meta_.end()) meta_.erase(it);
  return Status::Ok();
}

Status MemoryStore::ScanMeta(std::string_view prefix, const MetaVisitor& visit) {
  for (auto it = meta_.lower_bound(prefix);
       it != meta_.end() && std::string_view(it->first).substr(0, prefix.size()) == prefix; ++it) {
    if (!visit(it->first, it->second)) break;
  }
  return Status::Ok();
}

Status MemoryStore::Write(const StoreBatch& batch) {
  for (const StoreBatch::Entry& e : batch.entries()) {
    if (e.record) {
      records_.insert_or_assign(Key{e.key_id, e.key}, *e.record);
    } else {
      records_.erase(Key{e.key_id, e.key});
    }
  }
  return Status::Ok();
}

Status MemoryStore::Scan(const Id& from, const Id& to, const Visitor& visit) {
  // (from, to] clockwise: the ids above `from`, then, if the range wraps (or is the whole
  // ring, from == to), the ids from zero up to `to`.
  const bool wraps = !(from < to);
  for (auto it = records_.upper_bound(from); it != records_.end(); ++it) {
    if (!wraps && to < it->first.first) return Status::Ok();
    if (!visit(it->first.first, it->second)) return Status::Ok();
  }
  if (!wraps) return Status::Ok();
  for (auto it = records_.begin(); it != records_.end() && !(to < it->first.first); ++it) {
    if (!visit(it->first.first, it->second)) return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace chord
