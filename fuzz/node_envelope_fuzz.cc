// libFuzzer target: one ChordNode (node/core/chord_node.h) over a MemoryStore, with no I/O, as
// tests/unit/node_script_test.cc drives it: given a ring state, it is fed arbitrary bytes
// parsed as wire::Envelopes, through OnRequest from a Sender chosen by the input and through
// OnResponse as answers to the requests it sent, along with send failures, clock ticks,
// lookups and a leave; after every step its Ready is taken. The input format is in
// fuzz/node_envelope_fuzz.h.
//
// Checked besides the sanitizers: every request the node sends goes to a canonical ring
// address under a request id not already outstanding, and fits in a frame; every reply goes
// back to a connection a request came from, under the id of a request that came from it, and
// fits in a frame; the successor list never holds the node itself or an entry twice, is
// ordered clockwise and at most S long; no record in the store breaks the data limits or sits
// under another key's id.
//
// Seeds: fuzz/corpus/node_envelope_fuzz/ (written by fuzz/make_envelope_seeds.cc). With
// CHORD_FUZZ_TRACE set, every step and what came out of it is printed (to study one input:
// CHORD_FUZZ_TRACE=1 build-fuzz/fuzz/node_envelope_fuzz FILE).
#include "fuzz/node_envelope_fuzz.h"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "node/core/chord_node.h"
#include "node/core/record_order.h"
#include "node/storage/ledger_store.h"
#include "node/storage/memory_store.h"
#include "protocol/frame.h"
#include "protocol/limits.h"
#include "protocol/ring_address.h"

namespace chord::fuzz {
namespace {

// Requests outstanding at once that the harness remembers (the node bounds its own).
constexpr size_t kMaxRemembered = 512;
// Steps of one input (each may make the node do a lot).
constexpr int kMaxSteps = 256;

bool Tracing() {
  static const bool tracing = std::getenv("CHORD_FUZZ_TRACE") != nullptr;
  return tracing;
}

std::string BodyName(const wire::Envelope& e) {
  const auto* field = wire::Envelope::descriptor()->FindFieldByNumber(e.body_case());
  return field == nullptr ? "none" : std::string(field->name());
}

class Harness {
 public:
  explicit Harness(uint8_t setup) : senders_(NodeEnvelopeSenders()) {
    NodeConfig config;
    config.successors = 4;
    config.replicas = (setup & kThreeReplicas) != 0 ? 3 : 1;
    config.rpc_timeout_ms = 300;
    const int ring = setup & 3;
    const std::string self_addr = ring == kJoinedVnode ? TestProcess(0) + "#0" : TestProcess(0);
    self_ = NodeRef::ForAddress(self_addr);
    if ((setup & kWithRecords) != 0) {
      for (int i = 1; i <= 8; ++i) {
        wire::Record r;
        r.set_key("key-" + std::to_string(i));
        r.set_value("value " + std::to_string(i));
        r.set_version((now_.wall_ms - 1000 * static_cast<uint64_t>(i)) << 16);
        (void)store_.Put(Id::Sha1(r.key()), r);
      }
    }
    std::vector<NodeRef> vnodes;
    if (ring == kJoinedVnode) vnodes = {self_, NodeRef::ForAddress(TestProcess(0) + "#1")};
    node_ = std::make_unique<ChordNode>(&ledger_, config, self_, /*seed=*/7, std::move(vnodes));
    if (ring == kAlone) {
      node_->Start(now_, {});
    } else if (ring == kJoining) {
      node_->Start(now_, {TestProcess(1)});
    } else {
      // Every other ring position, clockwise from this node: four successors, the last as
      // predecessor.
      std::vector<NodeRef> others;
      for (int i = 1; i < kTestProcesses; ++i)
        others.push_back(NodeRef::ForAddress(TestProcess(i)));
      if (ring == kJoinedVnode) others.push_back(NodeRef::ForAddress(TestProcess(0) + "#1"));
      std::sort(others.begin(), others.end(), [this](const NodeRef& a, const NodeRef& b) {
        return a.id - self_.id < b.id - self_.id;
      });
      const NodeRef predecessor = others.back();
      others.resize(4);
      node_->InstallRoutingState(now_, others, predecessor, {});
    }
    Drain();
  }

  void Request(uint8_t arg, std::string_view bytes) {
    wire::Envelope envelope;
    if (!Parse(bytes, &envelope)) return;
    const size_t who = arg % senders_.size();
    const ReplyToken token = who + 1;
    Trace("request " + BodyName(envelope) + " id " + std::to_string(envelope.request_id()) +
          " from sender " + std::to_string(who));
    received_[token].insert(envelope.request_id());
    node_->OnRequest(now_, token, std::move(envelope), senders_[who]);
    Drain();
  }

  void Response(uint8_t arg, std::string_view bytes) {
    wire::Envelope envelope;
    if (!Parse(bytes, &envelope)) return;
    if (!outstanding_.empty()) {
      auto it = std::next(outstanding_.begin(), static_cast<long>(arg % outstanding_.size()));
      envelope.set_request_id(*it);
      outstanding_.erase(it);
    }
    Trace("response " + BodyName(envelope) + " to " + std::to_string(envelope.request_id()));
    node_->OnResponse(now_, envelope);
    Drain();
  }

  void Fail(uint8_t arg) {
    if (outstanding_.empty()) return;
    auto it = std::next(outstanding_.begin(), static_cast<long>(arg % outstanding_.size()));
    const uint64_t id = *it;
    outstanding_.erase(it);
    Trace("send failed " + std::to_string(id));
    node_->OnSendFailed(now_, id);
    Drain();
  }

  void Advance(uint8_t arg) {
    const uint64_t ms = arg == 0 ? 1 : 100 * uint64_t{arg};
    now_.mono_ms += ms;
    now_.wall_ms += ms;
    Trace("advance " + std::to_string(ms) + " ms");
    node_->Tick(now_);
    Drain();
  }

  void Lookup(uint8_t arg) {
    const Id target = arg < 16 ? NodeRef::ForAddress(TestProcess(arg % kTestProcesses)).id
                               : Id::Sha1("k" + std::to_string(arg));
    node_->StartLookup(now_, target, /*verify_owner=*/(arg & 1) != 0);
    Drain();
  }

  void Leave() {
    if (left_ || leaving_) return;
    leaving_ = true;
    node_->Leave(now_);
    Drain();
  }

  void Maintenance(uint8_t arg) {
    node_->SetMaintenance(now_, (arg & 1) != 0);
    Drain();
  }

  // The checks that hold at the end of any input.
  void CheckStore() {
    const size_t max_value = node_->config().max_value_bytes;
    const uint64_t max_version_ms = now_.wall_ms + node_->config().max_clock_skew_ms;
    const Id origin;
    const Status s = store_.Scan(origin, origin, [&](const Id& key_id, const wire::Record& r) {
      FUZZ_CHECK(Id::Sha1(r.key()) == key_id, "a record is stored under another key's id");
      FUZZ_CHECK(KeyProblem(r.key()).empty(), "a stored key breaks the key limits");
      FUZZ_CHECK(r.value().size() <= max_value, "a stored value is over the limit");
      FUZZ_CHECK(VersionWallMs(r.version()) <= max_version_ms, "a stored version is too new");
      FUZZ_CHECK(r.writer().empty() || r.writer().size() == static_cast<size_t>(Id::kBytes),
                 "a stored writer is not an id");
      return true;
    });
    FUZZ_CHECK(s.ok(), "scanning the memory store failed");
  }

 private:
  // As the runtime takes a frame: a parseable envelope with a body, else nothing reaches the
  // node (the connection is closed).
  static bool Parse(std::string_view bytes, wire::Envelope* out) {
    return out->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) &&
           out->body_case() != wire::Envelope::BODY_NOT_SET;
  }

  static bool Fits(const wire::Envelope& envelope) {
    std::string frame;
    return EncodeFrame(envelope, &frame);
  }

  static void Trace(const std::string& line) {
    if (Tracing()) std::fprintf(stderr, "%s\n", line.c_str());
  }

  void Drain() {
    Ready ready = node_->TakeReady();
    if (Tracing()) {
      for (size_t k = 0; k < ready.requests.size(); ++k) {
        const wire::Envelope& e = ready.Outgoing(k);
        Trace("  -> " + BodyName(e) + " id " + std::to_string(e.request_id()) + " to " +
              ready.requests[k].to);
      }
      for (const Ready::Reply& r : ready.replies) {
        Trace("  <- " + BodyName(r.envelope) + " id " + std::to_string(r.envelope.request_id()) +
              " to sender " + std::to_string(r.to - 1) +
              (r.envelope.has_error() ? ": " + r.envelope.error().error() : ""));
      }
      for (const Ready::Log& l : ready.logs) Trace("  log " + l.text);
    }
    // What a driver sends, in order (a request may share an earlier one's body).
    for (size_t k = 0; k < ready.requests.size(); ++k) {
      const Ready::Request& r = ready.requests[k];
      FUZZ_CHECK(!r.body_of || *r.body_of < k, "a request sharing the body of a later one");
      const wire::Envelope& e = ready.Outgoing(k);
      FUZZ_CHECK(IsCanonicalRingAddress(r.to), "a request to an address that is not canonical");
      FUZZ_CHECK(e.body_case() != wire::Envelope::BODY_NOT_SET, "a request without body");
      FUZZ_CHECK(Fits(e), "a request too large for a frame");
      const bool fresh = outstanding_.insert(e.request_id()).second;
      FUZZ_CHECK(fresh, "a request id reused while outstanding");
    }
    for (const Ready::Reply& r : ready.replies) {
      auto it = received_.find(r.to);
      FUZZ_CHECK(it != received_.end(), "a reply to a connection nothing came from");
      FUZZ_CHECK(it->second.count(r.envelope.request_id()) != 0,
                 "a reply under an id no request from that connection had");
      FUZZ_CHECK(r.envelope.body_case() != wire::Envelope::BODY_NOT_SET, "a reply without body");
      FUZZ_CHECK(Fits(r.envelope), "a reply too large for a frame");
    }
    for (uint64_t id : ready.expired) outstanding_.erase(id);
    while (outstanding_.size() > kMaxRemembered) outstanding_.erase(outstanding_.begin());
    if (ready.left) left_ = true;
    CheckRing();
  }

  void CheckRing() {
    const RingState& ring = node_->ring();
    const auto& succ = ring.successors;
    FUZZ_CHECK(succ.size() <= static_cast<size_t>(ring.max_successors), "successor list too long");
    std::set<Id> seen;
    const Id* prev = nullptr;
    for (const NodeRef& s : succ) {
      FUZZ_CHECK(s.id != ring.self.id, "the node is its own successor");
      FUZZ_CHECK(seen.insert(s.id).second, "a successor listed twice");
      FUZZ_CHECK(Id::Sha1(s.addr) == s.id, "a successor whose id is not SHA-1 of its address");
      if (prev != nullptr) {
        FUZZ_CHECK(Id::InOpen(s.id, *prev, ring.self.id), "the successor list is out of order");
      }
      prev = &s.id;
    }
    if (ring.predecessor) {
      FUZZ_CHECK(Id::Sha1(ring.predecessor->addr) == ring.predecessor->id,
                 "a predecessor whose id is not SHA-1 of its address");
    }
  }

  const std::vector<Sender> senders_;
  Clock now_{1'000'000, 1'800'000'000'000};
  MemoryStore store_;
  LedgerStore ledger_{&store_};
  NodeRef self_;
  std::unique_ptr<ChordNode> node_;
  std::set<uint64_t> outstanding_;                     // request ids the node waits on
  std::map<ReplyToken, std::set<uint64_t>> received_;  // request ids by connection
  bool leaving_ = false;
  bool left_ = false;
};

// Reads a u16 length and that many bytes (or what is left) at `*pos`.
std::string_view TakeEnvelope(const uint8_t* data, size_t size, size_t* pos) {
  if (*pos + 2 > size) {
    *pos = size;
    return {};
  }
  const size_t length = size_t{data[*pos]} << 8 | data[*pos + 1];
  *pos += 2;
  const size_t n = std::min(length, size - *pos);
  const std::string_view out(reinterpret_cast<const char*>(data + *pos), n);
  *pos += n;
  return out;
}

}  // namespace
}  // namespace chord::fuzz

// Protobuf logs every string field that is not UTF-8; the fuzzer makes many.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chord::fuzz;  // NOLINT(build/namespaces): one function
  if (size < 1) return 0;
  Harness harness(data[0]);
  size_t pos = 1;
  for (int step = 0; step < kMaxSteps && pos < size; ++step) {
    const uint8_t op = data[pos] & 7;
    const uint8_t arg = data[pos] >> 3;
    ++pos;
    switch (op) {
      case kResponse:
        harness.Response(arg, TakeEnvelope(data, size, &pos));
        break;
      case kFail:
        harness.Fail(arg);
        break;
      case kAdvance:
        harness.Advance(arg);
        break;
      case kLookup:
        harness.Lookup(arg);
        break;
      case kLeave:
        harness.Leave();
        break;
      case kMaintenance:
        harness.Maintenance(arg);
        break;
      default:  // kRequest, 7
        harness.Request(arg, TakeEnvelope(data, size, &pos));
        break;
    }
  }
  harness.CheckStore();
  return 0;
}
