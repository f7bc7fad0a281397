// make_envelope_seeds DIR: writes the seed inputs of fuzz/node_envelope_fuzz.cc into DIR, one
// file per scenario (format in fuzz/node_envelope_fuzz.h): serialized envelopes of every
// request type from the senders that may (and some that may not) send them, answers to the
// requests the node sends while joining, replicating and leaving, and some invalid envelopes.
// The files in fuzz/corpus/node_envelope_fuzz/ were written by it; run it again after changing
// the format. Built with the fuzz targets (CHORD_FUZZ=ON).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/node_envelope_fuzz.h"
#include "protocol/messages.h"
#include "protocol/node_ref.h"

namespace chord::fuzz {
namespace {

constexpr uint64_t kWallMs = 1'800'000'000'000;

NodeRef Process(int i) { return NodeRef::ForAddress(TestProcess(i)); }

// The test ring's processes clockwise from 10.0.0.1:4000 (the node under test first).
std::vector<NodeRef> Clockwise() {
  std::vector<NodeRef> all;
  for (int i = 0; i < kTestProcesses; ++i) all.push_back(Process(i));
  const Id self = all[0].id;
  std::sort(all.begin(), all.end(),
            [&](const NodeRef& a, const NodeRef& b) { return a.id - self < b.id - self; });
  return all;
}

// The sender index (NodeEnvelopeSenders) of test process i, when it has one.
uint8_t SenderOf(int process) {
  switch (process) {
    case 1:
      return 1;
    case 2:
      return 2;
    case 5:
      return 3;
    default:
      return 0;
  }
}

int ProcessIndex(const NodeRef& n) {
  for (int i = 0; i < kTestProcesses; ++i) {
    if (Process(i) == n) return i;
  }
  return 0;
}

std::string Bytes(wire::Envelope e, uint64_t request_id) {
  e.set_request_id(request_id);
  return e.SerializeAsString();
}

std::string Req(uint8_t sender, const wire::Envelope& e, uint64_t id) {
  return NodeEnvelopeStep(kRequest, sender, Bytes(e, id));
}

std::string Resp(uint8_t pending, const wire::Envelope& e) {
  return NodeEnvelopeStep(kResponse, pending, Bytes(e, 0));
}

wire::Record Rec(const std::string& key, const std::string& value, uint64_t age_ms,
                 bool deleted = false) {
  wire::Record r;
  r.set_key(key);
  r.set_value(value);
  r.set_version((kWallMs - age_ms) << 16);
  r.set_deleted(deleted);
  return r;
}

// A key that the node under test owns as a joined member: its id in (predecessor, self].
std::string OwnedKey() {
  const std::vector<NodeRef> ring = Clockwise();
  const Id self = ring[0].id;
  const Id pred = ring.back().id;
  for (int i = 0;; ++i) {
    const std::string key = "own-" + std::to_string(i);
    if (Id::InHalfOpen(Id::Sha1(key), pred, self)) return key;
  }
}

wire::Envelope GetStateAnswer(const NodeRef& from, const std::optional<NodeRef>& pred,
                              const std::vector<NodeRef>& succ) {
  wire::Envelope e;
  auto* r = e.mutable_get_state_resp();
  from.ToWire(r->mutable_self());
  if (pred) pred->ToWire(r->mutable_predecessor());
  for (const NodeRef& n : succ) n.ToWire(r->add_successors());
  r->set_joined(true);
  return e;
}

std::vector<std::pair<std::string, std::string>> Seeds() {
  const std::vector<NodeRef> ring = Clockwise();  // ring[0] is the node under test
  const NodeRef& succ = ring[1];
  const NodeRef& pred = ring.back();
  const uint8_t succ_sender = SenderOf(ProcessIndex(succ));
  const uint8_t pred_sender = SenderOf(ProcessIndex(pred));
  const std::string owned = OwnedKey();
  const auto setup = [](uint8_t bits) { return std::string(1, static_cast<char>(bits)); };
  std::vector<std::pair<std::string, std::string>> seeds;

  // Every ring maintenance request, from a member.
  {
    std::string s = setup(kJoined | kWithRecords);
    s += Req(1, msg::GetState(), 1);
    s += Req(1, msg::Ping(), 2);
    s += Req(1, msg::StabilizeNow(), 3);
    s += Req(SenderOf(1), msg::Notify(Process(1), false), 4);
    s += Req(pred_sender, msg::Notify(pred, true), 5);
    s += Req(2, msg::FindNextHop(Id::Sha1("somewhere")), 6);
    wire::Envelope hint;
    Process(2).ToWire(hint.mutable_merge_hint()->mutable_candidate());
    hint.mutable_merge_hint()->set_hops_left(3);
    s += Req(2, hint, 7);
    s += NodeEnvelopeStep(kAdvance, 12);
    s += Resp(0, GetStateAnswer(succ, ring[0], {ring[2], ring[3]}));
    s += NodeEnvelopeStep(kAdvance, 12);
    seeds.emplace_back("ring_requests", s);
  }
  // Client data requests from every kind of client.
  {
    std::string s = setup(kJoined | kThreeReplicas | kWithRecords);
    s += Req(7, msg::Put(owned, "v1"), 1);
    s += Resp(0, msg::Data([] {
                wire::DataResponse r;
                r.set_code(wire::OK);
                return r;
              }()));
    s += Req(8, msg::Get(owned), 2);
    s += Req(8, msg::Lookup("key-1"), 3);
    s += Req(0, msg::Delete("key-2"), 4);
    s += Req(8, msg::Put("key-3", "readers may not write"), 5);
    wire::Envelope status;
    status.mutable_status();
    s += Req(9, status, 6);
    wire::Envelope list;
    list.mutable_list_keys()->set_limit(4);
    list.mutable_list_keys()->set_with_values(true);
    s += Req(6, list, 7);
    s += Req(7, list, 8);
    s += NodeEnvelopeStep(kAdvance, 20);
    seeds.emplace_back("client_requests", s);
  }
  // A put the node owns: the lookup of its owner answered, then its replicas; a direct get; a
  // replica read; a delete whose replica cannot be reached.
  {
    std::string s = setup(kJoined | kThreeReplicas);
    wire::Envelope owner;
    owner.mutable_find_next_hop_resp()->set_done(true);
    for (size_t i = 0; i < 3; ++i) ring[i].ToWire(owner.mutable_find_next_hop_resp()->add_nodes());
    pred.ToWire(owner.mutable_find_next_hop_resp()->mutable_predecessor());
    wire::Envelope ok;
    ok.mutable_replicate_resp()->set_code(wire::OK);
    ok.mutable_replicate_resp()->set_stored(1);
    s += Req(0, msg::Put(owned, "value"), 1);
    s += Resp(0, owner);
    s += Resp(0, ok);
    s += Resp(0, ok);
    s += Req(succ_sender, msg::AsDirect(msg::Get(owned)), 2);
    s += Req(succ_sender, msg::ReplicaGet(owned), 3);
    s += Req(0, msg::Delete(owned), 4);
    s += Resp(0, owner);
    s += Resp(0, ok);
    s += NodeEnvelopeStep(kFail, 0);
    s += NodeEnvelopeStep(kAdvance, 5);
    seeds.emplace_back("owned_put", s);
  }
  // Replication messages from the predecessor (this node holds its copies).
  {
    std::string s = setup(kJoined | kThreeReplicas | kWithRecords);
    s += Req(pred_sender,
             msg::Replicate(pred, {Rec("replica-1", "a", 10), Rec("replica-2", "", 5, true)}), 1);
    s += Req(pred_sender,
             msg::SyncDigest(pred, ring[ring.size() - 2].id, pred.id, std::vector<uint64_t>(4, 7)),
             2);
    s += Req(pred_sender,
             msg::SyncPull(ring[ring.size() - 2].id, pred.id, 4, {0, 1, 2, 3}, 4096, std::nullopt),
             3);
    s += Req(pred_sender, msg::Purge({Rec("replica-2", "", 5, true)}), 4);
    s += Req(pred_sender, msg::ReplicaSet(), 5);
    s += Req(pred_sender, msg::Transfer(pred, {Rec("moved-1", "m", 3)}, true), 6);
    // From a member that speaks for another node: refused.
    s += Req(2, msg::Replicate(pred, {Rec("forged", "f", 1)}), 7);
    s += NodeEnvelopeStep(kAdvance, 25);
    s += NodeEnvelopeStep(kAdvance, 25);
    seeds.emplace_back("replication_requests", s);
  }
  // Joining: answer what the node asks its bootstrap, then the hand-over of its keys.
  {
    std::string s = setup(kJoining | kThreeReplicas);
    wire::Envelope hop;
    hop.mutable_find_next_hop_resp()->set_done(true);
    for (size_t i = 1; i < ring.size(); ++i)
      ring[i].ToWire(hop.mutable_find_next_hop_resp()->add_nodes());
    pred.ToWire(hop.mutable_find_next_hop_resp()->mutable_predecessor());
    s += Resp(0, hop);
    s += Resp(0, GetStateAnswer(succ, pred, {ring[2], ring[3], ring[4]}));
    s += Resp(0, GetStateAnswer(succ, ring[0], {ring[2], ring[3], ring[4]}));
    s += Req(succ_sender, msg::Transfer(succ, {Rec(owned, "handed over", 50)}, true), 1);
    wire::Envelope empty;
    empty.mutable_notify_resp();
    s += Resp(0, empty);
    s += NodeEnvelopeStep(kAdvance, 10);
    s += NodeEnvelopeStep(kFail, 0);
    s += NodeEnvelopeStep(kAdvance, 31);
    seeds.emplace_back("joining", s);
  }
  // A ring of one: data, a lookup, a leave.
  {
    std::string s = setup(kAlone | kWithRecords);
    s += Req(0, msg::Put("alone", "1"), 1);
    s += Req(0, msg::Get("alone"), 2);
    s += NodeEnvelopeStep(kLookup, 17);
    s += NodeEnvelopeStep(kLookup, 3);
    s += NodeEnvelopeStep(kMaintenance, 0);
    s += NodeEnvelopeStep(kAdvance, 30);
    s += NodeEnvelopeStep(kMaintenance, 1);
    s += NodeEnvelopeStep(kLeave, 0);
    s += NodeEnvelopeStep(kAdvance, 30);
    seeds.emplace_back("alone", s);
  }
  // A leave of the node under test, its hand-over answered; a leave notice from a neighbour.
  {
    std::string s = setup(kJoined | kWithRecords);
    s += NodeEnvelopeStep(kLeave, 0);
    wire::Envelope done;
    done.mutable_transfer_resp()->set_code(wire::OK);
    s += Resp(0, done);
    wire::Envelope left;
    left.mutable_leave_resp();
    s += Resp(0, left);
    s += Resp(0, left);
    s += Req(succ_sender, msg::Leave(succ, ring[0], {ring[2], ring[3]}), 1);
    s += NodeEnvelopeStep(kAdvance, 31);
    seeds.emplace_back("leave", s);
  }
  // Vnode #0 of a process of two: its own process speaks, lookups run.
  {
    std::string s = setup(kJoinedVnode | kThreeReplicas);
    const NodeRef other = NodeRef::ForAddress(TestProcess(0) + "#1");
    s += Req(4, msg::Notify(other, false), 1);
    s += Req(4, msg::Replicate(other, {Rec("vnode", "v", 1)}), 2);
    s += Req(0, msg::Put("vnode-key", "v"), 3);
    s += NodeEnvelopeStep(kLookup, 1);
    s += NodeEnvelopeStep(kAdvance, 3);
    s += NodeEnvelopeStep(kAdvance, 3);
    seeds.emplace_back("vnodes", s);
  }
  // What the node must refuse or ignore: envelopes that do not parse or have no body, answers
  // nobody asked for, a request past its deadline, out-of-limit keys and records.
  {
    std::string s = setup(kJoined | kThreeReplicas);
    s += NodeEnvelopeStep(kRequest, 0, std::string("\xff\xff\xff\xff", 4));
    s += NodeEnvelopeStep(kRequest, 0, Bytes(wire::Envelope(), 9));
    s += NodeEnvelopeStep(kResponse, 0, Bytes(msg::Ping(), 12345));
    wire::Envelope late = msg::Ping();
    late.set_deadline_unix_ms(kWallMs - 60'000);
    s += Req(1, late, 1);
    s += Req(0, msg::Put(std::string(2000, 'k'), "v"), 2);
    s += Req(0, msg::Put("", "v"), 3);
    s += Req(1, msg::Replicate(Process(1), {Rec("future", "f", 0)}), 4);
    wire::Envelope future = msg::Replicate(Process(1), {Rec("future", "f", 0)});
    future.mutable_replicate()->mutable_records(0)->set_version((kWallMs + 3'600'000) << 16);
    s += Req(1, future, 5);
    s += Req(9, msg::GetState(), 6);
    s += Req(5, msg::Notify(Process(2), false), 7);
    wire::Envelope bad_node;
    bad_node.mutable_notify()->mutable_node()->set_addr("10.0.0.2:4000");
    bad_node.mutable_notify()->mutable_node()->set_id(std::string(20, 'x'));
    s += Req(0, bad_node, 8);
    s += NodeEnvelopeStep(kAdvance, 1);
    seeds.emplace_back("invalid", s);
  }
  return seeds;
}

}  // namespace
}  // namespace chord::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_envelope_seeds DIR\n";
    return 2;
  }
  for (const auto& [name, bytes] : chord::fuzz::Seeds()) {
    const std::string path = std::string(argv[1]) + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::cerr << "cannot write " << path << "\n";
      return 1;
    }
    std::cout << path << " (" << bytes.size() << " bytes)\n";
  }
  return 0;
}
