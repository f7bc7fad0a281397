#include "node/core/replication/replica_server.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "node/core/range_digest.h"
#include "node/core/record_order.h"
#include "protocol/limits.h"

namespace chord {
namespace {

// Records one pull answer looks at, at most.
constexpr size_t kMaxPullVisits = 100'000;

}  // namespace

void ReplicaServer::HandleReplicate(ReplyToken from, const wire::Envelope& request) {
  wire::Envelope reply;
  auto* r = reply.mutable_replicate_resp();
  r->set_code(wire::OK);
  if (leaving()) {
    // What we hand on is already gathered: a copy stored now would leave with us.
    r->set_code(wire::SHUTTING_DOWN);
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  }
  if (request.replicate().has_hint_for()) return HandleHint(from, request);
  uint32_t stored_count = 0;
  uint32_t refused = 0;
  const wire::ReplicateRequest& rr = request.replicate();
  // A write of a watched key (one record): keep its changes here too, linked as the owner
  // says, so that a watcher can go on from here if the owner dies.
  ChangeLink link;
  if (rr.watched() && rr.records_size() == 1) {
    link = ChangeLink{ChangeLink::Kind::kGiven, rr.prev_version(), /*published=*/true};
    const wire::Record& rec = rr.records(0);
    wire::Record current;
    const bool have = ctx_.store()->Get(Id::Sha1(rec.key()), rec.key(), &current).ok();
    if (KeyProblem(rec.key()).empty()) {
      ctx_.watches.Watch(rec.key(), have ? &current : nullptr, ctx_.now.mono_ms);
    }
    // We hold a change the owner lacks: this write does not follow on from ours, and the
    // owner must not tell watchers that it does.
    if (have && current.version() > rr.prev_version() && RecordNewer(rec, current)) {
      link = ChangeLink{};
      r->set_chain_broken(true);
    }
  }
  for (int i = 0; i < rr.records_size(); ++i) {
    const wire::Record& rec = rr.records(i);
    bool stored = false;
    wire::Record kept;
    Status s = ctx_.records.StoreIfNewer(Id::Sha1(rec.key()), rec, &stored, &kept, link);
    if (s.code() == Status::Code::kInvalidArgument) {
      // Outside our limits (a version further ahead of our clock than the skew we allow, a
      // value over our limit): dropped, and named in the answer, so that the sender does
      // not take it for a copy kept here.
      ++refused;
      r->add_refused_at(static_cast<uint32_t>(i));
      continue;
    }
    if (!s.ok()) {
      r->set_code(wire::UNAVAILABLE);
      ctx_.Log(LogLevel::kError, "cannot store replicated keys: " + s.message());
      break;
    }
    if (stored) {
      ++stored_count;
    } else if (kept.version() != rec.version() || kept.writer() != rec.writer()) {
      r->set_newer_version(std::max(r->newer_version(), kept.version()));
      // A write's single record lost: the owner takes the record that beat it.
      if (request.replicate().records_size() == 1) *r->add_newer() = std::move(kept);
    }
  }
  r->set_stored(stored_count);
  r->set_refused(refused);
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

bool ReplicaServer::KnownMember(const NodeRef& n) const {
  const RingState& ring = ctx_.ring;
  if (n.process() == ring.self.process()) return false;
  if (ring.PointsTo(n)) return true;
  const std::vector<NodeRef> known = membership_.known_members();
  return std::find(known.begin(), known.end(), n) != known.end();
}

void ReplicaServer::HandleHint(ReplyToken from, const wire::Envelope& request) {
  wire::Envelope reply;
  auto* r = reply.mutable_replicate_resp();
  r->set_code(wire::OK);
  const auto target = NodeRef::FromWire(request.replicate().hint_for());
  if (!target || !KnownMember(*target)) {
    // Only for members: a hint for anyone else could fill the store with unreachable copies.
    r->set_code(wire::INVALID);
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  }
  uint32_t stored_count = 0;
  uint32_t refused = 0;
  for (int i = 0; i < request.replicate().records_size(); ++i) {
    const wire::Record& rec = request.replicate().records(i);
    if (!ctx_.records.RecordProblem(rec).empty()) {
      ++refused;  // outside the limits: dropped, and named in the answer
      r->add_refused_at(static_cast<uint32_t>(i));
      continue;
    }
    auto added = hints_.Add(*target, rec);
    if (!added.ok()) {
      r->set_code(wire::UNAVAILABLE);
      ctx_.Log(LogLevel::kError, "cannot keep hinted records: " + added.status().message());
      break;
    }
    if (*added == HintStore::AddResult::kFull) {
      ++ctx_.counters.hints_refused;
      r->set_code(wire::UNAVAILABLE);
      break;
    }
    if (*added == HintStore::AddResult::kStored || *added == HintStore::AddResult::kReplaced) {
      ++(*added == HintStore::AddResult::kStored ? ctx_.counters.hints_stored
                                                 : ctx_.counters.hints_replaced);
      ++stored_count;
    }
  }
  r->set_stored(stored_count);
  r->set_refused(refused);
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

void ReplicaServer::HandleSyncDigest(ReplyToken from, const wire::Envelope& request) {
  const auto& d = request.sync_digest();
  wire::Envelope reply;
  auto* r = reply.mutable_sync_digest_resp();
  auto lo = Id::FromBytes(d.from_id());
  auto hi = Id::FromBytes(d.to_id());
  // The digests must be those of the range's pieces, one each (at most kMaxPieces).
  const uint32_t pieces = d.buckets();
  if (!lo || !hi || pieces != LedgerStore::PieceCount(*lo, *hi) ||
      static_cast<uint32_t>(d.digests_size()) != pieces) {
    r->set_code(wire::INVALID);
  } else if (leaving()) {
    r->set_code(wire::SHUTTING_DOWN);
  } else if (auto mine = ctx_.store()->PieceDigests(*lo, *hi); !mine.ok()) {
    r->set_code(wire::UNAVAILABLE);
  } else {
    r->set_code(wire::OK);
    for (uint32_t i = 0; i < pieces; ++i) {
      if ((*mine)[i] != d.digests(static_cast<int>(i))) r->add_differing(i);
    }
  }
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

void ReplicaServer::HandleSyncPull(ReplyToken from, const wire::Envelope& request) {
  const auto& p = request.sync_pull();
  wire::Envelope reply;
  auto* r = reply.mutable_sync_pull_resp();
  auto lo = Id::FromBytes(p.from_id());
  auto hi = Id::FromBytes(p.to_id());
  if (!lo || !hi || p.buckets() != LedgerStore::PieceCount(*lo, *hi) ||
      static_cast<uint32_t>(p.wanted_size()) > LedgerStore::kMaxPieces) {
    r->set_code(wire::INVALID);
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  }
  // A node still waiting for its keys would answer "none" for keys it simply lacks (a quorum
  // read would count that answer).
  if (!ctx_.ring.joined() || ctx_.ring.awaiting_transfer) {
    r->set_code(wire::UNAVAILABLE);
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  }
  const size_t max_bytes =
      std::min<size_t>(p.max_bytes() == 0 ? ctx_.config.transfer_batch_bytes : p.max_bytes(),
                       ctx_.config.transfer_batch_bytes);
  // Resume after `after_id` when it lies inside the range.
  std::optional<Id> after = Id::FromBytes(p.after_id());
  if (after && !Id::InHalfOpen(*after, *lo, *hi)) after.reset();
  const Id from_id = *lo;
  const Id to_id = *hi;
  // Only the wanted pieces are read, a bounded page of them.
  auto read = ReadPieces(ctx_.store(), from_id, to_id, {p.wanted().begin(), p.wanted().end()},
                         after, PageLimits{max_bytes, SIZE_MAX}, kMaxPullVisits);
  r->set_code(read.ok() ? wire::OK : wire::UNAVAILABLE);
  if (read.ok()) {
    for (auto& [id, rec] : read.value().page.records) *r->add_records() = std::move(rec);
    r->set_more(read->page.more);
  }
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

void ReplicaServer::HandleReplicaSet(ReplyToken from, const wire::Envelope& request) {
  const RingState& ring = ctx_.ring;
  wire::Envelope reply;
  auto* r = reply.mutable_replica_set_resp();
  r->set_joined(ring.joined() && !ring.awaiting_transfer);
  ring.self.ToWire(r->mutable_self());
  if (ring.predecessor && !(*ring.predecessor == ring.self)) {
    ring.predecessor->ToWire(r->mutable_predecessor());
  }
  for (const NodeRef& n : policy_.Targets()) n.ToWire(r->add_replicas());
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

}  // namespace chord
