// ChordNode, part two: the replication of records over the successor list. The owner of a
// key versions each write and waits for the other members of the replica set; reads fall
// back to the copies; anti-entropy compares the owner's range with each replica by bucketed
// digests; a clean-up walk drops copies this process no longer has to hold, once the
// holders have confirmed them. See README "Replication and consistency".
#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "node/core/chord_node.h"
#include "node/core/data_op.h"
#include "node/core/range_digest.h"
#include "node/core/record_order.h"

namespace chord {
namespace {

// Ranges the clean-up walk examines per anti-entropy round, beyond the R-1 it keeps.
constexpr int kExtraRangesPerRound = 2;
// Upper bound on the digest arcs a peer may ask us to compute.
constexpr uint32_t kMaxBuckets = 4096;
// Pages of differing records one anti-entropy comparison pulls from a replica at most.
constexpr int kMaxPullPages = 64;

std::string Describe(const NodeRef& n) { return n.id.ShortHex() + "@" + n.addr; }

size_t RecordBytes(const wire::Record& r) { return r.key().size() + r.value().size() + 32; }

// A callback to be called `n` times (n > 0) with one outcome each; after the last it calls
// `done` with whether every outcome was true.
std::function<void(bool)> AllOf(size_t n, std::function<void(bool all_ok)> done) {
  struct State {
    size_t pending;
    bool ok;
    std::function<void(bool)> done;
  };
  auto st = std::make_shared<State>(State{n, true, std::move(done)});
  return [st](bool ok) {
    st->ok = st->ok && ok;
    if (--st->pending == 0) st->done(st->ok);
  };
}

}  // namespace

std::vector<NodeRef> ChordNode::ReplicaTargets() const {
  std::vector<NodeRef> out;
  const std::string mine = self_.process();
  for (const NodeRef& n : successors_) {
    if (static_cast<int>(out.size()) >= config_.replicas - 1) break;
    if (n.process() == mine) continue;
    if (std::any_of(out.begin(), out.end(),
                    [&n](const NodeRef& o) { return o.process() == n.process(); })) {
      continue;
    }
    out.push_back(n);
  }
  return out;
}

uint64_t ChordNode::NextVersion() {
  clock_ = std::max(clock_ + 1, env_->WallMs() << 16);
  return clock_;
}

// ---------------------------------------------------------------------------------------
// Writes and reads

void ChordNode::CoordinateWrite(std::shared_ptr<WriteOp> w) {
  ++w->attempts;
  auto fail = [w](wire::Code code, const std::string& why) {
    wire::DataResponse resp;
    resp.set_code(code);
    resp.set_error(why);
    w->done(std::move(resp));
  };
  if (w->attempts > 1 && (state_ != State::kJoined || awaiting_transfer_ || !Owns(w->key_id))) {
    // The ring moved while the first attempt was out: the coordinator must find the owner.
    return fail(wire::NOT_OWNER, self_.addr + " is no longer the key's owner");
  }
  wire::Record old;
  if (store_->Get(w->key_id, w->record.key(), &old).ok()) ObserveVersion(old.version());
  w->record.set_version(NextVersion());
  w->record.set_writer(self_.id.ToBytes());
  if (Status s = store_->Put(w->key_id, w->record); !s.ok()) {
    return fail(wire::UNAVAILABLE, "the owner could not store the key: " + s.message());
  }
  ++counters_.writes_replicated;
  struct Tally {
    size_t pending = 0;
    uint64_t newer = 0;
    std::string failed;
    std::vector<std::string> asked;  // processes asked so far (this one included)
  };
  auto tally = std::make_shared<Tally>();
  tally->asked.push_back(self_.process());
  const std::vector<NodeRef> targets = ReplicaTargets();
  for (const NodeRef& t : targets) tally->asked.push_back(t.process());
  auto finish = [this, w, tally, fail] {
    if (tally->newer >= w->record.version()) {
      // A replica holds a newer version (written by an earlier owner): write again above
      // it, so that this acknowledged write is the newest everywhere.
      ObserveVersion(tally->newer);
      if (w->attempts < config_.write_attempts) return CoordinateWrite(w);
      return fail(wire::UNAVAILABLE, "the key's replicas kept holding newer versions; retry");
    }
    if (!tally->failed.empty()) return fail(wire::UNAVAILABLE, tally->failed);
    wire::DataResponse resp;
    resp.set_code(wire::OK);
    resp.set_version(w->record.version());
    self_.ToWire(resp.mutable_owner());
    w->done(std::move(resp));
  };
  if (targets.empty()) return finish();
  tally->pending = targets.size();
  // Sends the write to `t`; a member that is leaving is replaced by the next distinct process
  // of the successor list, which is about to take its place in the replica set.
  auto send = std::make_shared<std::function<void(const NodeRef&)>>();
  std::weak_ptr<bool> alive = alive_;
  *send = [this, alive, w, tally, finish, weak_send = std::weak_ptr(send)](const NodeRef& t) {
    wire::Envelope req;
    auto* r = req.mutable_replicate();
    self_.ToWire(r->mutable_from());
    *r->add_records() = w->record;
    // The pending call holds the fan-out strongly, the fan-out itself only weakly: no cycle.
    Call(t, std::move(req), config_.rpc_timeout_ms,
         [this, alive, t, tally, finish, again = weak_send.lock()](const wire::Envelope* resp) {
           if (alive.expired()) return;
           if (resp != nullptr && resp->has_replicate_resp()) {
             const auto& r = resp->replicate_resp();
             if (r.code() == wire::OK) {
               tally->newer = std::max(tally->newer, r.newer_version());
             } else if (r.code() == wire::SHUTTING_DOWN) {
               for (const NodeRef& n : successors_) {
                 if (!again) break;
                 if (std::find(tally->asked.begin(), tally->asked.end(), n.process()) !=
                     tally->asked.end()) {
                   continue;
                 }
                 tally->asked.push_back(n.process());
                 (*again)(n);  // its answer settles this member's place; pending unchanged
                 return;
               }
             } else {
               tally->failed = "the replica " + t.addr + " could not store the key";
             }
           }
           // No answer: the replica is presumed dead; the write needs the live ones only.
           if (--tally->pending == 0) finish();
         });
  };
  for (const NodeRef& t : targets) (*send)(t);
}

void ChordNode::ReadFromReplicas(std::shared_ptr<DataOp> op, std::vector<NodeRef> holders) {
  if (holders.empty()) {
    RetryDataOp(op, "the key's owner did not answer and no replica is known");
    return;
  }
  struct Tally {
    size_t pending = 0;
    bool any = false;
    std::optional<wire::DataResponse> best;
  };
  auto tally = std::make_shared<Tally>();
  tally->pending = holders.size();
  std::weak_ptr<bool> alive = alive_;
  for (const NodeRef& h : holders) {
    wire::Envelope req;
    auto* g = req.mutable_get();
    g->set_key(op->request.get().key());
    g->set_direct(true);
    g->set_from_replica(true);
    Call(h, std::move(req), config_.rpc_timeout_ms,
         [this, alive, op, tally](const wire::Envelope* resp) {
           if (alive.expired()) return;
           if (resp != nullptr && resp->has_data_resp()) {
             const auto& d = resp->data_resp();
             if (d.code() == wire::OK || d.code() == wire::NOT_FOUND) {
               tally->any = true;
               // The newest version seen wins; a tombstone is a NOT_FOUND with a version.
               if (!tally->best || d.version() > tally->best->version()) tally->best = d;
             }
           }
           if (--tally->pending > 0) return;
           if (!tally->any) {
             RetryDataOp(op, "neither the key's owner nor its replicas answered");
             return;
           }
           FinishDataOp(op, *tally->best);
         });
  }
}

void ChordNode::ReadMissFromReplicas(const std::string& key, wire::DataResponse not_found,
                                     DataDone done) {
  const std::vector<NodeRef> targets = ReplicaTargets();
  auto best = std::make_shared<wire::DataResponse>(std::move(not_found));
  auto pending = std::make_shared<size_t>(targets.size());
  auto finish = std::make_shared<DataDone>(std::move(done));
  std::weak_ptr<bool> alive = alive_;
  for (const NodeRef& t : targets) {
    wire::Envelope req;
    auto* g = req.mutable_get();
    g->set_key(key);
    g->set_direct(true);
    g->set_from_replica(true);
    Call(t, std::move(req), config_.rpc_timeout_ms,
         [this, alive, best, pending, finish](const wire::Envelope* resp) {
           if (alive.expired()) return;
           if (resp != nullptr && resp->has_data_resp()) {
             const auto& d = resp->data_resp();
             // A tombstone is a NOT_FOUND with a version: it also counts as newer.
             if ((d.code() == wire::OK || d.code() == wire::NOT_FOUND) &&
                 d.version() > best->version()) {
               const auto owner = best->owner();
               *best = d;
               *best->mutable_owner() = owner;
             }
           }
           if (--*pending > 0) return;
           (*finish)(std::move(*best));
         });
  }
}

void ChordNode::ReadRepair(const wire::Record& rec) {
  // Offer our copy to the replicas; one that holds an older version (or none) stores it.
  for (const NodeRef& t : ReplicaTargets()) SendRecords(t, {rec}, [](bool) {});
}

void ChordNode::SendRecords(const NodeRef& to, std::vector<wire::Record> records,
                            std::function<void(bool ok)> done) {
  wire::Envelope req;
  auto* r = req.mutable_replicate();
  self_.ToWire(r->mutable_from());
  for (auto& rec : records) *r->add_records() = std::move(rec);
  std::weak_ptr<bool> alive = alive_;
  Call(to, std::move(req), config_.transfer_timeout_ms,
       [this, alive, done = std::move(done)](const wire::Envelope* resp) {
         if (alive.expired()) return;
         const bool ok = resp != nullptr && resp->has_replicate_resp() &&
                         resp->replicate_resp().code() == wire::OK;
         if (ok) counters_.keys_repaired += resp->replicate_resp().stored();
         done(ok);
       });
}

// ---------------------------------------------------------------------------------------
// Anti-entropy

void ChordNode::AntiEntropyRound() {
  if (anti_entropy_running_ || state_ != State::kJoined || awaiting_transfer_) return;
  const auto start = RangeStart();
  const Id from = start ? *start : self_.id;
  const Id to = self_.id;
  const std::vector<NodeRef> targets = ReplicaTargets();
  if (targets.empty()) {
    PurgeTombstones(from, to, {});
    if (!collecting_garbage_) CollectGarbage(config_.replicas - 1 + kExtraRangesPerRound);
    return;
  }
  if (!start && !successors_.empty()) return;  // our range is unknown for now
  const uint32_t buckets = std::clamp<uint32_t>(config_.digest_buckets, 1, kMaxBuckets);
  auto digests = ComputeRangeDigests(store_, from, to, buckets);
  if (!digests.ok()) {
    Log(LogLevel::kError, "anti-entropy cannot read the store: " + digests.status().message());
    return;
  }
  auto shared = std::make_shared<const std::vector<uint64_t>>(std::move(*digests));
  anti_entropy_running_ = true;
  std::weak_ptr<bool> alive = alive_;
  auto each = AllOf(targets.size(), [this, alive, from, to, targets](bool clean) {
    if (alive.expired()) return;
    anti_entropy_running_ = false;
    // Every replica agrees with us: tombstones past their grace period can go everywhere.
    if (clean) PurgeTombstones(from, to, targets);
    if (!collecting_garbage_) CollectGarbage(config_.replicas - 1 + kExtraRangesPerRound);
  });
  for (const NodeRef& t : targets) SyncWithReplica(t, from, to, shared, each);
}

void ChordNode::SyncWithReplica(const NodeRef& target, const Id& from, const Id& to,
                                std::shared_ptr<const std::vector<uint64_t>> digests,
                                std::function<void(bool clean)> done) {
  const auto buckets = static_cast<uint32_t>(digests->size());
  wire::Envelope req;
  auto* d = req.mutable_sync_digest();
  self_.ToWire(d->mutable_from());
  d->set_from_id(from.ToBytes());
  d->set_to_id(to.ToBytes());
  d->set_buckets(buckets);
  for (uint64_t x : *digests) d->add_digests(x);
  counters_.anti_entropy_bytes += req.ByteSizeLong();
  ++counters_.anti_entropy_rounds;
  std::weak_ptr<bool> alive = alive_;
  Call(target, std::move(req), config_.rpc_timeout_ms,
       [this, alive, target, from, to, buckets,
        done = std::move(done)](const wire::Envelope* resp) mutable {
         if (alive.expired()) return;
         if (resp == nullptr || !resp->has_sync_digest_resp() ||
             resp->sync_digest_resp().code() != wire::OK) {
           done(false);
           return;
         }
         counters_.anti_entropy_bytes += resp->ByteSizeLong();
         std::vector<uint32_t> differing(resp->sync_digest_resp().differing().begin(),
                                         resp->sync_digest_resp().differing().end());
         if (differing.empty()) {
           ++counters_.anti_entropy_clean;
           done(true);
           return;
         }
         // Fetch the replica's records of those arcs, take what is newer, send what it lacks.
         auto theirs = std::make_shared<std::vector<wire::Record>>();
         PullDifferences(target, from, to, buckets, std::move(differing), std::nullopt, theirs,
                         kMaxPullPages, [done = std::move(done)](bool) {
                           done(false);  // something differed this round
                         });
       });
}

void ChordNode::PullDifferences(const NodeRef& target, const Id& from, const Id& to,
                                uint32_t buckets, std::vector<uint32_t> differing,
                                std::optional<Id> after,
                                std::shared_ptr<std::vector<wire::Record>> theirs, int pages_left,
                                std::function<void(bool ok)> done) {
  wire::Envelope pull;
  auto* p = pull.mutable_sync_pull();
  p->set_from_id(from.ToBytes());
  p->set_to_id(to.ToBytes());
  p->set_buckets(buckets);
  for (uint32_t b : differing) p->add_wanted(b);
  p->set_max_bytes(config_.transfer_batch_bytes);
  if (after) p->set_after_id(after->ToBytes());
  counters_.anti_entropy_bytes += pull.ByteSizeLong();
  std::weak_ptr<bool> alive = alive_;
  Call(target, std::move(pull), config_.transfer_timeout_ms,
       [this, alive, target, from, to, buckets, differing = std::move(differing), theirs,
        pages_left, done = std::move(done)](const wire::Envelope* resp) mutable {
         if (alive.expired()) return;
         if (resp == nullptr || !resp->has_sync_pull_resp() ||
             resp->sync_pull_resp().code() != wire::OK) {
           done(false);
           return;
         }
         counters_.anti_entropy_bytes += resp->ByteSizeLong();
         uint64_t taken = 0;
         std::optional<Id> last;
         for (const auto& rec : resp->sync_pull_resp().records()) {
           if (rec.key().empty() || rec.key().size() > config_.max_key_bytes) continue;
           const Id id = Id::Sha1(rec.key());
           last = id;
           // Take only what falls in our range: the rest is not ours to hold.
           if (!Id::InHalfOpen(id, from, to)) continue;
           bool stored = false;
           if (!StoreIfNewer(id, rec, &stored).ok()) continue;
           if (stored) ++taken;
           wire::Record meta = rec;
           meta.clear_value();  // only the version matters from here on
           theirs->push_back(std::move(meta));
         }
         counters_.keys_repaired += taken;
         if (taken > 0) {
           Log(LogLevel::kInfo, "anti-entropy: took " + std::to_string(taken) +
                                    " newer keys from " + Describe(target));
         }
         if (resp->sync_pull_resp().more() && last && pages_left > 1) {
           PullDifferences(target, from, to, buckets, std::move(differing), last, theirs,
                           pages_left - 1, std::move(done));
           return;
         }
         PushDifferences(target, from, to, buckets, std::move(differing), std::move(*theirs),
                         std::move(done));
       });
}

void ChordNode::PushDifferences(const NodeRef& target, const Id& from, const Id& to,
                                uint32_t buckets, std::vector<uint32_t> differing,
                                std::vector<wire::Record> theirs,
                                std::function<void(bool ok)> done) {
  std::vector<bool> wanted(buckets, false);
  for (uint32_t b : differing) {
    if (b < buckets) wanted[b] = true;
  }
  std::unordered_map<std::string, wire::Record> have;
  for (auto& r : theirs) {
    std::string key = r.key();
    r.clear_value();
    have.emplace(std::move(key), std::move(r));
  }
  std::vector<wire::Record> send;
  size_t bytes = 0;
  Status s = store_->Scan(from, to, [&](const Id& id, const wire::Record& rec) {
    if (!wanted[DigestBucket(from, to, buckets, id)]) return true;
    auto it = have.find(rec.key());
    if (it != have.end() && !RecordNewer(rec, it->second)) return true;
    if (!send.empty() && bytes + RecordBytes(rec) > config_.transfer_batch_bytes) return false;
    bytes += RecordBytes(rec);
    send.push_back(rec);
    return true;
  });
  if (!s.ok() || send.empty()) {
    done(s.ok());
    return;
  }
  const size_t n = send.size();
  counters_.anti_entropy_bytes += bytes;
  std::weak_ptr<bool> alive = alive_;
  SendRecords(target, std::move(send), [this, alive, target, n, done = std::move(done)](bool ok) {
    if (alive.expired()) return;
    if (ok) {
      Log(LogLevel::kInfo,
          "anti-entropy: sent " + std::to_string(n) + " keys to replica " + Describe(target));
    }
    done(ok);
  });
}

void ChordNode::PurgeTombstones(const Id& from, const Id& to, std::vector<NodeRef> targets) {
  const uint64_t now = env_->WallMs();
  std::vector<wire::Record> old;
  size_t bytes = 0;
  Status s = store_->Scan(from, to, [&](const Id&, const wire::Record& rec) {
    if (!rec.deleted() || VersionWallMs(rec.version()) + config_.tombstone_grace_ms > now) {
      return true;
    }
    if (bytes > config_.transfer_batch_bytes) return false;
    bytes += RecordBytes(rec);
    old.push_back(rec);
    return true;
  });
  if (!s.ok() || old.empty()) return;
  auto erase_here = [this](const std::vector<wire::Record>& recs) {
    uint64_t n = 0;
    for (const auto& r : recs) {
      const Id id = Id::Sha1(r.key());
      wire::Record current;
      if (!store_->Get(id, r.key(), &current).ok() || !current.deleted() ||
          current.version() != r.version()) {
        continue;
      }
      if (store_->Erase(id, r.key()).ok()) ++n;
    }
    counters_.tombstones_purged += n;
    if (n > 0) Log(LogLevel::kInfo, "purged " + std::to_string(n) + " expired tombstones");
  };
  if (targets.empty()) {
    erase_here(old);
    return;
  }
  // The replicas first: if one misses the purge, the next digest comparison sends it the
  // tombstone again (never the deleted value), and the purge is retried.
  auto recs = std::make_shared<std::vector<wire::Record>>(std::move(old));
  std::weak_ptr<bool> alive = alive_;
  auto each = AllOf(targets.size(), [alive, recs, erase_here](bool all_ok) {
    if (!alive.expired() && all_ok) erase_here(*recs);
  });
  for (const NodeRef& t : targets) {
    wire::Envelope req;
    for (const auto& r : *recs) {
      wire::Record* out = req.mutable_purge()->add_records();
      out->set_key(r.key());
      out->set_version(r.version());
      out->set_deleted(true);
    }
    Call(t, std::move(req), config_.rpc_timeout_ms, [each](const wire::Envelope* resp) {
      each(resp != nullptr && resp->has_purge_resp() && resp->purge_resp().code() == wire::OK);
    });
  }
}

// ---------------------------------------------------------------------------------------
// Clean-up of copies this process no longer has to hold

void ChordNode::CollectGarbage(int ranges_left) {
  collecting_garbage_ = false;
  if (ranges_left <= 0 || state_ != State::kJoined || awaiting_transfer_ || successors_.empty() ||
      config_.replicas <= 1) {
    return;
  }
  const auto start = RangeStart();
  if (!start) return;
  // Walk the records outside our range, (self, start], one owner's range at a time.
  Id cursor = gc_cursor_.value_or(self_.id);
  if (!(cursor == self_.id) && !Id::InOpen(cursor, self_.id, *start)) cursor = self_.id;
  std::optional<Id> first;
  Status s = store_->Scan(cursor, *start, [&first](const Id& id, const wire::Record&) {
    first = id;
    return false;
  });
  if (!s.ok() || !first || cursor == *start) {
    gc_cursor_.reset();
    return;
  }
  collecting_garbage_ = true;
  const Id key_id = *first;
  std::weak_ptr<bool> alive = alive_;
  auto next = [this, alive, ranges_left](std::optional<Id> cursor_after) {
    if (alive.expired()) return;
    collecting_garbage_ = false;
    if (!cursor_after) return;  // stop for this round
    gc_cursor_ = cursor_after;
    CollectGarbage(ranges_left - 1);
  };
  Lookup(key_id, /*verify_owner=*/false, [this, alive, key_id, next](Result<LookupResult> r) {
    if (alive.expired()) return;
    if (!r.ok()) return next(std::nullopt);
    const NodeRef owner = r->owner;
    if (owner.process() == self_.process()) return next(owner.id);  // a sibling's range
    wire::Envelope req;
    req.mutable_replica_set();
    Call(owner, std::move(req), config_.rpc_timeout_ms,
         [this, alive, key_id, owner, next](const wire::Envelope* resp) {
           if (alive.expired()) return;
           if (resp == nullptr || !resp->has_replica_set_resp()) return next(std::nullopt);
           const auto& rs = resp->replica_set_resp();
           auto pred = rs.has_predecessor() ? NodeRef::FromWire(rs.predecessor()) : std::nullopt;
           if (!rs.joined() || !pred || !Id::InHalfOpen(key_id, pred->id, owner.id)) {
             return next(std::nullopt);  // its view is not settled; try next round
           }
           std::vector<NodeRef> holders{owner};
           for (const auto& info : rs.replicas()) {
             if (auto n = NodeRef::FromWire(info)) holders.push_back(std::move(*n));
           }
           const bool ours = std::any_of(holders.begin(), holders.end(), [this](const NodeRef& h) {
             return h.process() == self_.process();
           });
           if (ours || static_cast<int>(holders.size()) < config_.replicas) {
             // Still ours to hold (or the ring is too small to leave anyone out).
             return next(owner.id);
           }
           DropRange(pred->id, owner.id, holders, [next, owner](bool ok) {
             next(ok ? std::optional<Id>(owner.id) : std::nullopt);
           });
         });
  });
}

void ChordNode::DropRange(const Id& from, const Id& to, std::vector<NodeRef> holders,
                          std::function<void(bool ok)> done) {
  // Our copies of (from, to] go to every holder first; only once all of them confirm are
  // they erased here.
  std::vector<wire::Record> recs;
  size_t bytes = 0;
  bool more = false;
  Status s = store_->Scan(from, to, [&](const Id& id, const wire::Record& rec) {
    if (Owns(id)) return true;
    if (!recs.empty() && bytes + RecordBytes(rec) > config_.transfer_batch_bytes) {
      more = true;
      return false;
    }
    bytes += RecordBytes(rec);
    recs.push_back(rec);
    return true;
  });
  if (!s.ok() || recs.empty()) {
    done(s.ok());
    return;
  }
  auto shared = std::make_shared<std::vector<wire::Record>>(std::move(recs));
  std::weak_ptr<bool> alive = alive_;
  auto each = AllOf(holders.size(), [this, alive, shared, holders, more, done](bool all_ok) {
    if (alive.expired()) return;
    if (!all_ok) {
      done(false);
      return;
    }
    uint64_t n = 0;
    for (const auto& r : *shared) {
      const Id id = Id::Sha1(r.key());
      wire::Record current;
      if (Owns(id) || !store_->Get(id, r.key(), &current).ok() ||
          current.version() != r.version()) {
        continue;  // ours again, or rewritten meanwhile: keep it
      }
      if (store_->Erase(id, r.key()).ok()) ++n;
    }
    counters_.keys_dropped += n;
    std::string names;
    for (const NodeRef& h : holders) names += (names.empty() ? "" : ", ") + h.addr;
    Log(LogLevel::kInfo, "dropped " + std::to_string(n) +
                             " keys no longer in this node's replica sets; held by " + names);
    done(!more);
  });
  for (const NodeRef& h : holders) SendRecords(h, *shared, each);
}

// ---------------------------------------------------------------------------------------
// Handlers

void ChordNode::HandleReplicate(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  auto* r = reply.mutable_replicate_resp();
  r->set_code(wire::OK);
  if (state_ == State::kLeaving || state_ == State::kLeft) {
    // What we hand on is already gathered: a copy stored now would leave with us.
    r->set_code(wire::SHUTTING_DOWN);
    Reply(from, req.request_id(), std::move(reply));
    return;
  }
  uint32_t stored_count = 0;
  for (const auto& rec : req.replicate().records()) {
    if (rec.key().empty() || rec.key().size() > config_.max_key_bytes ||
        rec.value().size() > config_.max_value_bytes) {
      continue;
    }
    bool stored = false;
    wire::Record kept;
    Status s = StoreIfNewer(Id::Sha1(rec.key()), rec, &stored, &kept);
    if (!s.ok()) {
      r->set_code(wire::UNAVAILABLE);
      Log(LogLevel::kError, "cannot store replicated keys: " + s.message());
      break;
    }
    if (stored) {
      ++stored_count;
    } else if (kept.version() != rec.version() || kept.writer() != rec.writer()) {
      r->set_newer_version(std::max(r->newer_version(), kept.version()));
    }
  }
  r->set_stored(stored_count);
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandleSyncDigest(ReplyToken from, const wire::Envelope& req) {
  const auto& d = req.sync_digest();
  wire::Envelope reply;
  auto* r = reply.mutable_sync_digest_resp();
  auto lo = Id::FromBytes(d.from_id());
  auto hi = Id::FromBytes(d.to_id());
  const uint32_t buckets = d.buckets();
  if (!lo || !hi || buckets == 0 || buckets > kMaxBuckets ||
      static_cast<uint32_t>(d.digests_size()) != buckets) {
    r->set_code(wire::INVALID);
    Reply(from, req.request_id(), std::move(reply));
    return;
  }
  if (state_ == State::kLeaving || state_ == State::kLeft) {
    r->set_code(wire::SHUTTING_DOWN);
    Reply(from, req.request_id(), std::move(reply));
    return;
  }
  auto mine = ComputeRangeDigests(store_, *lo, *hi, buckets);
  if (!mine.ok()) {
    r->set_code(wire::UNAVAILABLE);
  } else {
    r->set_code(wire::OK);
    for (uint32_t i = 0; i < buckets; ++i) {
      if ((*mine)[i] != d.digests(static_cast<int>(i))) r->add_differing(i);
    }
  }
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandleSyncPull(ReplyToken from, const wire::Envelope& req) {
  const auto& p = req.sync_pull();
  wire::Envelope reply;
  auto* r = reply.mutable_sync_pull_resp();
  auto lo = Id::FromBytes(p.from_id());
  auto hi = Id::FromBytes(p.to_id());
  const uint32_t buckets = p.buckets();
  if (!lo || !hi || buckets == 0 || buckets > kMaxBuckets) {
    r->set_code(wire::INVALID);
    Reply(from, req.request_id(), std::move(reply));
    return;
  }
  std::vector<bool> wanted(buckets, false);
  for (uint32_t b : p.wanted()) {
    if (b < buckets) wanted[b] = true;
  }
  const size_t max_bytes =
      std::min<size_t>(p.max_bytes() == 0 ? config_.transfer_batch_bytes : p.max_bytes(),
                       config_.transfer_batch_bytes);
  size_t bytes = 0;
  // Resume after `after_id` when it lies inside the range; (a, a] would be the whole ring.
  Id scan_from = *lo;
  if (auto after = Id::FromBytes(p.after_id()); after && Id::InHalfOpen(*after, *lo, *hi)) {
    if (*after == *hi) {
      r->set_code(wire::OK);
      Reply(from, req.request_id(), std::move(reply));
      return;
    }
    scan_from = *after;
  }
  Status s = store_->Scan(scan_from, *hi, [&](const Id& id, const wire::Record& rec) {
    if (!wanted[DigestBucket(*lo, *hi, buckets, id)]) return true;
    if (r->records_size() > 0 && bytes + RecordBytes(rec) > max_bytes) {
      r->set_more(true);
      return false;
    }
    bytes += RecordBytes(rec);
    *r->add_records() = rec;
    return true;
  });
  r->set_code(s.ok() ? wire::OK : wire::UNAVAILABLE);
  if (!s.ok()) r->clear_records();
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandlePurge(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  auto* r = reply.mutable_purge_resp();
  r->set_code(wire::OK);
  uint64_t n = 0;
  for (const auto& rec : req.purge().records()) {
    if (rec.key().empty() || rec.key().size() > config_.max_key_bytes) continue;
    const Id id = Id::Sha1(rec.key());
    wire::Record current;
    if (!store_->Get(id, rec.key(), &current).ok() || !current.deleted() ||
        current.version() != rec.version()) {
      continue;
    }
    if (!store_->Erase(id, rec.key()).ok()) {
      r->set_code(wire::UNAVAILABLE);
      break;
    }
    ++n;
  }
  counters_.tombstones_purged += n;
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandleReplicaSet(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  auto* r = reply.mutable_replica_set_resp();
  r->set_joined(state_ == State::kJoined && !awaiting_transfer_);
  self_.ToWire(r->mutable_self());
  if (predecessor_ && !(*predecessor_ == self_)) predecessor_->ToWire(r->mutable_predecessor());
  for (const NodeRef& n : ReplicaTargets()) n.ToWire(r->add_replicas());
  Reply(from, req.request_id(), std::move(reply));
}

}  // namespace chord
