#include "node/core/replication/hint_store.h"

#include <utility>

namespace chord {
std::string HintStore::Name(const std::string& target_addr, const std::string& key) const {
  std::string name(prefix_);
  name.append(target_addr).append(1, '\n').append(key);
  return name;
}

void HintStore::Publish() {
  counters_->hints_pending = count_;
  counters_->hint_bytes = bytes_;
}

void HintStore::Index(const std::string& target_addr, const wire::Record& record) {
  Entry& e = index_[target_addr][record.key()];
  if (e.bytes == 0) ++count_;
  bytes_ -= e.bytes;
  e.version = record.version();
  e.writer = record.writer();
  e.bytes = Store::RecordBytes(record);
  bytes_ += e.bytes;
}

void HintStore::Unindex(const std::string& target_addr, const std::string& key) {
  auto t = index_.find(target_addr);
  if (t == index_.end()) return;
  auto k = t->second.find(key);
  if (k == t->second.end()) return;
  bytes_ -= k->second.bytes;
  --count_;
  t->second.erase(k);
  if (t->second.empty()) index_.erase(t);
}

Status HintStore::Load() {
  index_.clear();
  count_ = 0;
  bytes_ = 0;
  Status s = store_->ScanMeta(prefix_, [this](std::string_view name, std::string_view value) {
    const std::string_view rest = name.substr(prefix_.size());
    const size_t nl = rest.find('\n');
    wire::Record rec;
    if (nl == std::string_view::npos ||
        !rec.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return true;  // not a hint this version wrote: left alone
    }
    Index(std::string(rest.substr(0, nl)), rec);
    return true;
  });
  counters_->hints_loaded += count_;
  Publish();
  return s;
}

Result<HintStore::AddResult> HintStore::Add(const NodeRef& target, const wire::Record& record) {
  const std::string& addr = target.addr;
  if (auto t = index_.find(addr); t != index_.end()) {
    if (auto k = t->second.find(record.key()); k != t->second.end()) {
      const Entry& e = k->second;
      if (e.version > record.version() ||
          (e.version == record.version() && e.writer >= record.writer())) {
        return AddResult::kAlreadyNewer;
      }
      // Replacing a hint: only the growth counts against the bounds.
      const uint64_t size = Store::RecordBytes(record);
      if (size > e.bytes && bytes_ + (size - e.bytes) > limits_.max_bytes) return AddResult::kFull;
      if (Status s = store_->PutMeta(Name(addr, record.key()), record.SerializeAsString());
          !s.ok()) {
        return s;
      }
      Index(addr, record);
      Publish();
      return AddResult::kReplaced;
    }
  }
  if (count_ + 1 > limits_.max_hints || bytes_ + Store::RecordBytes(record) > limits_.max_bytes) {
    return AddResult::kFull;
  }
  if (Status s = store_->PutMeta(Name(addr, record.key()), record.SerializeAsString()); !s.ok()) {
    return s;
  }
  Index(addr, record);
  Publish();
  return AddResult::kStored;
}

std::vector<NodeRef> HintStore::Targets() const {
  std::vector<NodeRef> out;
  out.reserve(index_.size());
  for (const auto& [addr, keys] : index_) out.push_back(NodeRef::ForAddress(addr));
  return out;
}

Result<std::vector<wire::Record>> HintStore::Page(const NodeRef& target, size_t max_bytes,
                                                  size_t max_records) {
  std::vector<wire::Record> out;
  std::vector<std::string> lost;  // indexed, but not (or no longer readable) in the store
  auto t = index_.find(target.addr);
  if (t == index_.end()) return out;
  size_t bytes = 0;
  for (const auto& [key, e] : t->second) {
    if (!out.empty() && (bytes + e.bytes > max_bytes || out.size() >= max_records)) break;
    std::string value;
    wire::Record rec;
    Status s = store_->GetMeta(Name(target.addr, key), &value);
    if (!s.ok() && !s.IsNotFound()) return s;
    if (!s.ok() || !rec.ParseFromString(value)) {
      lost.push_back(key);
      continue;
    }
    bytes += e.bytes;
    out.push_back(std::move(rec));
  }
  // Gone from the store or unreadable: dropped.
  for (const std::string& key : lost) Unindex(target.addr, key);
  counters_->hints_dropped += lost.size();
  if (!lost.empty()) Publish();
  return out;
}

Result<uint64_t> HintStore::EraseDelivered(const NodeRef& target,
                                           const std::vector<wire::Record>& delivered,
                                           bool too_old) {
  uint64_t erased = 0;
  uint64_t& ended = too_old ? counters_->hints_dropped : counters_->hints_delivered;
  for (const wire::Record& rec : delivered) {
    auto t = index_.find(target.addr);
    if (t == index_.end()) break;
    auto k = t->second.find(rec.key());
    // A newer hint arrived for the key meanwhile: it is delivered next time.
    if (k == t->second.end() || k->second.version != rec.version() ||
        k->second.writer != rec.writer()) {
      continue;
    }
    if (Status s = store_->EraseMeta(Name(target.addr, rec.key())); !s.ok()) {
      Publish();
      return s;
    }
    Unindex(target.addr, rec.key());
    ++erased;
    ++ended;
  }
  Publish();
  return erased;
}

}  // namespace chord
