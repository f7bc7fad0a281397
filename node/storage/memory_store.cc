#include "node/storage/memory_store.h"

#include <array>
#include <cstring>
#include <new>
#include <utility>

namespace chord {
namespace {

// A record's block, in order:
//   the key id's last 12 bytes (the first 8 are in the slot)
//   varint key size, key bytes          (the comparisons read only up to here)
//   version, 8 bytes little-endian
//   flags: kDeleted | kExpired | kInterned
//   varint value size, varint expires_unix_ms
//   writer: kInterned: one byte, its index in the table; else varint size
//   value bytes, then the writer's bytes when not interned
constexpr size_t kIdLowBytes = Id::kBytes - 8;
constexpr uint8_t kDeleted = 1;
constexpr uint8_t kExpired = 2;
constexpr uint8_t kInterned = 4;

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Blocks are written by Pack only, so the varints are well formed.
const uint8_t* GetVarint(const uint8_t* p, uint64_t* v) {
  uint64_t out = 0;
  int shift = 0;
  while (*p & 0x80) {
    out |= static_cast<uint64_t>(*p++ & 0x7f) << shift;
    shift += 7;
  }
  *v = out | (static_cast<uint64_t>(*p++) << shift);
  return p;
}

uint64_t IdHigh(const Id& id) {
  uint64_t high = 0;
  for (int i = 0; i < 8; ++i) high = (high << 8) | id.bytes()[i];
  return high;
}

const uint8_t* IdLow(const Id& id) { return id.bytes().data() + 8; }

Id IdOfSlot(uint64_t high, const uint8_t* block) {
  std::array<uint8_t, Id::kBytes> bytes;
  for (int i = 7; i >= 0; --i) {
    bytes[i] = static_cast<uint8_t>(high);
    high >>= 8;
  }
  std::memcpy(bytes.data() + 8, block, kIdLowBytes);
  return Id(bytes);
}

std::string_view KeyOf(const uint8_t* block) {
  uint64_t size = 0;
  const uint8_t* p = GetVarint(block + kIdLowBytes, &size);
  return std::string_view(reinterpret_cast<const char*>(p), size);
}

// The size of a block Pack wrote: walked as Unpack does.
size_t BlockSize(const uint8_t* block) {
  const std::string_view key = KeyOf(block);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(key.data()) + key.size() + 8;
  const uint8_t flags = *p++;
  uint64_t value_size = 0, expires = 0, writer_size = 0;
  p = GetVarint(p, &value_size);
  p = GetVarint(p, &expires);
  if (flags & kInterned) {
    ++p;
  } else {
    p = GetVarint(p, &writer_size);
  }
  return static_cast<size_t>(p - block) + value_size + writer_size;
}

// <0, 0, >0 as slot (high, block) orders against the id (high, low).
int CompareIds(uint64_t a_high, const uint8_t* a_low, uint64_t b_high, const uint8_t* b_low) {
  if (a_high != b_high) return a_high < b_high ? -1 : 1;
  return std::memcmp(a_low, b_low, kIdLowBytes);
}

}  // namespace

bool MemoryStore::Less::operator()(const Slot& a, const Slot& b) const {
  const int c = CompareIds(a.id_high, a.block, b.id_high, b.block);
  return c != 0 ? c < 0 : KeyOf(a.block) < KeyOf(b.block);
}
bool MemoryStore::Less::operator()(const Slot& a, const Probe& b) const {
  const int c = CompareIds(a.id_high, a.block, b.id_high, b.id_low);
  return c != 0 ? c < 0 : KeyOf(a.block) < b.key;
}
bool MemoryStore::Less::operator()(const Probe& a, const Slot& b) const {
  const int c = CompareIds(a.id_high, a.id_low, b.id_high, b.block);
  return c != 0 ? c < 0 : a.key < KeyOf(b.block);
}
bool MemoryStore::Less::operator()(const Slot& a, const IdProbe& b) const {
  return CompareIds(a.id_high, a.block, b.id_high, b.id_low) < 0;
}
bool MemoryStore::Less::operator()(const IdProbe& a, const Slot& b) const {
  return CompareIds(a.id_high, a.id_low, b.id_high, b.block) < 0;
}

MemoryStore::~MemoryStore() {
  // Blocks of the arena's chunks go with it; the larger ones are the heap's.
  for (const Slot& slot : records_) {
    const size_t size = BlockSize(slot.block);
    if (size > BlockArena::kMaxBlockBytes) arena_.Free(slot.block, size);
  }
}

int MemoryStore::InternWriter(const std::string& writer) {
  if (!writers_.empty() && writers_.back() == writer) return static_cast<int>(writers_.size() - 1);
  auto it = writer_index_.find(writer);
  if (it != writer_index_.end()) return it->second;
  if (writers_.size() >= kMaxInternedWriters || writer.size() > kMaxInternedWriterBytes) {
    return -1;
  }
  writers_.push_back(writer);
  writer_index_.emplace(writer, static_cast<uint8_t>(writers_.size() - 1));
  return static_cast<int>(writers_.size() - 1);
}

uint8_t* MemoryStore::Pack(const Id& key_id, const wire::Record& r) {
  const std::string& key = r.key();
  const std::string& value = r.value();
  const int writer_index = InternWriter(r.writer());
  const bool interned = writer_index >= 0;
  const size_t inline_writer = interned ? 0 : r.writer().size();
  const size_t size = kIdLowBytes + VarintSize(key.size()) + key.size() + 8 + 1 +
                      VarintSize(value.size()) + VarintSize(r.expires_unix_ms()) +
                      (interned ? 1 : VarintSize(inline_writer)) + value.size() + inline_writer;
  auto* block = static_cast<uint8_t*>(arena_.Allocate(size));
  uint8_t* p = block;
  std::memcpy(p, IdLow(key_id), kIdLowBytes);
  p = PutVarint(p + kIdLowBytes, key.size());
  std::memcpy(p, key.data(), key.size());
  p += key.size();
  uint64_t version = r.version();
  for (int i = 0; i < 8; ++i, version >>= 8) *p++ = static_cast<uint8_t>(version);
  *p++ = static_cast<uint8_t>((r.deleted() ? kDeleted : 0) | (r.expired() ? kExpired : 0) |
                              (interned ? kInterned : 0));
  p = PutVarint(p, value.size());
  p = PutVarint(p, r.expires_unix_ms());
  if (interned) {
    *p++ = static_cast<uint8_t>(writer_index);
  } else {
    p = PutVarint(p, inline_writer);
  }
  std::memcpy(p, value.data(), value.size());
  p += value.size();
  if (!interned) std::memcpy(p, r.writer().data(), inline_writer);
  record_bytes_ += size;
  return block;
}

void MemoryStore::Free(uint8_t* block) {
  const size_t size = BlockSize(block);
  record_bytes_ -= size;
  arena_.Free(block, size);
}

void MemoryStore::Unpack(const uint8_t* block, wire::Record* out, bool with_value) const {
  const std::string_view key = KeyOf(block);
  out->set_key(key.data(), key.size());
  const uint8_t* p = reinterpret_cast<const uint8_t*>(key.data()) + key.size();
  uint64_t version = 0;
  for (int i = 7; i >= 0; --i) version = (version << 8) | p[i];
  p += 8;
  out->set_version(version);
  const uint8_t flags = *p++;
  out->set_deleted((flags & kDeleted) != 0);
  out->set_expired((flags & kExpired) != 0);
  uint64_t value_size = 0, expires = 0;
  p = GetVarint(p, &value_size);
  p = GetVarint(p, &expires);
  out->set_expires_unix_ms(expires);
  if (flags & kInterned) {
    out->set_writer(writers_[*p++]);
  } else {
    uint64_t writer_size = 0;
    p = GetVarint(p, &writer_size);
    out->set_writer(reinterpret_cast<const char*>(p + value_size), writer_size);
  }
  if (with_value) {
    out->set_value(reinterpret_cast<const char*>(p), value_size);
  } else {
    out->clear_value();
  }
}

const MemoryStore::Slot* MemoryStore::LastFound(const Id& key_id, std::string_view key) const {
  if (last_found_ == nullptr || last_found_generation_ != generation_) return nullptr;
  const Probe probe{IdHigh(key_id), IdLow(key_id), key};
  const Less less;
  if (less(*last_found_, probe) || less(probe, *last_found_)) return nullptr;
  return last_found_;
}

void MemoryStore::PutOne(const Id& key_id, const wire::Record& record) {
  uint8_t* block = Pack(key_id, record);
  // A write reads the record it replaces first: its slot is found again without a descent.
  if (const Slot* slot = LastFound(key_id, record.key()); slot != nullptr) {
    Free(slot->block);
    slot->block = block;
    return;
  }
  auto [it, inserted] = records_.insert(Slot{IdHigh(key_id), block});
  if (inserted) {
    ++generation_;
    return;
  }
  Free(it->block);
  it->block = block;
}

void MemoryStore::EraseOne(const Id& key_id, std::string_view key) {
  auto it = records_.find(Probe{IdHigh(key_id), IdLow(key_id), key});
  if (it == records_.end()) return;
  Free(it->block);
  records_.erase(it);
  ++generation_;
}

Status MemoryStore::Put(const Id& key_id, const wire::Record& record) {
  PutOne(key_id, record);
  return Status::Ok();
}

Status MemoryStore::Find(const Id& key_id, std::string_view key, wire::Record* out,
                         bool with_value) {
  auto it = records_.find(Probe{IdHigh(key_id), IdLow(key_id), key});
  if (it == records_.end()) return Status::NotFound("no such key");
  last_found_ = &*it;
  last_found_generation_ = generation_;
  Unpack(it->block, out, with_value);
  return Status::Ok();
}

Status MemoryStore::Get(const Id& key_id, std::string_view key, wire::Record* out) {
  return Find(key_id, key, out, /*with_value=*/true);
}

Status MemoryStore::GetHeader(const Id& key_id, std::string_view key, wire::Record* out) {
  return Find(key_id, key, out, /*with_value=*/false);
}

Status MemoryStore::Erase(const Id& key_id, std::string_view key) {
  EraseOne(key_id, key);
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
      PutOne(e.key_id, *e.record);
    } else {
      EraseOne(e.key_id, e.key);
    }
  }
  return Status::Ok();
}

Status MemoryStore::Scan(const Id& from, const Id& to, const Visitor& visit) {
  // (from, to] clockwise: the ids above `from`, then, if the range wraps (or is the whole
  // ring, from == to), the ids from zero up to `to`.
  const bool wraps = !(from < to);
  bool wrapped = false;
  wire::Record record;
  auto it = records_.upper_bound(IdProbe{IdHigh(from), IdLow(from)});
  // The blocks of the next few slots are fetched into the cache ahead of their visit (they
  // lie anywhere on the heap): `ahead` is `lead` slots past `it`.
  constexpr int kPrefetchSlots = 4;
  auto ahead = it;
  int lead = 0;
  for (;;) {
    if (it == records_.end()) {
      if (!wraps || wrapped) return Status::Ok();
      wrapped = true;
      it = ahead = records_.begin();
      lead = 0;
      continue;
    }
    for (; lead < kPrefetchSlots && ahead != records_.end(); ++ahead, ++lead) {
      __builtin_prefetch(ahead->block);
      __builtin_prefetch(ahead->block + 64);
    }
    const Id id = IdOfSlot(it->id_high, it->block);
    if ((!wraps || wrapped) && to < id) return Status::Ok();
    Unpack(it->block, &record);
    const uint64_t generation = generation_;
    if (!visit(id, record)) return Status::Ok();
    if (generation_ == generation) {
      ++it;
      --lead;
    } else {
      // The visitor inserted or erased records: find the one after this again.
      it = ahead = records_.upper_bound(Probe{IdHigh(id), IdLow(id), record.key()});
      lead = 0;
    }
  }
}

}  // namespace chord
