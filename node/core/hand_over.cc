#include "node/core/hand_over.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "node/core/refused_records.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// Bytes of watched keys' recent changes one hand-over batch carries at most.
constexpr size_t kMaxHistoryBytesPerBatch = 4u << 20;
// Missing members read from one batch, at most (a sender keeps 64, and names the replicas of
// its last group it has not noted yet besides).
constexpr int kMaxHandedOverMissing = 128;

}  // namespace

void HandOver::ToPredecessor(bool announce, bool keep_copies) {
  // Records outside (predecessor, self] belong to the predecessor's side of the ring: on a
  // join that is exactly the new node's range. Hand them over; delete only after the ack.
  keep_copies_on_join_ = keep_copies;
  RingState& ring = ctx_.ring;
  if (busy() || !ring.joined() || !ring.predecessor || *ring.predecessor == ring.self) return;
  const NodeRef to = *ring.predecessor;
  if (keep_copies && ring.PredecessorHeld(ctx_.now.mono_ms)) {
    // This node confirmed its predecessor for a conditional write (RingState::PredecessorHeld),
    // which may still be deciding on that word: a new node that joined in between may own the
    // asker's arc (its own predecessor had dropped the asker), and must not decide before the
    // hold ends. It notifies again each round; no one extends the hold meanwhile.
    ring.keys_held_back_for = to;
    return;
  }
  ring.keys_held_back_for.reset();
  if (!announce) {
    const auto range = ring.HandOverRange(to, /*for_leave=*/false);
    if (!range) return;
    auto held = ctx_.store()->Tally(range->from, range->to);
    if (held.ok() && held->live + held->tombstones == 0) return;
    // What is left is what this predecessor refused in the last hand-over (outside its
    // limits): sent again each round, it would only be refused again. It is sent again after
    // kRefusedRetryMs (a clock behind by more than the skew catches up; limits change on a
    // restart); anything new in the range goes at once, and those with it.
    if (held.ok() && refused_left_ && refused_left_->to == to &&
        held->live + held->tombstones <= refused_left_->records &&
        ctx_.now.mono_ms < refused_left_->until_ms) {
      return;
    }
  }
  Batch b;
  b.to = to;
  b.keep_copies = keep_copies;
  Send(std::move(b), std::nullopt);
}

void HandOver::ForLeave(const NodeRef& to, OpRef parent) {
  // A join batch still in flight is abandoned (its records stay here): the leave hands on
  // everything this position accounts for, those records included.
  Batch b;
  b.to = to;
  b.for_leave = true;
  b.parent = parent;
  Send(std::move(b), std::nullopt);
}

void HandOver::Send(Batch batch, const std::optional<Id>& after) {
  // One batch of at most transfer_batch_bytes, less on a slow link (LinkPace; Store::ReadPage:
  // more only by keys sharing the last one's SHA-1); once acknowledged, the next batch
  // continues after the last id sent, until nothing is left; the last batch is marked `last`.
  const auto range = ctx_.ring.HandOverRange(batch.to, batch.for_leave);
  batch.pace = ctx_.pace().BatchBytes(batch.to.process());
  StorePage page;
  if (range) {
    auto read = ctx_.records.ReadPage(*range, after, PageLimits{batch.pace, SIZE_MAX});
    if (!read.ok()) {
      ctx_.Log(LogLevel::kError, "cannot read keys to hand over: " + read.status().message());
      return Finish(batch, false);
    }
    page = std::move(*read);
  }
  batch.id = next_id_++;
  batch.sent = StampsOf(page);
  batch.bytes = page.bytes;
  batch.more = page.more;
  batch.started_ms = ctx_.now.mono_ms;
  std::vector<wire::Record> records;
  records.reserve(page.records.size());
  for (auto& [id, rec] : page.records) records.push_back(std::move(rec));
  // The recent changes of watched keys go along, within their own byte budget, which counts
  // each change as more than it takes on the wire (WatchLog::HistoryBytes), so that records
  // and histories together stay within half a frame (transfer_batch_bytes is at most a
  // quarter of one).
  std::vector<wire::WatchHistory> histories;
  // On a paced (slow) link the histories share the pace with the records: one that does not
  // fit is left out (its watchers resync), rather than the batch taking longer on the wire
  // than short requests wait.
  size_t history_budget = std::min(kMaxHistoryBytesPerBatch, ctx_.config.transfer_batch_bytes);
  if (ctx_.pace().Paced(batch.to.process())) {
    history_budget =
        std::min(history_budget, batch.pace - std::min<size_t>(batch.pace, page.bytes));
  }
  for (const wire::Record& rec : records) {
    wire::WatchHistory h;
    if (!ctx_.watches.Export(rec.key(), history_budget, &h)) continue;
    history_budget -= WatchLog::HistoryBytes(h);
    histories.push_back(std::move(h));
  }
  wire::Envelope transfer = msg::Transfer(ctx_.self(), std::move(records), !page.more);
  for (auto& h : histories) *transfer.mutable_transfer()->add_watch_histories() = std::move(h);
  if (missing_ != nullptr) {
    auto* t = transfer.mutable_transfer();
    const MissingList list = missing_->Missing();
    for (const MissingMember& m : list.members) {
      auto* out = t->add_missing();
      m.member.ToWire(out->mutable_node());
      out->set_missing_for_ms(m.missing_for_ms);
    }
    t->set_missing_overflow_ms(list.overflow_ms_left);
  }
  batch.wire_bytes = transfer.ByteSizeLong();
  ctx_.out.Send(batch.to, std::move(transfer), ctx_.config.transfer_timeout_ms,
                OpRef{OpKind::kHandOver, 0, 0, batch.id});
  current_ = std::move(batch);
}

void HandOver::OnRpc(OpRef op, const wire::Envelope* response) {
  if (!current_ || current_->id != op.id) return;
  Batch batch = std::move(*current_);
  current_.reset();
  const RingState& ring = ctx_.ring;
  // The predecessor changed (or was cleared) while this batch was in flight: no more batches
  // to the old one; start over toward the new one, if any, once this batch is settled.
  const bool moved = !batch.for_leave && !(ring.predecessor && *ring.predecessor == batch.to);
  const bool ok = response != nullptr && response->has_transfer_resp() &&
                  response->transfer_resp().code() == wire::OK;
  if (!ok) {
    ctx_.Log(LogLevel::kWarn, "hand-over of " + std::to_string(batch.sent.size()) + " keys to " +
                                  batch.to.Describe() + " failed; keeping them");
    // Unanswered: perhaps the batch took too long on the wire (a slow link); smaller next time.
    if (response == nullptr) ctx_.pace().Failed(batch.to.process(), batch.wire_bytes, batch.pace);
    Finish(batch, false);
  } else {
    ctx_.pace().Answered(batch.to.process(), batch.wire_bytes, ctx_.now.mono_ms - batch.started_ms,
                         batch.pace);
    batch.refused += DropSent(batch, response->transfer_resp());
    ctx_.counters.keys_sent += batch.sent.size();
    ctx_.counters.bytes_sent += batch.bytes;
    if (!batch.sent.empty()) {
      ctx_.Log(LogLevel::kInfo, "transferred " + std::to_string(batch.sent.size()) + " keys (" +
                                    std::to_string(batch.bytes) + " bytes) to " +
                                    batch.to.Describe() + " in " +
                                    std::to_string(ctx_.now.mono_ms - batch.started_ms) + " ms");
    }
    if (!batch.more) {
      Finish(batch, true);
    } else if (moved) {
      Finish(batch, false);  // the predecessor changed meanwhile; start over below
    } else {
      const Id after = batch.sent.back().key_id;
      Send(std::move(batch), after);
    }
  }
  if (moved && !busy() && ring.predecessor) {
    ToPredecessor(/*announce=*/true, keep_copies_on_join_);
  }
}

uint64_t HandOver::DropSent(const Batch& batch, const wire::TransferResponse& answer) {
  // With replicas, a join's hand-over is a copy: this node stays in the new node's replica
  // set, and the clean-up pass drops what it no longer needs.
  if (!batch.for_leave && batch.keep_copies) return 0;
  if (batch.to.SameProcess(ctx_.self())) return 0;  // one shared store
  // What the receiver refused (outside its limits: a lower value limit, a clock behind by more
  // than the skew) it does not hold: those copies stay here. An answer that does not name its
  // refusals one by one, in ascending order within the batch, keeps the whole batch.
  std::vector<bool> refused(batch.sent.size(), false);
  const bool named = MarkRefused(answer, &refused);
  if (!named || answer.refused() > 0) {
    ctx_.Log(LogLevel::kWarn,
             batch.to.Describe() + " refused " +
                 (named ? std::to_string(answer.refused()) + " of the " +
                              std::to_string(batch.sent.size()) + " keys handed over to it"
                        : "keys handed over to it without naming them") +
                 " as outside its limits; they stay here (check that every node runs with the "
                 "same limits and synchronized clocks)");
  }
  if (!named) return batch.sent.size();
  std::vector<RecordStamp> drop;
  for (size_t i = 0; i < batch.sent.size(); ++i) {
    const RecordStamp& r = batch.sent[i];
    if (refused[i]) continue;
    // Keep a key that has become ours again meanwhile (the receiver left and handed it back).
    if (!batch.for_leave && ctx_.ring.Owns(r.key_id)) continue;
    drop.push_back(r);
  }
  auto erased = ctx_.records.EraseIfUnchanged(drop, /*tombstones_only=*/false);
  if (!erased.ok()) {
    ctx_.Log(LogLevel::kError, "cannot drop handed-over keys: " + erased.status().message());
  }
  return answer.refused();
}

void HandOver::Finish(const Batch& batch, bool ok) {
  if (ok && !batch.for_leave) {
    refused_left_.reset();
    if (batch.refused > 0) {
      refused_left_ = RefusedLeft{batch.to, batch.refused, ctx_.now.mono_ms + kRefusedRetryMs};
    }
  }
  ctx_.completions.Post(batch.parent, ok);
}

void HandOver::HandleTransfer(ReplyToken from, const wire::Envelope& request) {
  const auto& t = request.transfer();
  wire::Envelope reply;
  auto* r = reply.mutable_transfer_resp();
  r->set_code(wire::OK);
  if (!ctx_.ring.joined()) {
    // A leaving node has already gathered what it hands on: it must not take more.
    r->set_code(wire::SHUTTING_DOWN);
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  }
  std::string first_refusal;
  // The records of this batch that this node now holds (stored, or held already as they are:
  // a replica's copy on a leave), not refused nor kept out by a newer one: only their watch
  // histories are taken.
  std::unordered_map<std::string_view, const wire::Record*> stored;
  stored.reserve(static_cast<size_t>(t.records_size()));
  wire::Record kept;  // what StoreIfNewer kept instead (moved out when it equals the record)
  for (int i = 0; i < t.records_size(); ++i) {
    const wire::Record& rec = t.records(i);
    bool took = false;
    kept.Clear();
    Status s = ctx_.records.StoreIfNewer(Id::Sha1(rec.key()), rec, &took, &kept);
    const bool same = !took && kept.version() == rec.version() && kept.writer() == rec.writer();
    if (s.ok() && (took || same)) stored.emplace(rec.key(), &rec);
    if (s.code() == Status::Code::kInvalidArgument) {
      // Outside the limits: not kept, and named in the answer, so that the sender keeps it.
      r->set_refused(r->refused() + 1);
      r->add_refused_at(static_cast<uint32_t>(i));
      if (first_refusal.empty()) first_refusal = s.message();
      continue;
    }
    if (!s.ok()) {
      r->set_code(wire::UNAVAILABLE);
      ctx_.Log(LogLevel::kError, "cannot store handed-over keys: " + s.message());
      break;
    }
  }
  if (r->code() == wire::OK && r->refused() > 0) {
    ctx_.Log(LogLevel::kWarn,
             "refused " + std::to_string(r->refused()) + " of " + std::to_string(t.records_size()) +
                 " handed-over keys as outside this node's limits (the first: " + first_refusal +
                 "); the sender keeps them");
  }
  if (r->code() == wire::OK) {
    // Keys that watchers follow come with their recent changes: a watcher goes on here. Only
    // the history of a key this node now holds as handed over counts, once: where it kept a
    // newer record of its own, a watcher polling here starts from that record. The batch's
    // keys are looked up in a map: scanning the records for each history made one message
    // quadratic work on the loop (a member's batch of 150,000 records and histories of other
    // keys stalled a node 87 s).
    const int histories = std::min(t.watch_histories_size(), t.records_size());
    for (int i = 0; i < histories; ++i) {
      const wire::WatchHistory& h = t.watch_histories(i);
      if (auto it = stored.find(h.key()); it != stored.end()) {
        ctx_.watches.Import(h, *it->second, ctx_.config.max_value_bytes, ctx_.now.mono_ms);
        stored.erase(it);
      }
    }
    // Who the sender counts missing may hold stale copies of these records. Only our
    // neighbours hand records over (the successor on our join, the predecessor on its leave);
    // at most kMaxHandedOverMissing are read, more count as the sender's overflow.
    auto sender = NodeRef::FromWire(t.from());
    const bool neighbour = sender && (*sender == ctx_.ring.successor() ||
                                      (ctx_.ring.predecessor && *sender == *ctx_.ring.predecessor));
    if (missing_ != nullptr && neighbour && (t.missing_size() > 0 || t.missing_overflow_ms() > 0)) {
      MissingList list;
      list.overflow_ms_left = t.missing_overflow_ms();
      if (t.missing_size() > kMaxHandedOverMissing) list.overflow_ms_left = UINT64_MAX;
      for (int i = 0; i < std::min(t.missing_size(), kMaxHandedOverMissing); ++i) {
        auto m = NodeRef::FromWire(t.missing(i).node());
        if (m && !m->SameProcess(ctx_.self())) {
          list.members.push_back(MissingMember{std::move(*m), t.missing(i).missing_for_ms()});
        }
      }
      missing_->NoteHandedOver(list);
    }
    ctx_.counters.keys_received += static_cast<uint64_t>(t.records_size());
    if (t.records_size() > 0) {
      ctx_.Log(LogLevel::kInfo,
               "received " + std::to_string(t.records_size()) + " keys from " + t.from().addr());
    }
    // Our range comes from our successor; a hand-over from anyone else (a leaving
    // predecessor) does not end the wait.
    if (t.last() && sender && *sender == ctx_.ring.successor()) ctx_.ring.awaiting_transfer = false;
  }
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

}  // namespace chord
