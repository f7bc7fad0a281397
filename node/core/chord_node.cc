#include "node/core/chord_node.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "node/core/data_op.h"
#include "node/core/record_order.h"

namespace chord {
namespace {

// Request ids with this bit set never leave the process: they are calls a node makes to
// itself, answered through the environment's timer so that no callback runs re-entrantly.
constexpr ReplyToken kLocalToken = ~ReplyToken{0};
// Bound on the addresses a joining node remembers as further bootstraps.
constexpr size_t kMaxRemembered = 16;
// NOT_OWNER hints a data operation follows directly before it looks the owner up again.
constexpr int kMaxHintsFollowed = 4;

std::string Describe(const NodeRef& n) { return n.id.ShortHex() + "@" + n.addr; }

}  // namespace

struct ChordNode::LookupState {
  Id target;
  bool verify_owner = false;
  LookupCallback done;
  // Candidate lists from the hops so far; the back list is the most recent. A candidate that
  // times out is skipped and the next one of the same list is tried, then earlier lists.
  std::vector<std::vector<NodeRef>> stack;
  std::unordered_set<Id, IdHash> tried;
  std::unordered_set<Id, IdHash> dead;     // owner candidates that did not answer
  std::unordered_set<Id, IdHash> retried;  // hops asked a second time after a timeout
  NodeRef predecessor;                     // the node just before the owner, once known
  std::vector<std::string> answered;       // addresses of the hops that answered
  int steps = 0;
  int hops = 0;
  int timeouts = 0;
};

ChordNode::ChordNode(Environment* env, Store* store, NodeConfig config, NodeRef self)
    : env_(env), store_(store), config_(config), self_(std::move(self)) {
  if (config_.successors < 1) config_.successors = 1;
  if (config_.replicas < 1) config_.replicas = 1;
  next_request_id_ = config_.request_id_base + 1;
  process_vnodes_ = {self_};
  // Versions continue above everything already stored (a restart on the same data).
  Status s = store_->Scan(Id(), Id(), [this](const Id&, const wire::Record& rec) {
    ObserveVersion(rec.version());
    return true;
  });
  if (!s.ok()) Log(LogLevel::kError, "cannot read the stored records: " + s.message());
}

void ChordNode::SetProcessVnodes(std::vector<NodeRef> vnodes) {
  process_vnodes_ = std::move(vnodes);
  if (std::find(process_vnodes_.begin(), process_vnodes_.end(), self_) == process_vnodes_.end()) {
    process_vnodes_.push_back(self_);
  }
}

ChordNode::~ChordNode() {
  *alive_ = false;
  for (auto& [id, call] : pending_) env_->Cancel(call.timer);
  if (tick_timer_ != 0) env_->Cancel(tick_timer_);
}

void ChordNode::Log(LogLevel level, const std::string& message) { env_->Log(level, message); }

// ---------------------------------------------------------------------------------------
// RPC plumbing

void ChordNode::Call(const NodeRef& to, wire::Envelope request, uint64_t timeout_ms,
                     ResponseFn on_done) {
  const uint64_t id = next_request_id_++;
  request.set_request_id(id);
  std::weak_ptr<bool> alive = alive_;
  PendingCall call;
  call.on_done = std::move(on_done);
  const auto* body = wire::Envelope::descriptor()->FindFieldByNumber(request.body_case());
  call.metrics = &metrics_.Rpc(body != nullptr ? std::string_view(body->name()) : "none");
  ++call.metrics->requests;
  call.sent_ms = env_->NowMs();
  call.timer = env_->Schedule(timeout_ms, [this, alive, id] {
    if (alive.expired()) return;
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    ++counters_.rpc_timeouts;
    FinishCall(id, nullptr);
  });
  pending_.emplace(id, std::move(call));
  if (to.addr == self_.addr) {
    // A call to ourselves (a one-node ring, a lookup passing through us): handled locally.
    env_->Schedule(0, [this, alive, request = std::move(request)] {
      if (alive.expired()) return;
      OnRequest(kLocalToken, request);
    });
    return;
  }
  env_->SendRequest(to.addr, request);
}

void ChordNode::Reply(ReplyToken to, uint64_t request_id, wire::Envelope reply) {
  reply.set_request_id(request_id);
  if (to == kLocalToken) {
    std::weak_ptr<bool> alive = alive_;
    env_->Schedule(0, [this, alive, reply = std::move(reply)] {
      if (alive.expired()) return;
      OnResponse(reply);
    });
    return;
  }
  env_->SendReply(to, reply);
}

void ChordNode::FinishCall(uint64_t request_id, const wire::Envelope* response) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return;  // late answer to a call that already timed out
  PendingCall call = std::move(it->second);
  pending_.erase(it);
  env_->Cancel(call.timer);
  if (call.metrics != nullptr && response == nullptr) {
    ++call.metrics->timeouts;
  } else if (call.metrics != nullptr) {
    const uint64_t now_ms = env_->NowMs();
    const uint64_t elapsed_ms = now_ms > call.sent_ms ? now_ms - call.sent_ms : 0;
    call.metrics->latency_seconds.Observe(static_cast<double>(elapsed_ms) / 1000.0);
  }
  call.on_done(response);
}

void ChordNode::OnResponse(const wire::Envelope& response) {
  FinishCall(response.request_id(), &response);
}

void ChordNode::OnSendFailed(uint64_t request_id) {
  if (pending_.count(request_id) != 0) ++counters_.rpc_timeouts;
  FinishCall(request_id, nullptr);
}

void ChordNode::OnRequest(ReplyToken from, const wire::Envelope& req) {
  using B = wire::Envelope::BodyCase;
  switch (req.body_case()) {
    case B::kGetState:
      return HandleGetState(from, req);
    case B::kNotify:
      return HandleNotify(from, req);
    case B::kPing: {
      wire::Envelope reply;
      reply.mutable_ping_resp();
      return Reply(from, req.request_id(), std::move(reply));
    }
    case B::kFindNextHop:
      return HandleFindNextHop(from, req);
    case B::kStabilizeNow: {
      wire::Envelope reply;
      reply.mutable_stabilize_now_resp();
      Reply(from, req.request_id(), std::move(reply));
      if (stabilizing_) {
        stabilize_again_ = true;
      } else {
        Stabilize();
      }
      return;
    }
    case B::kTransfer:
      return HandleTransfer(from, req);
    case B::kLeave:
      return HandleLeave(from, req);
    case B::kPut:
    case B::kGet:
    case B::kDel: {
      const bool direct = req.has_put()   ? req.put().direct()
                          : req.has_get() ? req.get().direct()
                                          : req.del().direct();
      if (direct) {
        const uint64_t request_id = req.request_id();
        std::weak_ptr<bool> alive = alive_;
        ApplyDirect(req, [this, alive, from, request_id](wire::DataResponse d) {
          if (alive.expired()) return;
          wire::Envelope reply;
          *reply.mutable_data_resp() = std::move(d);
          Reply(from, request_id, std::move(reply));
        });
        return;
      }
      return StartDataOp(from, req);
    }
    case B::kLookup:
      return HandleLookup(from, req);
    case B::kStatus:
      return HandleStatus(from, req);
    case B::kListKeys:
      return HandleListKeys(from, req);
    case B::kReplicate:
      return HandleReplicate(from, req);
    case B::kSyncDigest:
      return HandleSyncDigest(from, req);
    case B::kSyncPull:
      return HandleSyncPull(from, req);
    case B::kPurge:
      return HandlePurge(from, req);
    case B::kReplicaSet:
      return HandleReplicaSet(from, req);
    default: {
      wire::Envelope reply;
      reply.mutable_error()->set_code(wire::INVALID);
      reply.mutable_error()->set_error(
          "this message type is not a request chord-node accepts; check the client version");
      return Reply(from, req.request_id(), std::move(reply));
    }
  }
}

// ---------------------------------------------------------------------------------------
// Joining and leaving

void ChordNode::Start(const std::string& bootstrap_addr) {
  std::vector<std::string> bootstraps;
  if (!bootstrap_addr.empty()) bootstraps.push_back(bootstrap_addr);
  Start(bootstraps);
}

void ChordNode::Start(const std::vector<std::string>& bootstrap_addrs) {
  if (state_ != State::kIdle) return;
  for (const std::string& a : bootstrap_addrs) {
    if (!a.empty() && a != self_.addr) bootstraps_.push_back(a);
  }
  if (bootstraps_.empty()) {
    state_ = State::kJoined;
    Log(LogLevel::kInfo, "created a new ring as " + Describe(self_));
    ScheduleTick();
    return;
  }
  state_ = State::kJoining;
  Join();
}

void ChordNode::Join() {
  if (state_ != State::kJoining) return;
  // Find p with between(p, me, head(p.succ)), then ask p itself for its successor list.
  const std::string bootstrap_addr = bootstraps_[join_attempts_ % bootstraps_.size()];
  auto st = std::make_shared<LookupState>();
  st->target = self_.id;
  st->stack.push_back({NodeRef{Id::Sha1(bootstrap_addr), bootstrap_addr}});
  std::weak_ptr<bool> alive = alive_;
  // A plain pointer: the callback lives inside *st, so capturing st itself would be a cycle.
  LookupState* raw = st.get();
  st->done = [this, alive, bootstrap_addr, raw](Result<LookupResult> r) {
    if (alive.expired() || state_ != State::kJoining) return;
    // Every member that answered is a further way into the ring, should the bootstraps
    // given at start leave before the join completes.
    for (const std::string& a : raw->answered) RememberBootstrap(a);
    if (r.ok()) {
      RememberBootstrap(r->owner.addr);
      for (const NodeRef& n : r->successors) RememberBootstrap(n.addr);
    }
    if (!r.ok()) {
      RetryJoin(bootstrap_addr, r.status().message());
      return;
    }
    if (r->predecessor == self_) {
      RetryJoin(bootstrap_addr, "the ring still lists an earlier life of this node");
      return;
    }
    JoinThrough(r->predecessor, bootstrap_addr);
  };
  LookupStep(st);
}

void ChordNode::RememberBootstrap(const std::string& addr) {
  if (addr == self_.addr || bootstraps_.size() >= kMaxRemembered) return;
  if (std::find(bootstraps_.begin(), bootstraps_.end(), addr) == bootstraps_.end()) {
    bootstraps_.push_back(addr);
  }
}

void ChordNode::RetryJoin(const std::string& bootstrap_addr, const std::string& why) {
  // The next attempt goes through the next bootstrap address given, if there are several.
  ++join_attempts_;
  Log(LogLevel::kWarn, "join through " + bootstrap_addr + " failed (" + why + "); retrying in " +
                           std::to_string(config_.join_retry_ms) + " ms");
  std::weak_ptr<bool> alive = alive_;
  env_->Schedule(config_.join_retry_ms, [this, alive] {
    if (!alive.expired()) Join();
  });
}

void ChordNode::JoinThrough(const NodeRef& p, const std::string& bootstrap_addr) {
  wire::Envelope req;
  req.mutable_get_state();
  std::weak_ptr<bool> alive = alive_;
  Call(p, std::move(req), config_.rpc_timeout_ms,
       [this, alive, p, bootstrap_addr](const wire::Envelope* resp) {
         if (alive.expired() || state_ != State::kJoining) return;
         if (resp == nullptr || !resp->has_get_state_resp() || !resp->get_state_resp().joined()) {
           RetryJoin(bootstrap_addr, "the predecessor-to-be " + p.addr + " did not answer");
           return;
         }
         // succ := p.succ, skipping an earlier life of ourselves at its head; p must still be
         // the node whose successor range holds our id.
         std::vector<NodeRef> candidates;
         for (const auto& info : resp->get_state_resp().successors()) {
           if (auto n = NodeRef::FromWire(info)) candidates.push_back(std::move(*n));
         }
         std::optional<NodeRef> head;
         if (!candidates.empty()) head = candidates.front();
         if (head && *head == self_) candidates.erase(candidates.begin());
         std::vector<NodeRef> mine = OrderedSuccessorList(candidates);
         RememberBootstrap(p.addr);
         for (const NodeRef& n : candidates) RememberBootstrap(n.addr);
         if (head && !(*head == self_) && !Id::InOpen(self_.id, p.id, head->id)) {
           RetryJoin(bootstrap_addr, "the ring changed around this node's position");
           return;
         }
         if (mine.empty()) mine.push_back(p);  // p was alone
         state_ = State::kJoined;
         awaiting_transfer_ = true;
         SetSuccessors(std::move(mine));
         predecessor_ = p;  // prdc := p; set directly: nothing of ours needs handing to p
         Log(LogLevel::kInfo, "joined the ring through " + bootstrap_addr + " as " +
                                  Describe(self_) + "; successor " + Describe(successor()) +
                                  ", predecessor " + Describe(p));
         // Tell the successor at once, so that it hands over our keys without waiting a period,
         // and ask the predecessor to stabilize now, so that it adopts us as its successor.
         Stabilize();
         wire::Envelope poke;
         poke.mutable_stabilize_now();
         Call(p, std::move(poke), config_.rpc_timeout_ms, [](const wire::Envelope*) {});
         ScheduleTick();
       });
}

void ChordNode::Leave(std::function<void()> done) {
  if (state_ == State::kLeaving || state_ == State::kLeft) return;
  const bool was_joined = state_ == State::kJoined;
  state_ = State::kLeaving;
  if (tick_timer_ != 0) env_->Cancel(tick_timer_);
  tick_timer_ = 0;
  if (!was_joined || successors_.empty()) {
    if (was_joined && store_->Count() > 0) {
      Log(LogLevel::kWarn,
          "leaving a ring of one: its " + std::to_string(store_->Count()) + " keys go with it");
    }
    state_ = State::kLeft;
    done();
    return;
  }
  Log(LogLevel::kInfo,
      "leaving: handing " + std::to_string(store_->Count()) + " keys to " + Describe(successor()));
  LeaveHandOff(std::move(done), static_cast<int>(successors_.size()));
}

void ChordNode::LeaveHandOff(std::function<void()> done, int attempts_left) {
  if (successors_.empty() || attempts_left <= 0) {
    Log(LogLevel::kError, "leaving without handing off " + std::to_string(store_->Count()) +
                              " keys: no successor accepted them");
    LeaveNotify(std::move(done));
    return;
  }
  const NodeRef to = successors_.front();
  std::weak_ptr<bool> alive = alive_;
  auto next = [this, to](std::function<void()> done, int attempts_left) {
    // That successor is gone: try the next one on the list.
    successors_.erase(std::remove(successors_.begin(), successors_.end(), to), successors_.end());
    LeaveHandOff(std::move(done), attempts_left - 1);
  };
  // A quick ping first, so that a dead successor costs one RPC timeout, not a transfer's.
  wire::Envelope ping;
  ping.mutable_ping();
  Call(to, std::move(ping), config_.rpc_timeout_ms,
       [this, alive, to, next, done = std::move(done),
        attempts_left](const wire::Envelope* resp) mutable {
         if (alive.expired()) return;
         if (resp == nullptr) {
           next(std::move(done), attempts_left);
           return;
         }
         SendTransferBatch(
             to, /*for_leave=*/true,
             [this, alive, next, done = std::move(done), attempts_left](bool ok) mutable {
               if (alive.expired()) return;
               if (ok) {
                 LeaveNotify(std::move(done));
                 return;
               }
               next(std::move(done), attempts_left);
             });
       });
}

void ChordNode::LeaveNotify(std::function<void()> done) {
  // Tell the successor and the predecessor; finish when both answered or timed out.
  std::vector<NodeRef> targets;
  if (!successors_.empty()) targets.push_back(successors_.front());
  if (predecessor_ && !(*predecessor_ == self_) &&
      std::find(targets.begin(), targets.end(), *predecessor_) == targets.end()) {
    targets.push_back(*predecessor_);
  }
  auto remaining = std::make_shared<int>(static_cast<int>(targets.size()));
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  if (targets.empty()) {
    state_ = State::kLeft;
    (*finish)();
    return;
  }
  for (const NodeRef& t : targets) {
    wire::Envelope req;
    auto* leave = req.mutable_leave();
    self_.ToWire(leave->mutable_node());
    if (predecessor_) predecessor_->ToWire(leave->mutable_predecessor());
    for (const NodeRef& s : successors_) s.ToWire(leave->add_successors());
    std::weak_ptr<bool> alive = alive_;
    Call(t, std::move(req), config_.rpc_timeout_ms,
         [this, alive, remaining, finish](const wire::Envelope*) {
           if (alive.expired()) return;
           if (--*remaining == 0) {
             state_ = State::kLeft;
             Log(LogLevel::kInfo, "left the ring");
             (*finish)();
           }
         });
  }
}

// ---------------------------------------------------------------------------------------
// Periodic maintenance

void ChordNode::InstallRoutingState(std::vector<NodeRef> successors,
                                    std::optional<NodeRef> predecessor,
                                    const std::vector<std::optional<NodeRef>>& fingers) {
  state_ = State::kJoined;
  successors_ = std::move(successors);
  if (static_cast<int>(successors_.size()) > config_.successors) {
    successors_.resize(config_.successors);
  }
  predecessor_ = std::move(predecessor);
  for (int i = 0; i < Id::kBits; ++i) {
    fingers_[i] = i < static_cast<int>(fingers.size()) ? fingers[i] : std::nullopt;
  }
  if (!successors_.empty()) fingers_[0] = successors_.front();
  ScheduleTick();
}

void ChordNode::SetMaintenance(bool enabled) {
  maintenance_ = enabled;
  if (!enabled && tick_timer_ != 0) {
    env_->Cancel(tick_timer_);
    tick_timer_ = 0;
  }
  if (enabled && tick_timer_ == 0) ScheduleTick();
}

void ChordNode::ScheduleTick() {
  if (tick_timer_ != 0) env_->Cancel(tick_timer_);
  tick_timer_ = 0;
  if (!maintenance_ || state_ != State::kJoined) return;
  // Jitter keeps nodes started together from stabilizing in lock step.
  const uint64_t base = std::max<uint64_t>(config_.stabilize_ms, 1);
  const double jitter = std::clamp(config_.stabilize_jitter, 0.0, 1.0);
  const uint64_t low = static_cast<uint64_t>(static_cast<double>(base) * (1.0 - jitter));
  const uint64_t span = static_cast<uint64_t>(static_cast<double>(base) * 2.0 * jitter);
  const uint64_t delay = std::max<uint64_t>(1, low + env_->Random() % (span + 1));
  std::weak_ptr<bool> alive = alive_;
  tick_timer_ = env_->Schedule(delay, [this, alive] {
    if (alive.expired()) return;
    tick_timer_ = 0;
    Tick();
  });
}

void ChordNode::Tick() {
  if (state_ != State::kJoined) return;
  Stabilize();
  CheckPredecessor();
  FixFingers();
  const uint64_t now = env_->NowMs();
  if (next_anti_entropy_ms_ == 0) next_anti_entropy_ms_ = now + config_.anti_entropy_ms;
  if (now >= next_anti_entropy_ms_) {
    next_anti_entropy_ms_ = now + config_.anti_entropy_ms;
    AntiEntropyRound();
  }
  ScheduleTick();
}

void ChordNode::Stabilize() {
  if (stabilizing_ || state_ != State::kJoined) return;
  stabilizing_ = true;
  StabilizeFromSuccessor(static_cast<int>(successors_.size()) + 1, /*head_retried=*/false);
}

void ChordNode::StabilizeFromSuccessor(int attempts_left, bool head_retried) {
  if (state_ != State::kJoined) {
    stabilizing_ = false;
    return;
  }
  if (successors_.empty()) {
    // Alone. If some node has notified us, it is our best successor candidate.
    if (predecessor_ && !(*predecessor_ == self_)) {
      StabilizeFromCandidate(*predecessor_);
    } else {
      FinishStabilize();
    }
    return;
  }
  if (attempts_left <= 0) {
    FinishStabilize();
    return;
  }
  const NodeRef head = successors_.front();
  wire::Envelope req;
  req.mutable_get_state();
  std::weak_ptr<bool> alive = alive_;
  Call(head, std::move(req), config_.rpc_timeout_ms,
       [this, alive, head, attempts_left, head_retried](const wire::Envelope* resp) {
         if (alive.expired()) return;
         if (state_ != State::kJoined) {
           stabilizing_ = false;
           return;
         }
         // A successor that answers but is no longer joined is leaving: like a dead one, it
         // must not stay at the head (a late answer can arrive after its leave notice).
         const bool answered = resp != nullptr && resp->has_get_state_resp();
         if (answered && !resp->get_state_resp().joined()) {
           std::vector<NodeRef> rest(successors_.begin(), successors_.end());
           rest.erase(std::remove(rest.begin(), rest.end(), head), rest.end());
           SetSuccessors(std::move(rest));
           StabilizeFromSuccessor(attempts_left - 1, /*head_retried=*/false);
           return;
         }
         if (!answered && !head_retried) {
           // One slow answer is not proof of death: dropping a live successor on a late
           // reply could leave us with only dead ones. Ask once more before giving up on it.
           StabilizeFromSuccessor(attempts_left, /*head_retried=*/true);
           return;
         }
         if (resp == nullptr || !resp->has_get_state_resp()) {
           // The successor is dead: drop it and repeat with the next entry of the list.
           MarkDead(head);
           std::vector<NodeRef> rest(successors_.begin(), successors_.end());
           rest.erase(std::remove(rest.begin(), rest.end(), head), rest.end());
           Log(LogLevel::kInfo, "successor " + Describe(head) + " did not answer; " +
                                    (rest.empty() ? std::string("no other successor known")
                                                  : "next is " + Describe(rest.front())));
           SetSuccessors(std::move(rest));
           StabilizeFromSuccessor(attempts_left - 1, /*head_retried=*/false);
           return;
         }
         if (successors_.empty() || !(successors_.front() == head)) {
           // The list changed while we waited (a leave notice): this answer is stale.
           FinishStabilize();
           return;
         }
         const auto& state = resp->get_state_resp();
         SetSuccessors(BuildSuccessorList(head, state.successors()));
         std::optional<NodeRef> candidate;
         if (state.has_predecessor()) candidate = NodeRef::FromWire(state.predecessor());
         if (candidate && Id::InOpen(candidate->id, self_.id, head.id)) {
           StabilizeFromCandidate(*candidate);
         } else {
           FinishStabilize();
         }
       });
}

void ChordNode::StabilizeFromCandidate(const NodeRef& candidate) {
  wire::Envelope req;
  req.mutable_get_state();
  std::weak_ptr<bool> alive = alive_;
  Call(candidate, std::move(req), config_.rpc_timeout_ms,
       [this, alive, candidate](const wire::Envelope* resp) {
         if (alive.expired()) return;
         if (state_ != State::kJoined) {
           stabilizing_ = false;
           return;
         }
         // Adopt the candidate only once it has answered (liveness before adoption).
         if (resp != nullptr && resp->has_get_state_resp() && resp->get_state_resp().joined() &&
             (successors_.empty() || Id::InOpen(candidate.id, self_.id, successors_[0].id))) {
           // [c] + c.succ, merged with the list we just took from the old head (heard from
           // in this same round): if c's list is stale, the old head still backs it up.
           std::vector<NodeRef> merged =
               BuildSuccessorList(candidate, resp->get_state_resp().successors());
           for (const NodeRef& n : successors_) {
             if (std::find(merged.begin(), merged.end(), n) == merged.end()) merged.push_back(n);
           }
           std::sort(merged.begin(), merged.end(), [this](const NodeRef& a, const NodeRef& b) {
             return Id::Distance(self_.id, a.id) < Id::Distance(self_.id, b.id);
           });
           SetSuccessors(OrderedSuccessorList(merged));
         }
         FinishStabilize();
       });
}

void ChordNode::FinishStabilize() {
  stabilizing_ = false;
  ++counters_.stabilize_rounds;
  if (stabilize_again_) {
    // Someone asked for a round while this one ran: its news may not be in this one.
    stabilize_again_ = false;
    std::weak_ptr<bool> alive = alive_;
    env_->Schedule(0, [this, alive] {
      if (!alive.expired()) Stabilize();
    });
  }
  if (successors_.empty() || state_ != State::kJoined) return;
  wire::Envelope req;
  self_.ToWire(req.mutable_notify()->mutable_node());
  req.mutable_notify()->set_want_keys(awaiting_transfer_);
  Call(successors_.front(), std::move(req), config_.rpc_timeout_ms, [](const wire::Envelope*) {});
}

void ChordNode::CheckPredecessor() {
  if (checking_predecessor_ || !predecessor_ || *predecessor_ == self_) return;
  checking_predecessor_ = true;
  const NodeRef p = *predecessor_;
  wire::Envelope req;
  req.mutable_ping();
  std::weak_ptr<bool> alive = alive_;
  Call(p, std::move(req), config_.rpc_timeout_ms, [this, alive, p](const wire::Envelope* resp) {
    if (alive.expired()) return;
    checking_predecessor_ = false;
    if (resp == nullptr && predecessor_ && *predecessor_ == p) {
      MarkDead(p);
      Log(LogLevel::kInfo, "predecessor " + Describe(p) + " did not answer; cleared");
      SetPredecessor(std::nullopt);
      range_floor_ = p.id;
    }
  });
}

void ChordNode::FixFingers() {
  if (fixing_fingers_ || state_ != State::kJoined) return;
  if (successors_.empty()) {
    for (auto& f : fingers_) f.reset();
    return;
  }
  // Finger i = successor(self + 2^i). Finger 0 is the successor itself; one lookup per
  // round refreshes the next finger and every later finger that falls in the same arc.
  fingers_[0] = successors_.front();
  if (next_finger_ <= 0 || next_finger_ >= Id::kBits) next_finger_ = 1;
  const int i = next_finger_;
  const Id start = self_.id + Id::PowerOfTwo(i);
  fixing_fingers_ = true;
  std::weak_ptr<bool> alive = alive_;
  Lookup(start, /*verify_owner=*/false, [this, alive, i](Result<LookupResult> r) {
    if (alive.expired()) return;
    fixing_fingers_ = false;
    if (!r.ok()) return;  // try the same finger next round
    const NodeRef& x = r->owner;
    int j = i;
    if (x == self_) {
      // Every start from i on wraps past all other nodes back to us: no finger beyond.
      for (; j < Id::kBits; ++j) fingers_[j].reset();
    } else {
      for (; j < Id::kBits && Id::InHalfOpen(self_.id + Id::PowerOfTwo(j), self_.id, x.id); ++j) {
        fingers_[j] = x;
      }
      if (j == i) ++j;  // stale answer; move on rather than spin on one finger
    }
    next_finger_ = j >= Id::kBits ? 1 : j;
  });
}

void ChordNode::Rectify(const NodeRef& n, bool wants_keys) {
  if (n == self_ || state_ != State::kJoined) return;
  auto gone = std::find(departed_.begin(), departed_.end(), n.id);
  if (gone != departed_.end()) {
    // A late notify from a node that has told us it left. Only a fresh join (a restart
    // on the same address) brings it back.
    if (!wants_keys) return;
    departed_.erase(gone);
  }
  if (!predecessor_ || Id::InOpen(n.id, predecessor_->id, self_.id)) {
    SetPredecessor(n);
    // With replicas, a new predecessor that waits for its keys gets them here (with one
    // copy, SetPredecessor has already started the hand-over).
    if (config_.replicas > 1 && wants_keys) PushMisplacedKeys(/*announce=*/true);
    return;
  }
  if (*predecessor_ == n) {
    // Same predecessor as before: hand over anything of its range still here (a previous
    // transfer may have failed). With replicas this node keeps copies outside its range on
    // purpose, so only a predecessor still waiting for its keys gets a hand-over.
    if (config_.replicas <= 1 || wants_keys) PushMisplacedKeys(/*announce=*/wants_keys);
    return;
  }
  // n is not between: keep the current predecessor unless it is dead.
  const NodeRef current = *predecessor_;
  wire::Envelope req;
  req.mutable_ping();
  std::weak_ptr<bool> alive = alive_;
  Call(current, std::move(req), config_.rpc_timeout_ms,
       [this, alive, current, n](const wire::Envelope* resp) {
         if (alive.expired() || state_ != State::kJoined) return;
         if (resp == nullptr && predecessor_ && *predecessor_ == current) {
           MarkDead(current);
           SetPredecessor(n);
         }
       });
}

void ChordNode::SetSuccessors(std::vector<NodeRef> list) {
  const NodeRef before = successor();
  successors_ = std::move(list);
  if (!successors_.empty()) fingers_[0] = successors_.front();
  if (!(successor() == before)) {
    ++counters_.successor_changes;
    Log(LogLevel::kInfo, "successor changed: " + Describe(before) + " -> " + Describe(successor()));
  }
}

void ChordNode::SetPredecessor(std::optional<NodeRef> p) {
  const bool changed =
      p.has_value() != predecessor_.has_value() || (p && predecessor_ && !(*p == *predecessor_));
  predecessor_ = std::move(p);
  if (predecessor_) range_floor_.reset();
  if (!changed) return;
  ++counters_.predecessor_changes;
  Log(LogLevel::kInfo, "predecessor changed to " +
                           (predecessor_ ? Describe(*predecessor_) : std::string("unknown")));
  if (predecessor_ && config_.replicas <= 1) PushMisplacedKeys(/*announce=*/true);
}

void ChordNode::MarkDead(const NodeRef& n) {
  for (auto& f : fingers_) {
    if (f && *f == n) f.reset();
  }
}

std::vector<NodeRef> ChordNode::BuildSuccessorList(
    const NodeRef& head, const google::protobuf::RepeatedPtrField<wire::NodeInfo>& rest) const {
  std::vector<NodeRef> candidates{head};
  for (const auto& info : rest) {
    if (auto n = NodeRef::FromWire(info)) candidates.push_back(std::move(*n));
  }
  return OrderedSuccessorList(candidates);
}

std::vector<NodeRef> ChordNode::OrderedSuccessorList(const std::vector<NodeRef>& candidates) const {
  // Each entry must lie strictly clockwise after the previous one and before this node. A
  // list that reaches us has wrapped around the ring; one that jumps past us is stale (it
  // skips this node): either way the rest is not our successors, and keeping it would
  // disorder the list. A shorter list is refilled by the next stabilization.
  std::vector<NodeRef> out;
  const Id* prev = &self_.id;
  for (const NodeRef& n : candidates) {
    if (static_cast<int>(out.size()) >= config_.successors) break;
    if (n == self_ || !Id::InOpen(n.id, *prev, self_.id)) break;
    out.push_back(n);
    prev = &out.back().id;
  }
  return out;
}

std::vector<NodeRef> ChordNode::ClosestPreceding(const Id& target, int max) const {
  // Candidates strictly between us and the target, ordered by how close they are to it.
  std::vector<NodeRef> out;
  auto consider = [&](const NodeRef& n) {
    if (n == self_ || !Id::InOpen(n.id, self_.id, target)) return;
    if (std::find(out.begin(), out.end(), n) != out.end()) return;
    out.push_back(n);
  };
  for (int i = Id::kBits - 1; i >= 0; --i) {
    if (fingers_[i]) consider(*fingers_[i]);
  }
  for (const NodeRef& s : successors_) consider(s);
  std::sort(out.begin(), out.end(), [&](const NodeRef& a, const NodeRef& b) {
    return Id::Distance(a.id, target) < Id::Distance(b.id, target);
  });
  if (static_cast<int>(out.size()) > max) out.resize(max);
  return out;
}

bool ChordNode::OwnerFromSuccessors(const Id& target, NodeRef* predecessor,
                                    std::vector<NodeRef>* owners) const {
  if (successors_.empty()) {  // alone: we own everything
    *predecessor = self_;
    *owners = {self_};
    return true;
  }
  // The successor list spans (self, last]: the owner is the first entry at or after target.
  // Answer from deep in the list only while enough entries follow the owner to skip dead
  // ones (at least half of S); otherwise the node just before is the better last hop.
  const size_t keep = static_cast<size_t>((config_.successors + 1) / 2);
  const NodeRef* prev = &self_;
  for (size_t i = 0; i < successors_.size(); ++i) {
    if (i > 0 && successors_.size() - i < keep &&
        static_cast<int>(successors_.size()) >= config_.successors) {
      return false;
    }
    if (Id::InHalfOpen(target, prev->id, successors_[i].id)) {
      *predecessor = *prev;
      owners->assign(successors_.begin() + static_cast<std::ptrdiff_t>(i), successors_.end());
      return true;
    }
    prev = &successors_[i];
  }
  return false;
}

std::optional<Id> ChordNode::RangeStart() const {
  if (predecessor_ && !(*predecessor_ == self_)) return predecessor_->id;
  if (successors_.empty()) return std::nullopt;  // alone: the whole ring
  return range_floor_;  // predecessor unknown: where our range last started, if known
}

bool ChordNode::Owns(const Id& key_id) const {
  if (state_ != State::kJoined) return false;
  const auto start = RangeStart();
  return !start || Id::InHalfOpen(key_id, *start, self_.id);
}

uint64_t ChordNode::PrimaryKeyCount() const {
  if (state_ != State::kJoined && state_ != State::kLeaving) return 0;
  const auto start = RangeStart();
  return CountLive(start ? *start : self_.id, self_.id);
}

Id ChordNode::AttributedRangeStart() const {
  std::optional<Id> prev;
  for (const NodeRef& v : process_vnodes_) {
    if (v == self_) continue;
    if (!prev || Id::Distance(v.id, self_.id) < Id::Distance(*prev, self_.id)) prev = v.id;
  }
  return prev ? *prev : self_.id;
}

uint64_t ChordNode::ReplicaKeyCount() const {
  // Records between the previous vnode of this process and this one, minus our own range:
  // each record held by the process is counted on exactly one of its vnodes.
  const uint64_t held = CountLive(AttributedRangeStart(), self_.id);
  const uint64_t primary = PrimaryKeyCount();
  return held - std::min(held, primary);
}

uint64_t ChordNode::CountLive(const Id& from, const Id& to) const {
  uint64_t n = 0;
  Status s = store_->Scan(from, to, [&n](const Id&, const wire::Record& rec) {
    if (!rec.deleted()) ++n;
    return true;
  });
  return s.ok() ? n : 0;
}

Status ChordNode::StoreIfNewer(const Id& key_id, const wire::Record& rec, bool* stored,
                               wire::Record* kept) {
  ObserveVersion(rec.version());
  if (stored != nullptr) *stored = false;
  wire::Record old;
  Status s = store_->Get(key_id, rec.key(), &old);
  if (s.ok()) {
    // Last writer wins, with a tie-break every node applies alike.
    if (!RecordNewer(rec, old)) {
      if (kept != nullptr) *kept = std::move(old);
      return Status::Ok();
    }
  } else if (!s.IsNotFound()) {
    return s;
  }
  s = store_->Put(key_id, rec);
  if (s.ok() && stored != nullptr) *stored = true;
  return s;
}

// ---------------------------------------------------------------------------------------
// Lookups

void ChordNode::Lookup(const Id& target, bool verify_owner, LookupCallback done) {
  ++counters_.lookups;
  auto st = std::make_shared<LookupState>();
  st->target = target;
  st->verify_owner = verify_owner;
  st->done = std::move(done);
  if (state_ != State::kJoined) {
    st->done(Status::Unavailable("this node has not joined a ring yet"));
    return;
  }
  std::vector<NodeRef> owners;
  if (OwnerFromSuccessors(target, &st->predecessor, &owners)) {
    // We are the last hop ourselves.
    if (verify_owner) {
      LookupVerify(st, std::move(owners), 0, /*retried=*/false);
    } else {
      metrics_.lookup_hops.Observe(0);
      LookupResult r;
      r.owner = owners.front();
      r.successors.assign(owners.begin() + 1, owners.end());
      r.predecessor = st->predecessor;
      st->done(std::move(r));
    }
    return;
  }
  // The first hop has every finger and successor to fall back on, not just a few.
  std::vector<NodeRef> first = ClosestPreceding(target, Id::kBits);
  if (first.empty()) first.push_back(successors_.front());
  st->stack.push_back(std::move(first));
  LookupStep(st);
}

void ChordNode::LookupStep(std::shared_ptr<LookupState> st) {
  // Next untried candidate, most recent list first.
  std::optional<NodeRef> next;
  while (!st->stack.empty() && !next) {
    auto& list = st->stack.back();
    while (!list.empty()) {
      NodeRef c = list.front();
      list.erase(list.begin());
      if (st->tried.insert(c.id).second) {
        next = std::move(c);
        break;
      }
    }
    if (!next) st->stack.pop_back();
  }
  if (!next) {
    st->done(Status::Unavailable("every route toward the key's owner timed out"));
    return;
  }
  if (++st->steps > config_.max_lookup_steps) {
    st->done(Status::Unavailable("the lookup did not converge within " +
                                 std::to_string(config_.max_lookup_steps) + " steps"));
    return;
  }
  const NodeRef hop = *next;
  wire::Envelope req;
  req.mutable_find_next_hop()->set_target(st->target.ToBytes());
  std::weak_ptr<bool> alive = alive_;
  Call(hop, std::move(req), config_.rpc_timeout_ms,
       [this, alive, st, hop](const wire::Envelope* resp) {
         if (alive.expired()) return;
         if (resp == nullptr || !resp->has_find_next_hop_resp()) {
           if (resp == nullptr) {
             ++st->timeouts;
             if (st->retried.insert(hop.id).second) {
               // A slow answer is not proof of death: ask the same hop once more first.
               st->tried.erase(hop.id);
               if (st->stack.empty()) st->stack.emplace_back();
               st->stack.back().insert(st->stack.back().begin(), hop);
               LookupStep(st);
               return;
             }
             MarkDead(hop);
           }
           LookupStep(st);  // route around it
           return;
         }
         ++st->hops;
         if (st->answered.size() < kMaxRemembered) st->answered.push_back(hop.addr);
         const auto& r = resp->find_next_hop_resp();
         std::vector<NodeRef> nodes;
         for (const auto& info : r.nodes()) {
           if (auto n = NodeRef::FromWire(info)) nodes.push_back(std::move(*n));
         }
         if (r.done()) {
           if (nodes.empty()) nodes.push_back(hop);  // the hop is alone: it owns everything
           auto pred = r.has_predecessor() ? NodeRef::FromWire(r.predecessor()) : std::nullopt;
           st->predecessor = pred ? *pred : hop;
           if (st->verify_owner) {
             LookupVerify(st, std::move(nodes), 0, /*retried=*/false);
             return;
           }
           counters_.lookup_hops += st->hops;
           // Like counters_.lookups, the histogram leaves out this node's own join lookup.
           if (state_ != State::kJoining) metrics_.lookup_hops.Observe(st->hops);
           LookupResult out;
           out.owner = nodes.front();
           out.successors.assign(nodes.begin() + 1, nodes.end());
           out.predecessor = st->predecessor;
           out.hops = st->hops;
           out.timeouts = st->timeouts;
           st->done(std::move(out));
           return;
         }
         st->stack.push_back(std::move(nodes));
         LookupStep(st);
       });
}

void ChordNode::LookupVerify(std::shared_ptr<LookupState> st, std::vector<NodeRef> owners,
                             size_t index, bool retried) {
  if (index >= owners.size() || ++st->steps > config_.max_lookup_steps) {
    st->done(Status::Unavailable("the key's owner and its known successors did not answer"));
    return;
  }
  const NodeRef candidate = owners[index];
  auto finish = [this, st, owners, index]() {
    counters_.lookup_hops += st->hops;
    metrics_.lookup_hops.Observe(st->hops);
    LookupResult out;
    out.owner = owners[index];
    out.successors.assign(owners.begin() + index + 1, owners.end());
    out.predecessor = st->predecessor;
    out.hops = st->hops;
    out.timeouts = st->timeouts;
    st->done(std::move(out));
  };
  if (candidate == self_) {
    if (state_ == State::kJoined && Owns(st->target)) {
      finish();
      return;
    }
  }
  // Ask the candidate for its predecessor: the owner is the node whose range
  // (predecessor, self] holds the key. A list that is stale under churn can name a node past
  // a newly joined owner; the candidate's own predecessor pointer is fresher (a joining node
  // notifies its successor at once), so step back to it when it lies at or after the key.
  wire::Envelope req;
  req.mutable_get_state();
  std::weak_ptr<bool> alive = alive_;
  Call(candidate, std::move(req), config_.rpc_timeout_ms,
       [this, alive, st, owners = std::move(owners), index, finish, candidate,
        retried](const wire::Envelope* resp) mutable {
         if (alive.expired()) return;
         if (resp == nullptr) {
           ++st->timeouts;
           if (!retried) {
             // Skipping a live owner that was merely slow would return the wrong node: ask
             // once more before moving on.
             LookupVerify(st, std::move(owners), index, /*retried=*/true);
             return;
           }
           MarkDead(candidate);
           st->dead.insert(candidate.id);
           LookupVerify(st, std::move(owners), index + 1, /*retried=*/false);
           return;
         }
         if (!resp->has_get_state_resp() || !resp->get_state_resp().joined()) {
           LookupVerify(st, std::move(owners), index + 1, /*retried=*/false);  // leaving
           return;
         }
         const auto& state = resp->get_state_resp();
         auto pred =
             state.has_predecessor() ? NodeRef::FromWire(state.predecessor()) : std::nullopt;
         if (pred && !(*pred == candidate) && st->dead.count(pred->id) == 0 &&
             !Id::InHalfOpen(st->target, pred->id, candidate.id)) {
           // The candidate's predecessor lies at or after the key: it is the better owner.
           owners.insert(owners.begin() + static_cast<std::ptrdiff_t>(index), *pred);
           LookupVerify(st, std::move(owners), index, /*retried=*/false);
           return;
         }
         finish();
       });
}

// ---------------------------------------------------------------------------------------
// Key transfer

void ChordNode::PushMisplacedKeys(bool announce) {
  // Records outside (predecessor, self] belong to the predecessor's side of the ring: on a
  // join that is exactly the new node's range. Hand them over; delete only after the ack.
  if (transferring_ || state_ != State::kJoined || !predecessor_ || *predecessor_ == self_) {
    return;
  }
  const NodeRef to = *predecessor_;
  // A new predecessor always gets a hand-over, even an empty one: it waits for the final
  // batch before serving its range.
  Id from_id, to_id;
  if (!announce && (!HandOverRange(to, /*for_leave=*/false, &from_id, &to_id) ||
                    store_->CountInRange(from_id, to_id) == 0)) {
    return;
  }
  SendTransferBatch(to, /*for_leave=*/false, [](bool) {});
}

bool ChordNode::HandOverRange(const NodeRef& to, bool for_leave, Id* from_id, Id* to_id) const {
  // The records this vnode accounts for: (attributed start, self], the whole store with one
  // vnode per process. A leave hands all of them on; a join those clockwise up to the new
  // predecessor, (start, to] (with one vnode: everything outside (to, self]).
  const Id start = AttributedRangeStart();
  *from_id = start;
  *to_id = for_leave ? self_.id : to.id;
  if (for_leave) return true;
  // Another vnode of this process shares the store: there is nothing to copy.
  if (to.process() == self_.process()) return false;
  return start == self_.id || Id::InOpen(to.id, start, self_.id);
}

void ChordNode::SendTransferBatch(const NodeRef& to, bool for_leave,
                                  std::function<void(bool ok)> done,
                                  std::optional<Id> resume_after) {
  // One batch of at most transfer_batch_bytes; once acknowledged, the next batch continues
  // after the last id sent, until nothing is left; the last batch is marked `last`.
  transferring_ = true;
  Id from_id, to_id;
  const bool any = HandOverRange(to, for_leave, &from_id, &to_id);
  if (resume_after) from_id = *resume_after;
  // (a, a] would be the whole ring: a resumed scan that reached the end has nothing left.
  const bool scan = any && !(resume_after && *resume_after == to_id);
  wire::Envelope req;
  auto* t = req.mutable_transfer();
  self_.ToWire(t->mutable_from());
  size_t bytes = 0;
  bool more = false;
  std::vector<SentRecord> sent;
  Status s = !scan ? Status::Ok()
                   : store_->Scan(from_id, to_id, [&](const Id& id, const wire::Record& rec) {
                       const size_t size = rec.key().size() + rec.value().size() + 32;
                       if (!sent.empty() && bytes + size > config_.transfer_batch_bytes) {
                         more = true;
                         return false;
                       }
                       *t->add_records() = rec;
                       sent.push_back(SentRecord{id, rec.key(), rec.version()});
                       bytes += size;
                       return true;
                     });
  if (!s.ok()) {
    transferring_ = false;
    Log(LogLevel::kError, "cannot read keys to hand over: " + s.message());
    done(false);
    return;
  }
  t->set_last(!more);
  const uint64_t started = env_->NowMs();
  std::weak_ptr<bool> alive = alive_;
  Call(to, std::move(req), config_.transfer_timeout_ms,
       [this, alive, to, for_leave, done = std::move(done), sent = std::move(sent), bytes, more,
        started](const wire::Envelope* resp) mutable {
         if (alive.expired()) return;
         transferring_ = false;
         if (!for_leave && predecessor_ && !(*predecessor_ == to)) {
           // The predecessor changed while this batch was in flight: start over toward the
           // new one once this batch is settled.
           std::weak_ptr<bool> alive2 = alive_;
           env_->Schedule(0, [this, alive2] {
             if (!alive2.expired()) PushMisplacedKeys(/*announce=*/true);
           });
         }
         if (resp == nullptr || !resp->has_transfer_resp() ||
             resp->transfer_resp().code() != wire::OK) {
           Log(LogLevel::kWarn, "hand-over of " + std::to_string(sent.size()) + " keys to " +
                                    Describe(to) + " failed; keeping them");
           done(false);
           return;
         }
         for (const SentRecord& r : sent) {
           // With replicas, a join's hand-over is a copy: this node stays in the new node's
           // replica set, and the clean-up pass drops what it no longer needs.
           if (!for_leave && config_.replicas > 1) break;
           if (to.process() == self_.process()) break;  // one shared store
           // Keep a key that has become ours again meanwhile (the receiver left and handed
           // it back) or that was rewritten since it was sent.
           if (!for_leave && Owns(r.id)) continue;
           wire::Record current;
           if (!store_->Get(r.id, r.key, &current).ok() || current.version() != r.version) continue;
           Status s = store_->Erase(r.id, r.key);
           if (!s.ok()) Log(LogLevel::kError, "cannot drop a handed-over key: " + s.message());
         }
         counters_.keys_sent += sent.size();
         counters_.bytes_sent += bytes;
         if (!sent.empty()) {
           Log(LogLevel::kInfo, "transferred " + std::to_string(sent.size()) + " keys (" +
                                    std::to_string(bytes) + " bytes) to " + Describe(to) + " in " +
                                    std::to_string(env_->NowMs() - started) + " ms");
         }
         if (more) {
           if (!for_leave && !(predecessor_ && *predecessor_ == to)) {
             done(false);  // the predecessor changed meanwhile; the next rectify resumes
             return;
           }
           SendTransferBatch(to, for_leave, std::move(done), sent.back().id);
           return;
         }
         done(true);
       });
}

// ---------------------------------------------------------------------------------------
// Data operations

void ChordNode::StartDataOp(ReplyToken from, const wire::Envelope& request) {
  const std::string& key = request.has_put()   ? request.put().key()
                           : request.has_get() ? request.get().key()
                                               : request.del().key();
  wire::DataResponse bad;
  bad.set_code(wire::INVALID);
  if (key.empty()) {
    bad.set_error("the key is empty; give a key of 1 to " + std::to_string(config_.max_key_bytes) +
                  " bytes");
  } else if (key.size() > config_.max_key_bytes) {
    bad.set_error("the key is " + std::to_string(key.size()) + " bytes, over the limit of " +
                  std::to_string(config_.max_key_bytes) + "; use a shorter key");
  } else if (request.has_put() && request.put().value().size() > config_.max_value_bytes) {
    bad.set_error("the value is " + std::to_string(request.put().value().size()) +
                  " bytes, over the limit of " + std::to_string(config_.max_value_bytes) +
                  "; store a smaller value");
  }
  if (!bad.error().empty()) {
    wire::Envelope reply;
    *reply.mutable_data_resp() = std::move(bad);
    Reply(from, request.request_id(), std::move(reply));
    return;
  }
  auto op = std::make_shared<DataOp>();
  op->from = from;
  op->request = request;
  op->key_id = Id::Sha1(key);
  op->deadline_ms = env_->NowMs() + config_.data_deadline_ms;
  op->backoff_ms = config_.data_retry_ms;
  if (op->request.has_put()) {
    op->request.mutable_put()->set_direct(true);
  } else if (op->request.has_get()) {
    op->request.mutable_get()->set_direct(true);
  } else {
    op->request.mutable_del()->set_direct(true);
  }
  RunDataOp(op);
}

void ChordNode::RunDataOp(std::shared_ptr<DataOp> op) {
  if (state_ != State::kJoined) {
    RetryDataOp(op, state_ == State::kJoining ? "this node is still joining the ring"
                                              : "this node is leaving the ring");
    return;
  }
  ++op->attempts;
  if (op->hint) {
    // The last node asked named the owner: go there directly.
    const NodeRef target = *op->hint;
    op->hint.reset();
    SendDataOp(op, target);
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  Lookup(op->key_id, /*verify_owner=*/false, [this, alive, op](Result<LookupResult> r) {
    if (alive.expired()) return;
    if (!r.ok()) {
      RetryDataOp(op, r.status().message());
      return;
    }
    op->hops = r->hops;
    op->owner_successors = r->successors;
    SendDataOp(op, r->owner);
  });
}

void ChordNode::SendDataOp(std::shared_ptr<DataOp> op, const NodeRef& owner) {
  // NOT_OWNER usually names the right node (the asked node's predecessor or successor): a
  // few such hints are followed at once, then it is back to lookups with back-off.
  auto not_owner = [this, op](const wire::DataResponse& d) {
    if (d.code() == wire::NOT_OWNER && d.has_hint() && op->hints_followed < kMaxHintsFollowed) {
      if (auto hint = NodeRef::FromWire(d.hint())) {
        ++op->hints_followed;
        op->hint = *hint;
        op->owner_successors.clear();  // they were the previous candidate's
        std::weak_ptr<bool> alive = alive_;
        env_->Schedule(0, [this, alive, op] {
          if (!alive.expired()) RunDataOp(op);
        });
        return;
      }
    }
    RetryDataOp(op, d.error());
  };
  std::weak_ptr<bool> alive = alive_;
  if (owner == self_) {
    ApplyDirect(op->request, [this, alive, op, not_owner](wire::DataResponse resp) {
      if (alive.expired()) return;
      if (resp.code() == wire::NOT_OWNER || resp.code() == wire::SHUTTING_DOWN) {
        not_owner(resp);
        return;
      }
      FinishDataOp(op, std::move(resp));
    });
    return;
  }
  wire::Envelope forward = op->request;
  // A write waits for its replicas (in parallel, each up to one RPC timeout).
  const uint64_t timeout =
      op->request.has_get() ? config_.rpc_timeout_ms : 3 * config_.rpc_timeout_ms;
  Call(owner, std::move(forward), timeout,
       [this, alive, op, owner, not_owner](const wire::Envelope* resp) {
         if (alive.expired()) return;
         if (resp == nullptr) {
           MarkDead(owner);
           if (op->request.has_get() && config_.replicas > 1 && !op->owner_successors.empty()) {
             // Read the copies on the next members of the replica set instead.
             std::vector<NodeRef> holders;
             for (const NodeRef& n : op->owner_successors) {
               if (static_cast<int>(holders.size()) >= config_.replicas - 1) break;
               if (n.process() == owner.process()) continue;
               if (std::any_of(holders.begin(), holders.end(),
                               [&n](const NodeRef& h) { return h.process() == n.process(); })) {
                 continue;
               }
               holders.push_back(n);
             }
             op->owner_successors.clear();
             ReadFromReplicas(op, std::move(holders));
             return;
           }
           RetryDataOp(op, "the key's owner " + owner.addr + " did not answer");
           return;
         }
         if (!resp->has_data_resp()) {
           RetryDataOp(op, "the key's owner " + owner.addr + " sent an unexpected answer");
           return;
         }
         const auto& d = resp->data_resp();
         if (d.code() == wire::NOT_OWNER || d.code() == wire::SHUTTING_DOWN) {
           not_owner(d);
           return;
         }
         FinishDataOp(op, d);
       });
}

void ChordNode::RetryDataOp(std::shared_ptr<DataOp> op, const std::string& why) {
  op->last_error = why;
  const uint64_t now = env_->NowMs();
  if (now + op->backoff_ms >= op->deadline_ms || state_ == State::kLeft) {
    wire::DataResponse resp;
    resp.set_code(wire::UNAVAILABLE);
    resp.set_error("the ring could not complete the request within " +
                   std::to_string(config_.data_deadline_ms) + " ms (last problem: " + why +
                   "); check the ring with 'chordctl ring' and retry");
    FinishDataOp(op, std::move(resp));
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  env_->Schedule(op->backoff_ms, [this, alive, op] {
    if (!alive.expired()) RunDataOp(op);
  });
  op->backoff_ms = std::min<uint64_t>(op->backoff_ms * 2, 1000);
}

void ChordNode::FinishDataOp(std::shared_ptr<DataOp> op, wire::DataResponse response) {
  response.set_hops(static_cast<uint32_t>(op->hops));
  wire::Envelope reply;
  *reply.mutable_data_resp() = std::move(response);
  Reply(op->from, op->request.request_id(), std::move(reply));
}

void ChordNode::ApplyDirect(const wire::Envelope& request, DataDone done) {
  wire::DataResponse resp;
  self_.ToWire(resp.mutable_owner());
  const std::string& key = request.has_put()   ? request.put().key()
                           : request.has_get() ? request.get().key()
                                               : request.del().key();
  if (key.empty() || key.size() > config_.max_key_bytes ||
      (request.has_put() && request.put().value().size() > config_.max_value_bytes)) {
    resp.set_code(wire::INVALID);
    resp.set_error("the key or value is outside the size limits");
    return done(std::move(resp));
  }
  const Id key_id = Id::Sha1(key);
  if (request.has_get() && request.get().from_replica()) {
    // A read of our copy, by a node whose owner did not answer. A node still waiting for its
    // hand-over may lack keys: it must not answer "not found".
    if ((state_ != State::kJoined && state_ != State::kLeaving) || awaiting_transfer_) {
      resp.set_code(wire::UNAVAILABLE);
      resp.set_error(self_.addr + " has not joined the ring yet");
      return done(std::move(resp));
    }
    wire::Record rec;
    Status s = store_->Get(key_id, key, &rec);
    if (s.ok() && !rec.deleted()) {
      resp.set_code(wire::OK);
      resp.set_value(rec.value());
    } else if (s.ok() || s.IsNotFound()) {
      resp.set_code(wire::NOT_FOUND);
      resp.set_error("the key does not exist");
    } else {
      resp.set_code(wire::UNAVAILABLE);
      resp.set_error(self_.addr + " could not read the key: " + s.message());
    }
    if (s.ok()) resp.set_version(rec.version());
    return done(std::move(resp));
  }
  if (state_ == State::kLeaving || state_ == State::kLeft) {
    resp.set_code(wire::SHUTTING_DOWN);
    resp.set_error("the owner " + self_.addr + " is leaving the ring");
    return done(std::move(resp));
  }
  if (!Owns(key_id) || awaiting_transfer_) {
    resp.set_code(wire::NOT_OWNER);
    resp.set_error(awaiting_transfer_ ? self_.addr + " is still receiving its keys"
                                      : self_.addr + " does not own the key");
    if (!Owns(key_id)) {  // while we wait for our keys, there is no better node to name
      if (Id::InHalfOpen(key_id, self_.id, successor().id)) {
        successor().ToWire(resp.mutable_hint());
      } else if (predecessor_) {
        predecessor_->ToWire(resp.mutable_hint());
      }
    }
    return done(std::move(resp));
  }
  if (request.has_get()) {
    wire::Record rec;
    Status s = store_->Get(key_id, key, &rec);
    if (s.ok() && !rec.deleted()) {
      resp.set_code(wire::OK);
      resp.set_value(rec.value());
      resp.set_version(rec.version());
    } else if (s.ok() || s.IsNotFound()) {
      resp.set_code(wire::NOT_FOUND);
      resp.set_error("the key does not exist");
    } else {
      resp.set_code(wire::UNAVAILABLE);
      resp.set_error("the owner could not read the key: " + s.message());
    }
    if (s.ok() && config_.replicas > 1 && config_.read_repair_chance > 0 &&
        static_cast<double>(env_->Random() % 1'000'000) <
            config_.read_repair_chance * 1'000'000.0) {
      ReadRepair(rec);
    }
    if (s.IsNotFound() && config_.replicas > 1 && !ReplicaTargets().empty()) {
      // No copy here at all: a new owner may not have received every key yet (with vnodes a
      // join hand-over is partial). The replicas decide; the newest version they hold wins.
      return ReadMissFromReplicas(key, std::move(resp), std::move(done));
    }
    return done(std::move(resp));
  }
  // A write: this node, the owner, versions it and waits for the replica set.
  auto w = std::make_shared<WriteOp>();
  w->key_id = key_id;
  w->record.set_key(key);
  if (request.has_put()) {
    w->record.set_value(request.put().value());
  } else {
    w->record.set_deleted(true);
  }
  w->done = std::move(done);
  CoordinateWrite(std::move(w));
}

// ---------------------------------------------------------------------------------------
// Request handlers

void ChordNode::HandleGetState(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  auto* r = reply.mutable_get_state_resp();
  self_.ToWire(r->mutable_self());
  if (predecessor_) predecessor_->ToWire(r->mutable_predecessor());
  for (const NodeRef& s : successors_) s.ToWire(r->add_successors());
  r->set_joined(state_ == State::kJoined);
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandleNotify(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  reply.mutable_notify_resp();
  Reply(from, req.request_id(), std::move(reply));
  if (auto n = NodeRef::FromWire(req.notify().node())) Rectify(*n, req.notify().want_keys());
}

void ChordNode::HandleFindNextHop(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  auto* r = reply.mutable_find_next_hop_resp();
  auto target = Id::FromBytes(req.find_next_hop().target());
  if (!target || state_ != State::kJoined) {
    // Not done and no nodes: the asker routes around us.
    Reply(from, req.request_id(), std::move(reply));
    return;
  }
  NodeRef pred;
  std::vector<NodeRef> owners;
  if (OwnerFromSuccessors(*target, &pred, &owners)) {
    r->set_done(true);
    for (const NodeRef& n : owners) n.ToWire(r->add_nodes());
    pred.ToWire(r->mutable_predecessor());
  } else {
    std::vector<NodeRef> next = ClosestPreceding(*target, config_.next_hop_candidates);
    if (next.empty()) next.push_back(successors_.front());
    for (const NodeRef& n : next) n.ToWire(r->add_nodes());
  }
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandleTransfer(ReplyToken from, const wire::Envelope& req) {
  const auto& t = req.transfer();
  wire::Envelope reply;
  auto* r = reply.mutable_transfer_resp();
  r->set_code(wire::OK);
  if (state_ != State::kJoined) {
    // A leaving node has already gathered what it hands on: it must not take more.
    r->set_code(wire::SHUTTING_DOWN);
    Reply(from, req.request_id(), std::move(reply));
    return;
  }
  for (const auto& rec : t.records()) {
    if (rec.key().empty() || rec.key().size() > config_.max_key_bytes) continue;
    Status s = StoreIfNewer(Id::Sha1(rec.key()), rec);
    if (!s.ok()) {
      r->set_code(wire::UNAVAILABLE);
      Log(LogLevel::kError, "cannot store handed-over keys: " + s.message());
      break;
    }
  }
  if (r->code() == wire::OK) {
    counters_.keys_received += t.records_size();
    if (t.records_size() > 0) {
      Log(LogLevel::kInfo,
          "received " + std::to_string(t.records_size()) + " keys from " + t.from().addr());
    }
    // Our range comes from our successor; a hand-over from anyone else (a leaving
    // predecessor) does not end the wait.
    auto sender = NodeRef::FromWire(t.from());
    if (t.last() && sender && *sender == successor()) awaiting_transfer_ = false;
  }
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandleLeave(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  reply.mutable_leave_resp();
  Reply(from, req.request_id(), std::move(reply));
  const auto& l = req.leave();
  auto leaver = NodeRef::FromWire(l.node());
  if (!leaver || state_ != State::kJoined) return;
  Log(LogLevel::kInfo, Describe(*leaver) + " is leaving the ring");
  MarkDead(*leaver);
  if (std::find(departed_.begin(), departed_.end(), leaver->id) == departed_.end()) {
    departed_.push_back(leaver->id);
    if (departed_.size() > kMaxRemembered) departed_.pop_front();
  }
  if (predecessor_ && *predecessor_ == *leaver) {
    // Its keys are already here; its predecessor will notify us shortly. Until then our
    // range starts where the leaver's did.
    auto leaver_pred = l.has_predecessor() ? NodeRef::FromWire(l.predecessor()) : std::nullopt;
    SetPredecessor(std::nullopt);
    range_floor_ = leaver_pred ? leaver_pred->id : leaver->id;
  }
  if (!successors_.empty() && successors_.front() == *leaver) {
    // We just heard the leaver's list from the leaver itself. Merge it with the rest of
    // ours, in clockwise order from us: the leaver's may be stale and skip past us.
    std::vector<NodeRef> candidates(successors_.begin() + 1, successors_.end());
    for (const auto& info : l.successors()) {
      auto n = NodeRef::FromWire(info);
      if (n && !(*n == *leaver) && !(*n == self_) &&
          std::find(candidates.begin(), candidates.end(), *n) == candidates.end()) {
        candidates.push_back(std::move(*n));
      }
    }
    std::sort(candidates.begin(), candidates.end(), [this](const NodeRef& a, const NodeRef& b) {
      return Id::Distance(self_.id, a.id) < Id::Distance(self_.id, b.id);
    });
    SetSuccessors(OrderedSuccessorList(candidates));
    Stabilize();
  } else {
    std::vector<NodeRef> rest = successors_;
    rest.erase(std::remove(rest.begin(), rest.end(), *leaver), rest.end());
    if (rest.size() != successors_.size()) SetSuccessors(std::move(rest));
  }
}

void ChordNode::HandleLookup(ReplyToken from, const wire::Envelope& req) {
  const std::string& key = req.lookup().key();
  const uint64_t request_id = req.request_id();
  const Id key_id = Id::Sha1(key);
  std::weak_ptr<bool> alive = alive_;
  Lookup(key_id, /*verify_owner=*/true,
         [this, alive, from, request_id, key_id](Result<LookupResult> r) {
           if (alive.expired()) return;
           wire::Envelope reply;
           auto* l = reply.mutable_lookup_resp();
           l->set_key_id(key_id.ToBytes());
           if (!r.ok()) {
             l->set_code(wire::UNAVAILABLE);
             l->set_error(r.status().message());
           } else {
             l->set_code(wire::OK);
             r->owner.ToWire(l->mutable_owner());
             l->set_hops(static_cast<uint32_t>(r->hops));
             l->set_timeouts(static_cast<uint32_t>(r->timeouts));
           }
           Reply(from, request_id, std::move(reply));
         });
}

void ChordNode::HandleStatus(ReplyToken from, const wire::Envelope& req) {
  wire::Envelope reply;
  auto* s = reply.mutable_status_resp();
  self_.ToWire(s->mutable_self());
  if (predecessor_) predecessor_->ToWire(s->mutable_predecessor());
  for (const NodeRef& n : successors_) n.ToWire(s->add_successors());
  std::optional<NodeRef> last;
  for (const auto& f : fingers_) {
    if (f && (!last || !(*last == *f))) {
      f->ToWire(s->add_fingers());
      last = f;
    }
  }
  s->set_keys(PrimaryKeyCount());
  s->set_replica_keys(ReplicaKeyCount());
  s->set_replicas(static_cast<uint32_t>(config_.replicas));
  s->set_tombstones(store_->Count() - std::min(store_->Count(), CountLive(self_.id, self_.id)));
  s->set_joined(state_ == State::kJoined);
  s->set_leaving(state_ == State::kLeaving || state_ == State::kLeft);
  s->set_successor_list_length(static_cast<uint32_t>(config_.successors));
  s->set_ring_has_enough_members(static_cast<int>(successors_.size()) >= config_.successors);
  s->set_stabilize_rounds(counters_.stabilize_rounds);
  auto* d = s->mutable_data();
  d->set_keys_sent(counters_.keys_sent);
  d->set_bytes_sent(counters_.bytes_sent);
  d->set_keys_received(counters_.keys_received);
  d->set_writes_coordinated(counters_.writes_replicated);
  d->set_anti_entropy_rounds(counters_.anti_entropy_rounds);
  d->set_anti_entropy_clean(counters_.anti_entropy_clean);
  d->set_anti_entropy_bytes(counters_.anti_entropy_bytes);
  d->set_keys_repaired(counters_.keys_repaired);
  d->set_keys_dropped(counters_.keys_dropped);
  d->set_tombstones_purged(counters_.tombstones_purged);
  Reply(from, req.request_id(), std::move(reply));
}

void ChordNode::HandleListKeys(ReplyToken from, const wire::Envelope& req) {
  const auto& l = req.list_keys();
  const uint32_t limit = std::clamp<uint32_t>(l.limit() == 0 ? 1000 : l.limit(), 1, 10000);
  wire::Envelope reply;
  auto* r = reply.mutable_list_keys_resp();
  // Numeric id order: from just after `after_key_id` (or from zero) up to the top of the ring.
  std::optional<Id> after;
  if (!l.after_key_id().empty()) after = Id::FromBytes(l.after_key_id());
  if (after && *after == Id::Max()) {
    Reply(from, req.request_id(), std::move(reply));
    return;
  }
  const Id from_id = after ? *after : Id::Max();
  const Id to_id = Id::Max();
  uint32_t n = 0;
  size_t bytes = 0;
  Status s = store_->Scan(from_id, to_id, [&](const Id& id, const wire::Record& rec) {
    if (after && !(*after < id)) return true;
    if (n >= limit || bytes > (8u << 20)) {
      r->set_more(true);
      return false;
    }
    auto* out = r->add_records();
    out->set_key(rec.key());
    out->set_version(rec.version());
    out->set_deleted(rec.deleted());
    if (l.with_values()) out->set_value(rec.value());
    bytes += rec.key().size() + out->value().size();
    ++n;
    return true;
  });
  if (!s.ok()) {
    reply.Clear();
    reply.mutable_error()->set_code(wire::UNAVAILABLE);
    reply.mutable_error()->set_error("cannot list keys: " + s.message());
  }
  Reply(from, req.request_id(), std::move(reply));
}

}  // namespace chord
