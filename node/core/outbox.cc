#include "node/core/outbox.h"

namespace chord {
namespace {

// The Envelope body name of a request ("get_state", "replicate", ...): its RPC type.
std::string_view BodyName(const wire::Envelope& e) {
  const auto* field = wire::Envelope::descriptor()->FindFieldByNumber(e.body_case());
  return field != nullptr ? std::string_view(field->name()) : std::string_view("none");
}

}  // namespace

void Outbox::Register(wire::Envelope& request, RpcTypeMetrics& metrics, uint64_t timeout_ms,
                      OpRef op) {
  const uint64_t id = next_request_id_++;
  request.set_request_id(id);
  request.set_deadline_unix_ms(now_->wall_ms + timeout_ms);
  Pending p;
  p.op = op;
  p.sent_ms = now_->mono_ms;
  p.deadline_ms = now_->mono_ms + timeout_ms;
  p.metrics = &metrics;
  ++p.metrics->requests;
  deadlines_.Add(timeout_ms, p.deadline_ms, id);
  pending_.emplace(id, p);
}

void Outbox::Send(const NodeRef& to, wire::Envelope request, uint64_t timeout_ms, OpRef op) {
  Register(request, MetricsOf(request), timeout_ms, op);
  if (to.addr == self_->addr) {
    loopback_.push_back(Loopback{false, std::move(request)});
    return;
  }
  // Swapped into its place in the list, as a reply is.
  Ready::Request& queued = ready_.requests.emplace_back();
  queued.to = to.addr;
  queued.envelope.Swap(&request);
}

void Outbox::SendToEach(std::span<const NodeRef> targets, wire::Envelope request,
                        uint64_t timeout_ms, OpRef op) {
  RpcTypeMetrics& metrics = MetricsOf(request);
  std::optional<size_t> holder;  // the request in ready_.requests that holds the message
  for (size_t k = 0; k < targets.size(); ++k) {
    const NodeRef& to = targets[k];
    const OpRef answer_to = op.WithStep(op.step, static_cast<uint16_t>(op.index + k));
    if (to.addr == self_->addr) {
      // A request to this node goes through the loopback queue, as a copy of its own.
      wire::Envelope copy = holder ? ready_.requests[*holder].envelope : request;
      Register(copy, metrics, timeout_ms, answer_to);
      loopback_.push_back(Loopback{false, std::move(copy)});
      continue;
    }
    Ready::Request& queued = ready_.requests.emplace_back();
    queued.to = to.addr;
    if (!holder) {
      Register(request, metrics, timeout_ms, answer_to);
      queued.envelope.Swap(&request);
      holder = ready_.requests.size() - 1;
      continue;
    }
    // Only this request's id and deadline: its body is the holder's.
    Register(queued.envelope, metrics, timeout_ms, answer_to);
    queued.body_of = holder;
    ready_.requests[*holder].lent = true;
  }
}

void Outbox::Reply(ReplyToken to, uint64_t request_id, wire::Envelope reply) {
  reply.set_request_id(request_id);
  if (to == kLoopbackToken) {
    loopback_.push_back(Loopback{true, std::move(reply)});
    return;
  }
  // Swapped into its place in the list: no temporary Reply to move and destroy.
  Ready::Reply& queued = ready_.replies.emplace_back();
  queued.to = to;
  queued.envelope.Swap(&reply);
}

void Outbox::Log(LogLevel level, std::string text) {
  ready_.logs.push_back(Ready::Log{level, std::move(text)});
}

std::optional<OpRef> Outbox::Complete(uint64_t request_id, bool answered) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return std::nullopt;
  const Pending p = it->second;
  pending_.erase(it);  // its deadline entry is dropped when it reaches the front
  if (!answered) {
    ++p.metrics->timeouts;
    ++counters_->rpc_timeouts;
  } else {
    const uint64_t elapsed_ms = now_->mono_ms > p.sent_ms ? now_->mono_ms - p.sent_ms : 0;
    p.metrics->latency_seconds.Observe(static_cast<double>(elapsed_ms) / 1000.0);
  }
  return p.op;
}

std::vector<OpRef> Outbox::TakeExpired() {
  std::vector<OpRef> out;
  deadlines_.PopExpired(
      now_->mono_ms, [this](uint64_t id) { return pending_.count(id) != 0; },
      [this, &out](uint64_t id) {
        if (auto op = Complete(id, /*answered=*/false)) {
          out.push_back(*op);
          ready_.expired.push_back(id);
        }
      });
  return out;
}

std::optional<uint64_t> Outbox::next_deadline() {
  return deadlines_.Earliest([this](uint64_t id) { return pending_.count(id) != 0; });
}

RpcTypeMetrics& Outbox::MetricsOf(const wire::Envelope& request) {
  // NodeMetrics::rpc is a std::map: the entries stay where they are.
  const auto body = static_cast<size_t>(request.body_case());
  if (body >= metrics_by_body_.size()) metrics_by_body_.resize(body + 1, nullptr);
  RpcTypeMetrics*& m = metrics_by_body_[body];
  if (m == nullptr) m = &metrics_->Rpc(BodyName(request));
  return *m;
}

Outbox::Loopback Outbox::TakeLoopback() {
  Loopback l = std::move(loopback_.front());
  loopback_.pop_front();
  return l;
}

Ready Outbox::TakeReady() {
  Ready out = std::move(ready_);
  ready_ = Ready{};
  return out;
}

}  // namespace chord
