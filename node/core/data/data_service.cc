#include "node/core/data/data_service.h"

#include <algorithm>
#include <utility>

#include "node/core/admission.h"
#include "node/core/data/write_conditions.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// NOT_OWNER hints a data operation follows directly before it looks the owner up again.
constexpr int kMaxHintsFollowed = 4;
// Bound on the nodes suspected at once.
constexpr size_t kMaxSuspects = 256;

// A read that needs several replicas to answer: only the owner can run it (the copies read
// without the owner answer as consistency one), so it waits for the owner or its successor.
using msg::ReadsSeveral;

}  // namespace

void DataService::HandleRequest(ReplyToken from, wire::Envelope&& request) {
  // A write served at once (OwnerService::HandleDirect) hands its key to the record it
  // stores: `key` is not to be used after that call.
  const std::string& key = msg::DataKey(request);
  std::string problem = KeyProblem(key);
  if (problem.empty() && request.has_put()) {
    problem = ValueProblem(request.put().value().size(), ctx_.config.max_value_bytes);
  }
  if (problem.empty()) problem = ConditionProblem(request);
  if (!problem.empty()) {
    wire::DataResponse bad;
    bad.set_code(wire::INVALID);
    bad.set_error(problem);
    return ctx_.out.Reply(from, request.request_id(), msg::Data(std::move(bad)));
  }
  const Id key_id = Id::Sha1(key);
  // A read of a key this node owns and holds needs neither a lookup nor a retry: it is served
  // as a direct request is. One this node holds no record of goes on as a DataOp: the replicas
  // decide, and while none answers it is tried again.
  if (request.has_get() && OwnedHere(key_id) &&
      owner_.HandleDirect(from, request, key_id, /*decline_miss=*/true)) {
    return;
  }
  // A write of a key this node owns on a ring without copies (R = 1) is likewise served as a
  // direct write is: the owner versions it above the record it replaces, in the same step as it
  // stores it, so nothing can outrank it and there is nothing to retry. Like an owned get it is
  // charged to the owner's budget, not the coordinator's (a node busy coordinating does not
  // shut out its own range). With copies a write stays a DataOp: a replica may hold a newer
  // record, and then the write is stamped again and retried (OnAnswer). The version and writer
  // are this node's to give, never the client's.
  if (!request.has_get() && !replication_.policy().replicated() && OwnedHere(key_id)) {
    if (CarriesCoordinatorFields(request)) request = ClientRequest(std::move(request));
    (void)owner_.HandleDirect(from, request, key_id);  // never declined: no decline_miss
    return;
  }
  if (ctx_.coordinated().Full()) {
    return ctx_.out.Reply(from, request.request_id(), msg::Data(ctx_.Shed(ctx_.coordinated())));
  }
  const uint64_t id = next_id_++;
  DataOp& op = ops_[id];
  op.from = from;
  op.held_bytes = RequestBudget::CostOf(request);
  ctx_.coordinated().Charge(op.held_bytes);
  op.request = msg::AsDirect(std::move(request));  // moved: a value can be 1 MiB
  op.key_id = key_id;
  op.deadline_ms = ctx_.now.mono_ms + ctx_.config.data_deadline_ms;
  op.backoff_ms = ctx_.config.data_retry_ms;
  Stamp(op);
  Attempt(id);
}

void DataService::Stamp(DataOp& op) {
  if (op.request.has_get()) return;
  const uint64_t version = ctx_.NextVersion();
  const auto& writer = ctx_.self().id.bytes();
  const auto stamp = [&](auto* body) {
    body->set_version(version);
    body->set_writer(reinterpret_cast<const char*>(writer.data()), writer.size());
  };
  if (op.request.has_put()) stamp(op.request.mutable_put());
  if (op.request.has_del()) stamp(op.request.mutable_del());
}

bool DataService::OwnedHere(const Id& key_id) const {
  const RingState& ring = ctx_.ring;
  if (!ring.joined() || ring.awaiting_transfer) return false;
  // Without a predecessor Owns falls back on where the range last started, which the lookup's
  // walk of the successors may know better.
  const bool start_known = ring.successors.empty() ||
                           (ring.predecessor.has_value() && !(*ring.predecessor == ring.self));
  return start_known && ring.Owns(key_id);
}

bool DataService::Suspected(const NodeRef& n) const {
  auto it = suspects_.find(n.id);
  return it != suspects_.end() && it->second > ctx_.now.mono_ms;
}

void DataService::Suspect(const NodeRef& n) {
  if (suspects_.size() >= kMaxSuspects) {
    for (auto it = suspects_.begin(); it != suspects_.end();) {
      it = it->second <= ctx_.now.mono_ms ? suspects_.erase(it) : std::next(it);
    }
    if (suspects_.size() >= kMaxSuspects) return;
  }
  suspects_[n.id] = ctx_.now.mono_ms + ctx_.config.suspect_ms;
}

void DataService::Attempt(uint64_t id) {
  const RingState& ring = ctx_.ring;
  if (!ring.joined()) {
    return Retry(id, ring.state == NodeState::kJoining ? "this node is still joining the ring"
                                                       : "this node is leaving the ring");
  }
  DataOp& op = ops_[id];
  ++op.attempts;
  if (op.hint) {
    // The last node asked named the owner: go there directly.
    const NodeRef target = *op.hint;
    op.hint.reset();
    return SendTo(id, target);
  }
  if (OwnedHere(op.key_id)) {
    // A lookup would end here, in no hops.
    op.hops = 0;
    op.suspect.reset();
    op.owner_successors.clear();
    return SendTo(id, ctx_.self());
  }
  lookups_.Start(op.key_id, /*verify_owner=*/false, Ref(kLookup, id));
}

void DataService::OnLookupDone(OpRef ref, const LookupOutcome& outcome) {
  auto it = ops_.find(ref.id);
  if (it == ops_.end()) return;
  if (!outcome.result.ok()) return Retry(ref.id, outcome.result.status().message());
  DataOp& op = it->second;
  op.hops = outcome.result->hops;
  const NodeRef& owner = outcome.result->owner;
  const std::vector<NodeRef>& after = outcome.result->successors;
  if (Suspected(owner) && op.request.has_get() && replication_.policy().replicated() &&
      !ReadsSeveral(op.request)) {
    // The owner did not answer a moment ago: read its copies on the next holders at once.
    op.owner = owner;
    return replication_.reads().ReadFallback(op.request.get().key(),
                                             replication_.policy().HoldersAfter(owner, after),
                                             Ref(kReplicas, ref.id));
  }
  // The owner, or, while it is suspected, the first of its successors that is not: the node
  // that takes its range over.
  std::vector<NodeRef> candidates{owner};
  candidates.insert(candidates.end(), after.begin(), after.end());
  auto target = std::find_if(candidates.begin(), candidates.end(),
                             [&](const NodeRef& n) { return !Suspected(n); });
  if (target == candidates.end()) {
    return Retry(ref.id, "the key's owner and the nodes after it did not answer");
  }
  op.suspect = target == candidates.begin() ? std::nullopt : std::optional<Id>((target - 1)->id);
  op.owner_successors.assign(target + 1, candidates.end());
  SendTo(ref.id, *target);
}

void DataService::SendTo(uint64_t id, const NodeRef& owner) {
  DataOp& op = ops_[id];
  op.owner = owner;
  // The node after a suspected owner is told, so that it checks its predecessor now.
  const auto mark = [&op](auto* body) {
    if (!op.suspect) return body->clear_suspect();
    const auto& b = op.suspect->bytes();
    body->set_suspect(reinterpret_cast<const char*>(b.data()), b.size());
  };
  if (op.request.has_put()) mark(op.request.mutable_put());
  if (op.request.has_get()) mark(op.request.mutable_get());
  if (op.request.has_del()) mark(op.request.mutable_del());
  if (owner == ctx_.self()) {
    if (op.suspect) membership_.Suspect(*op.suspect);
    return owner_.Serve(op.request, Ref(kLocal, id), op.key_id);
  }
  // A write waits for its replicas (in parallel, each up to one RPC timeout), then for the
  // hint holders standing in for the silent ones (one more): three leave a margin; a
  // conditional write may first read the replicas (one more). A read at quorum or all waits
  // for the replicas' answers (one more).
  const bool several = ReadsSeveral(op.request);
  const uint64_t timeout = ConditionOf(op.request).any() ? 4 * ctx_.config.rpc_timeout_ms
                           : !op.request.has_get()       ? 3 * ctx_.config.rpc_timeout_ms
                           : several                     ? 2 * ctx_.config.rpc_timeout_ms
                                                         : ctx_.config.rpc_timeout_ms;
  ctx_.out.Send(owner, op.request, timeout, Ref(kForward, id));
}

void DataService::OnRpc(OpRef ref, const wire::Envelope* response) {
  if (ops_.count(ref.id) == 0 || ref.step != kForward) return;
  OnForwarded(ref.id, response);
}

void DataService::OnForwarded(uint64_t id, const wire::Envelope* response) {
  DataOp& op = ops_[id];
  const NodeRef owner = op.owner;
  if (response == nullptr) {
    op.unanswered = true;
    ctx_.ring.DropFinger(owner);
    Suspect(owner);
    if (op.request.has_get() && replication_.policy().replicated() &&
        !op.owner_successors.empty() && !ReadsSeveral(op.request)) {
      // Read the copies on the next members of the replica set instead.
      const std::vector<NodeRef> holders =
          replication_.policy().HoldersAfter(owner, op.owner_successors);
      op.owner_successors.clear();
      return replication_.reads().ReadFallback(op.request.get().key(), holders, Ref(kReplicas, id));
    }
    return Retry(id, "the key's owner " + owner.addr + " did not answer");
  }
  suspects_.erase(owner.id);  // it answers
  if (!response->has_data_resp()) {
    return Retry(id, "the key's owner " + owner.addr + " sent an unexpected answer");
  }
  // The answer relayed names the node that gave it, the one it was forwarded to (an answer a
  // node gives itself names nobody: its requester knows whom it asked).
  wire::DataResponse answer(response->data_resp());
  owner.ToWire(answer.mutable_owner());
  OnAnswer(id, std::move(answer));
}

void DataService::OnDataDone(OpRef ref, wire::DataResponse&& response) {
  if (ops_.count(ref.id) == 0) return;
  // A read of the copies that found none to answer, or no record: try again.
  if (ref.step == kReplicas && response.code() == wire::UNAVAILABLE) {
    return Retry(ref.id, response.error());
  }
  OnAnswer(ref.id, std::move(response));
}

void DataService::OnAnswer(uint64_t id, wire::DataResponse&& response) {
  DataOp& op = ops_[id];
  // A conditional write that a newer write outranked (not expected: see SupersededConditional).
  const bool conditional_superseded =
      response.code() == wire::OK && response.superseded_by() != 0 && ConditionOf(op.request).any();
  if ((response.code() == wire::CONFLICT || conditional_superseded) && op.unanswered) {
    // An earlier attempt got no answer and may have been applied: its own write can be what
    // the condition now fails against. "Not applied" would invite the client to apply it twice.
    response.Clear();
    response.set_code(wire::UNAVAILABLE);
    response.set_error(
        "the conditional write may or may not have been applied (an attempt got "
        "no answer); read the key to find out before retrying");
    return Finish(id, std::move(response));
  }
  if (conditional_superseded) return Finish(id, SupersededConditional(response.superseded_by()));
  if (response.code() == wire::OK && response.superseded_by() != 0) {
    // Another write, newer than this one, got there first. The client still waits for this
    // one, which it issued to take effect: it goes again, above the newer version.
    if (++op.restamps >= ctx_.config.write_attempts) {
      response.Clear();
      response.set_code(wire::UNAVAILABLE);
      response.set_error(
          "newer writes of the key kept arriving while this one was under way; retry");
      return Finish(id, std::move(response));
    }
    // A version from the future (a peer's clock far ahead, or a forgery) is not followed.
    if (ctx_.records.VersionPlausible(response.superseded_by())) {
      ctx_.versions.Observe(response.superseded_by());
    }
    Stamp(op);
    op.hint = op.owner;
    return Attempt(id);
  }
  if (response.code() == wire::UNAVAILABLE && op.request.has_get() && !ReadsSeveral(op.request)) {
    // The owner could not answer a read at `one` (it holds no copy and none of its replicas
    // answered, or its store failed): reads are idempotent, so it is tried again until the
    // deadline, by when the ring may have noticed a crash or handed the key over. (A store
    // failure at an owner serving its own client's get directly is answered at once.)
    return Retry(id, response.error());
  }
  if (response.code() == wire::UNAVAILABLE && response.not_applied() && !op.request.has_get()) {
    // A conditional write its owner could not check (a replica did not answer its read before
    // the decision): that attempt stored nothing, so it is tried again like such a
    // read. If every earlier attempt was answered, nothing carries its stamp anywhere: it is
    // stamped afresh, so that a time to live runs from the attempt that is applied. If one
    // went unanswered it may have been applied: the stamp is kept (the owner knows its own
    // retry by it), and the client must not be told that nothing was written.
    if (!op.unanswered) {
      Stamp(op);
      return Retry(id, response.error());
    }
    return Retry(id,
                 "the conditional write may or may not have been applied (an attempt got no "
                 "answer; then: " +
                     response.error() + "); read the key to find out before retrying");
  }
  if (response.code() != wire::NOT_OWNER && response.code() != wire::SHUTTING_DOWN) {
    return Finish(id, std::move(response));
  }
  // NOT_OWNER usually names the right node (the asked node's predecessor or successor): a
  // few such hints are followed at once, then it is back to lookups with back-off. A hint
  // naming a node that did not answer is not followed.
  if (response.code() == wire::NOT_OWNER && response.has_hint() &&
      op.hints_followed < kMaxHintsFollowed) {
    if (auto hint = NodeRef::FromWire(response.hint()); hint && !Suspected(*hint)) {
      ++op.hints_followed;
      op.hint = *hint;
      op.suspect.reset();
      op.owner_successors.clear();  // they were the previous candidate's
      return Attempt(id);
    }
  }
  Retry(id, response.error());
}

wire::DataResponse DataService::SupersededConditional(uint64_t newer) {
  // The owner checked the condition and versions a write that passes it above the record it
  // checked, so this is not expected; if it happens, the write's outcome is not known to have
  // been decided on the newest record. Restamping and retrying would turn the compare-and-set
  // into a blind write: it is answered as a conflict instead.
  ++ctx_.counters.cas_conflicts;
  wire::DataResponse resp;
  resp.set_code(wire::CONFLICT);
  resp.set_version(newer);
  resp.set_error("a newer write (version " + std::to_string(newer) +
                 ") reached the key first; read it again and retry");
  return resp;
}

void DataService::Retry(uint64_t id, const std::string& why) {
  DataOp& op = ops_[id];
  const uint64_t now = ctx_.now.mono_ms;
  if (now + op.backoff_ms >= op.deadline_ms || ctx_.ring.state == NodeState::kLeft) {
    wire::DataResponse resp;
    resp.set_code(wire::UNAVAILABLE);
    resp.set_error("the ring could not complete the request within " +
                   std::to_string(ctx_.config.data_deadline_ms) + " ms (last problem: " + why +
                   "); check the ring with 'chordctl ring' and retry");
    return Finish(id, std::move(resp));
  }
  ctx_.timers.Arm(Ref(kRetry, id), now + op.backoff_ms);
  op.backoff_ms = std::min<uint64_t>(op.backoff_ms * 2, 1000);
}

void DataService::OnTimer(OpRef ref) {
  if (ref.step == kRetry && ops_.count(ref.id) != 0) Attempt(ref.id);
}

void DataService::Finish(uint64_t id, wire::DataResponse&& response) {
  DataOp& op = ops_[id];
  response.set_hops(static_cast<uint32_t>(op.hops));
  ctx_.out.Reply(op.from, op.request.request_id(), msg::Data(std::move(response)));
  ctx_.coordinated().Release(op.held_bytes);
  ops_.erase(id);
}

}  // namespace chord
