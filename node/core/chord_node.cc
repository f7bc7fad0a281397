#include "node/core/chord_node.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "node/core/admission.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// The steps of operations the ChordNode itself owns (OpKind::kNode).
enum NodeStep : uint8_t { kRound = 1, kJoined = 2, kLeft = 3 };
// Bound on the completions and loopback messages one input serves before it hands back to
// the driver (and asks for a Tick right away).
constexpr int kMaxSettleSteps = 100'000;

}  // namespace

ChordNode::ChordNode(Store* store, NodeConfig config, NodeRef self, uint64_t seed)
    : ChordNode(std::make_unique<LedgerStore>(store), std::move(config), std::move(self), seed) {}

ChordNode::ChordNode(std::unique_ptr<LedgerStore> own, NodeConfig config, NodeRef self,
                     uint64_t seed)
    : ChordNode(own.get(), std::move(config), std::move(self), seed) {
  own_ledger_ = std::move(own);
}

ChordNode::ChordNode(LedgerStore* store, NodeConfig config, NodeRef self, uint64_t seed,
                     std::vector<NodeRef> process_vnodes)
    : ctx_(config, std::move(self), store, seed),
      lookups_(ctx_),
      membership_(ctx_, lookups_),
      hand_over_(ctx_),
      leaver_(ctx_, hand_over_),
      replication_(ctx_, hand_over_, lookups_, membership_),
      owner_(ctx_, replication_),
      data_(ctx_, lookups_, membership_, owner_, replication_),
      watch_(ctx_),
      status_(ctx_, replication_.policy().replicas(), membership_) {
  membership_.set_listener(&replication_.policy());
  hand_over_.set_missing_members(&replication_.purge());
  RingState& ring = ctx_.ring;
  if (!process_vnodes.empty()) ring.process_vnodes = std::move(process_vnodes);
  if (std::find(ring.process_vnodes.begin(), ring.process_vnodes.end(), ring.self) ==
      ring.process_vnodes.end()) {
    ring.process_vnodes.push_back(ring.self);
  }
  // Versions continue above everything already stored (a restart on the same data). Of the
  // stored expiries, this position indexes those of the keys it accounts for: the process
  // holds a key at its first position clockwise from it, whoever else holds it.
  Status s = ctx_.records.ObserveAllVersions(KeyRange{ring.AttributedRangeStart(), ring.self.id});
  if (!s.ok()) ctx_.Log(LogLevel::kError, "cannot read the stored records: " + s.message());
}

size_t ChordNode::OperationsInFlight() const {
  return lookups_.in_flight() + data_.in_flight() + owner_.in_flight() +
         replication_.writes().in_flight() + replication_.quorum_reads().in_flight() +
         ctx_.out.pending();
}

// --- inputs ------------------------------------------------------------------------------

void ChordNode::Start(const Clock& now, const std::vector<std::string>& bootstraps) {
  Begin(now);
  membership_.Start(bootstraps, OpRef{OpKind::kNode, kJoined, 0, 0});
  Settle();
}

void ChordNode::Leave(const Clock& now) {
  Begin(now);
  ctx_.timers.Cancel(OpRef{OpKind::kNode, kRound, 0, 0});
  leaver_.Start(OpRef{OpKind::kNode, kLeft, 0, 0});
  Settle();
}

void ChordNode::OnRequest(const Clock& now, ReplyToken from, wire::Envelope&& request,
                          const Sender& sender) {
  Begin(now);
  const uint64_t deadline = request.deadline_unix_ms();
  if (std::string problem = AdmissionProblem(sender, request); !problem.empty()) {
    ++ctx_.counters.requests_refused;
    ctx_.out.Reply(from, request.request_id(), msg::Error(wire::FORBIDDEN, std::move(problem)));
  } else if (deadline != 0 && now.wall_ms > deadline + ctx_.config.max_clock_skew_ms) {
    // Its sender gave up on it long ago: acting on it now could only do harm.
    ++ctx_.counters.requests_expired;
    ctx_.out.Reply(from, request.request_id(),
                   msg::Error(wire::UNAVAILABLE,
                              "the request arrived " + std::to_string(now.wall_ms - deadline) +
                                  " ms after its deadline and was not served; if this repeats, "
                                  "check that the nodes' clocks agree"));
  } else if (IsClient(sender) && CarriesCoordinatorFields(request)) {
    Dispatch(from, ClientRequest(std::move(request)), sender);
  } else {
    Dispatch(from, std::move(request), sender);
  }
  Settle();
}

void ChordNode::OnResponse(const Clock& now, const wire::Envelope& response) {
  Begin(now);
  if (auto op = ctx_.out.Complete(response.request_id(), /*answered=*/true)) {
    DeliverRpc(*op, &response);
  }
  Settle();
}

void ChordNode::OnSendFailed(const Clock& now, uint64_t request_id) {
  Begin(now);
  if (auto op = ctx_.out.Complete(request_id, /*answered=*/false)) DeliverRpc(*op, nullptr);
  Settle();
}

void ChordNode::Tick(const Clock& now) {
  Begin(now);
  for (const OpRef& op : ctx_.out.TakeExpired()) DeliverRpc(op, nullptr);
  for (const OpRef& op : ctx_.timers.TakeDue(now.mono_ms)) OnTimer(op);
  Settle();
}

uint64_t ChordNode::StartLookup(const Clock& now, const Id& target, bool verify_owner) {
  Begin(now);
  const uint64_t handle = next_lookup_handle_++;
  lookups_.Start(target, verify_owner, OpRef{OpKind::kExternalLookup, 0, 0, handle});
  Settle();
  return handle;
}

void ChordNode::SetMaintenance(const Clock& now, bool enabled) {
  Begin(now);
  maintenance_ = enabled;
  if (!enabled) ctx_.timers.Cancel(OpRef{OpKind::kNode, kRound, 0, 0});
  if (enabled && !ctx_.timers.armed(OpRef{OpKind::kNode, kRound, 0, 0})) ScheduleRound();
}

void ChordNode::InstallRoutingState(const Clock& now, std::vector<NodeRef> successors,
                                    std::optional<NodeRef> predecessor,
                                    const std::vector<std::optional<NodeRef>>& fingers) {
  Begin(now);
  RingState& ring = ctx_.ring;
  ring.state = NodeState::kJoined;
  ring.successors = std::move(successors);
  if (static_cast<int>(ring.successors.size()) > ring.max_successors) {
    ring.successors.resize(static_cast<size_t>(ring.max_successors));
  }
  ring.predecessor = std::move(predecessor);
  for (int i = 0; i < Id::kBits; ++i) {
    ring.fingers[i] = i < static_cast<int>(fingers.size()) ? fingers[i] : std::nullopt;
  }
  if (!ring.successors.empty()) ring.fingers[0] = ring.successors.front();
  ScheduleRound();
}

// --- output ------------------------------------------------------------------------------

Ready ChordNode::TakeReady() {
  Ready ready = ctx_.out.TakeReady();
  ready.lookups = std::move(lookups_done_);
  lookups_done_.clear();
  ready.left = left_;
  left_ = false;
  std::optional<uint64_t> wake = ctx_.out.next_deadline();
  if (auto t = ctx_.timers.next(); t && (!wake || *t < *wake)) wake = t;
  if (unsettled_) wake = ctx_.now.mono_ms;
  ready.wake_at_ms = wake;
  return ready;
}

// --- inside ------------------------------------------------------------------------------

void ChordNode::Settle() {
  for (int i = 0; i < kMaxSettleSteps; ++i) {
    if (!ctx_.completions.empty()) {
      Deliver(ctx_.completions.Take());
    } else if (ctx_.out.has_loopback()) {
      Outbox::Loopback l = ctx_.out.TakeLoopback();
      if (!l.is_reply) {
        Dispatch(Outbox::kLoopbackToken, std::move(l.envelope), Sender{});
      } else if (auto op = ctx_.out.Complete(l.envelope.request_id(), /*answered=*/true)) {
        DeliverRpc(*op, &l.envelope);
      }
    } else {
      // Changes published by this step reach the watchers waiting for them.
      watch_.Wake();
      unsettled_ = false;
      return;
    }
  }
  unsettled_ = true;
}

void ChordNode::Dispatch(ReplyToken from, wire::Envelope&& request, const Sender& sender) {
  using B = wire::Envelope::BodyCase;
  switch (request.body_case()) {
    case B::kGetState:
      return membership_.HandleGetState(from, request);
    case B::kNotify:
      return membership_.HandleNotify(from, request);
    case B::kPing:
      return ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
    case B::kFindNextHop:
      return lookups_.HandleFindNextHop(from, request);
    case B::kStabilizeNow:
      return membership_.HandleStabilizeNow(from, request);
    case B::kTransfer:
      return hand_over_.HandleTransfer(from, request);
    case B::kLeave:
      // Admission has checked that a member speaks for itself: a member's notice is its own.
      return membership_.HandleLeave(from, request, sender.role == Sender::Role::kMember);
    case B::kMergeHint:
      return membership_.HandleMergeHint(from, request);
    case B::kPut:
    case B::kGet:
    case B::kDel:
      // A client's suspect was cleared on the way in (ClientRequest).
      if (auto suspect = Id::FromBytes(msg::Suspect(request))) membership_.Suspect(*suspect);
      if (msg::IsDirect(request)) {
        (void)owner_.HandleDirect(from, request);  // never declined: no decline_miss
        return;
      }
      return data_.HandleRequest(from, std::move(request));
    case B::kLookup:
      return lookups_.HandleLookup(from, request);
    case B::kStatus:
      return status_.HandleStatus(from, request);
    case B::kListKeys:
      return status_.HandleListKeys(from, request);
    case B::kReplicate:
      return replication_.server().HandleReplicate(from, request);
    case B::kSyncDigest:
      return replication_.server().HandleSyncDigest(from, request);
    case B::kSyncPull:
      return replication_.server().HandleSyncPull(from, request);
    case B::kPurge:
      return replication_.purge().HandlePurge(from, request);
    case B::kReplicaSet:
      return replication_.server().HandleReplicaSet(from, request);
    case B::kWatch:
      return watch_.HandleRequest(from, request);
    default:
      return ctx_.out.Reply(
          from, request.request_id(),
          msg::Error(wire::INVALID,
                     "this message type is not a request chord-node accepts; check the client "
                     "version"));
  }
}

void ChordNode::DeliverRpc(OpRef op, const wire::Envelope* response) {
  switch (op.kind) {
    case OpKind::kLookup:
      return lookups_.OnRpc(op, response);
    case OpKind::kJoin:
    case OpKind::kStabilize:
    case OpKind::kCheckPredecessor:
    case OpKind::kRectify:
    case OpKind::kMerge:
      return membership_.OnRpc(op, response);
    case OpKind::kHandOver:
      return hand_over_.OnRpc(op, response);
    case OpKind::kLeave:
      return leaver_.OnRpc(op, response);
    case OpKind::kDataOp:
      return data_.OnRpc(op, response);
    case OpKind::kWrite:
    case OpKind::kReplicaRead:
    case OpKind::kRepair:
    case OpKind::kAntiEntropy:
    case OpKind::kPurge:
    case OpKind::kCleanup:
    case OpKind::kQuorumRead:
    case OpKind::kHint:
      return replication_.OnRpc(op, response);
    default:
      return;  // fire-and-forget
  }
}

void ChordNode::Deliver(Completion c) {
  if (auto* lookup = std::get_if<LookupOutcome>(&c.outcome)) {
    return DeliverLookup(c.to, std::move(*lookup));
  }
  if (auto* data = std::get_if<wire::DataResponse>(&c.outcome)) {
    return DeliverData(c.to, std::move(*data));
  }
  DeliverDone(c.to, std::get<bool>(c.outcome));
}

void ChordNode::DeliverLookup(OpRef op, LookupOutcome outcome) {
  switch (op.kind) {
    case OpKind::kExternalLookup:
      lookups_done_.push_back(Ready::Lookup{op.id, std::move(outcome.result)});
      return;
    case OpKind::kClientLookup:
      return lookups_.OnClientLookupDone(op, std::move(outcome));
    case OpKind::kJoin:
    case OpKind::kFixFingers:
      return membership_.OnLookupDone(op, outcome);
    case OpKind::kDataOp:
      return data_.OnLookupDone(op, outcome);
    case OpKind::kCleanup:
      return replication_.OnLookupDone(op, outcome);
    default:
      return;
  }
}

void ChordNode::DeliverData(OpRef op, wire::DataResponse&& response) {
  if (op.kind == OpKind::kDataOp) return data_.OnDataDone(op, std::move(response));
  if (op.kind == OpKind::kDirect) return owner_.OnDataDone(op, std::move(response));
  if (op.kind == OpKind::kConditionRead) return owner_.OnConditionRead(op, std::move(response));
}

void ChordNode::DeliverDone(OpRef op, bool ok) {
  if (op.kind == OpKind::kLeave) return leaver_.OnHandOverDone(op, ok);
  if (op.kind != OpKind::kNode) return;
  if (op.step == kJoined) return ScheduleRound();
  if (op.step == kLeft) left_ = true;
}

void ChordNode::OnTimer(OpRef op) {
  switch (op.kind) {
    case OpKind::kNode:
      if (op.step == kRound) Round();
      return;
    case OpKind::kJoin:
      return membership_.OnTimer(op);
    case OpKind::kDataOp:
      return data_.OnTimer(op);
    case OpKind::kWatch:
      return watch_.OnTimer(op);
    case OpKind::kLeave:
      return leaver_.OnTimer(op);
    default:
      return;
  }
}

void ChordNode::Round() {
  if (!ctx_.ring.joined()) return;
  membership_.Round();
  replication_.Round();
  watch_.Round();
  ScheduleRound();
}

void ChordNode::ScheduleRound() {
  const OpRef round{OpKind::kNode, kRound, 0, 0};
  ctx_.timers.Cancel(round);
  if (!maintenance_ || !ctx_.ring.joined()) return;
  // Jitter keeps nodes started together from stabilizing in lock step.
  const NodeConfig& c = ctx_.config;
  const uint64_t base = std::max<uint64_t>(c.stabilize_ms, 1);
  const double jitter = std::clamp(c.stabilize_jitter, 0.0, 1.0);
  const auto low = static_cast<uint64_t>(static_cast<double>(base) * (1.0 - jitter));
  const auto span = static_cast<uint64_t>(static_cast<double>(base) * 2.0 * jitter);
  const uint64_t delay = std::max<uint64_t>(1, low + ctx_.rng() % (span + 1));
  ctx_.timers.Arm(round, ctx_.now.mono_ms + delay);
}

}  // namespace chord
