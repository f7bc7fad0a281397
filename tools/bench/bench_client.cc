#include "tools/bench/bench_client.h"

#include <utility>

namespace chord::bench {
namespace {

const char* CodeName(wire::Code code) {
  switch (code) {
    case wire::OK:
      return "OK";
    case wire::NOT_FOUND:
      return "NOT_FOUND";
    case wire::NOT_OWNER:
      return "NOT_OWNER";
    case wire::INVALID:
      return "INVALID";
    case wire::UNAVAILABLE:
      return "UNAVAILABLE";
    case wire::SHUTTING_DOWN:
      return "SHUTTING_DOWN";
    default:
      return "an unknown code";
  }
}

// The outcome of a node's answer to a data request.
OpOutcome FromAnswer(const std::string& addr, const Result<wire::Envelope>& answer) {
  OpOutcome out;
  if (!answer.ok()) {
    out.error = answer.status().message();
    out.not_found = answer.status().IsNotFound();
    return out;
  }
  if (!answer->has_data_resp()) {
    out.error = addr +
                " answered a data request with an unexpected message; is it a chord-node "
                "of the same version?";
    return out;
  }
  const wire::DataResponse& d = answer->data_resp();
  out.hops = d.hops();
  if (d.code() == wire::OK) {
    out.ok = true;
    return out;
  }
  out.not_found = d.code() == wire::NOT_FOUND;
  out.error = addr + " answered " + CodeName(d.code());
  if (!d.error().empty()) out.error += ": " + d.error();
  return out;
}

}  // namespace

BenchClient::BenchClient(std::vector<std::string> nodes, size_t first, uint64_t timeout_ms)
    : nodes_(std::move(nodes)), timeout_ms_(timeout_ms) {
  if (!nodes_.empty()) next_node_ = first % nodes_.size();
}

BenchClient::BenchClient(OwnerRouter router, uint64_t timeout_ms)
    : router_(std::move(router)), timeout_ms_(timeout_ms) {}

ChordClient& BenchClient::ClientFor(const std::string& addr) {
  std::unique_ptr<ChordClient>& client = clients_[addr];
  if (!client) client = std::make_unique<ChordClient>(addr, timeout_ms_);
  return *client;
}

OpOutcome BenchClient::Get(const std::string& key) {
  wire::Envelope request;
  request.mutable_get()->set_key(key);
  return Send(std::move(request));
}

OpOutcome BenchClient::Put(const std::string& key, const std::string& value) {
  wire::Envelope request;
  request.mutable_put()->set_key(key);
  request.mutable_put()->set_value(value);
  return Send(std::move(request));
}

OpOutcome BenchClient::Send(wire::Envelope request) {
  return router_ ? SendDirect(std::move(request)) : SendRouted(std::move(request));
}

OpOutcome BenchClient::SendRouted(wire::Envelope request) {
  if (nodes_.empty()) {
    OpOutcome out;
    out.error = "no node to send to";
    return out;
  }
  const std::string& addr = nodes_[next_node_];
  next_node_ = (next_node_ + 1) % nodes_.size();
  return FromAnswer(addr, ClientFor(addr).Call(std::move(request)));
}

OpOutcome BenchClient::SendDirect(wire::Envelope request) {
  const std::string key = request.has_get() ? request.get().key() : request.put().key();
  if (request.has_get()) {
    request.mutable_get()->set_direct(true);
  } else {
    request.mutable_put()->set_direct(true);
  }
  OpOutcome out;
  out.error = "the ring copy is empty";
  uint32_t redirects = 0;
  std::string target = router_->size() > 0 ? router_->OwnerOf(key) : std::string();
  for (int attempt = 0; attempt < kMaxDirectAttempts && !target.empty(); ++attempt) {
    Result<wire::Envelope> answer = ClientFor(target).Call(request);
    out = FromAnswer(target, answer);
    out.redirects = redirects;
    if (!answer.ok() || !answer->has_data_resp()) return out;
    const wire::DataResponse& d = answer->data_resp();
    if (d.code() != wire::NOT_OWNER && d.code() != wire::SHUTTING_DOWN) return out;
    // The ring has changed since the copy was taken: take a new one. Should the new copy
    // still name the node that refused (the ring has not settled yet), follow its hint.
    ++redirects;
    const std::string refused = target;
    if (Status s = router_->Refresh(); !s.ok()) {
      out.error += " (and " + s.message() + ")";
    }
    target = router_->size() > 0 ? router_->OwnerOf(key) : std::string();
    if (target == refused && d.has_hint() && !d.hint().addr().empty()) target = d.hint().addr();
  }
  return out;
}

}  // namespace chord::bench
