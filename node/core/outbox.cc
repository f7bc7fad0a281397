#include "node/core/outbox.h"

namespace chord {
namespace {

// The Envelope body name of a request ("get_state", "replicate", ...): its RPC type.
std::string_view BodyName(const wire::Envelope& e) {
  const auto* field = wire::Envelope::descriptor()->FindFieldByNumber(e.body_case());
  return field != nullptr ? std::string_view(field->name()) : std::string_view("none");
}

}  // namespace

void Outbox::Send(const NodeRef& to, wire::Envelope request, uint64_t timeout_ms, OpRef op) {
  const uint64_t id = next_request_id_++;
  request.set_request_id(id);
  request.set_deadline_unix_ms(now_->wall_ms + timeout_ms);
  Pending p;
  p.op = op;
  p.sent_ms = now_->mono_ms;
  p.deadline_ms = now_->mono_ms + timeout_ms;
  p.metrics = &MetricsOf(request);
  ++p.metrics->requests;
  deadlines_.Add(timeout_ms, p.deadline_ms, id);
  pending_.emplace(id, p);
  if (to.addr == self_->addr) {
    loopback_.push_back(Loopback{false, std::move(request)});
    return;
  }
  // Swapped into its place in the list, as a reply is.
  Ready::Request& queued = ready_.requests.emplace_back();
  queued.to = to.addr;
  queued.envelope.Swap(&request);
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
