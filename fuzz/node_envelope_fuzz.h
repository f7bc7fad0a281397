// The input format of fuzz/node_envelope_fuzz.cc, shared with the program that writes its
// seeds (fuzz/make_envelope_seeds.cc), so that both agree on it. Fuzz code only.
//
// An input is one setup byte, then steps until the input ends:
//
//   setup:  bits 0-1  the ring: 0 alone (a ring of one), 1 a joined member with four
//                     neighbours on each side, 2 joining through a bootstrap, 3 a joined
//                     member that is vnode #0 of a process of two
//           bit 2     three replicas (else one)
//           bit 3     eight records key-1 .. key-8 stored before the start
//   step:   an op byte; op & 7 says what, op >> 3 (0..31) is its argument A:
//     kRequest   u16 big-endian length, that many bytes of a serialized Envelope: a request
//                from sender A (NodeEnvelopeSenders(), taken modulo its size)
//     kResponse  u16 length and Envelope bytes: the answer to outstanding request A (modulo
//                the count; its request id is set to that request's; none outstanding: the
//                envelope's own id)
//     kFail      outstanding request A could not be sent
//     kAdvance   the clock moves A * 100 ms (A = 0: 1 ms), then Tick
//     kLookup    a lookup of ring position A of the test processes (A >= 16: of key "kA"),
//                verifying the owner when A is odd
//     kLeave     a graceful leave
//     kMaintenance  the periodic round off (A even) or on
// A length past the end of the input takes what is left.
#ifndef CHORD_FUZZ_NODE_ENVELOPE_FUZZ_H_
#define CHORD_FUZZ_NODE_ENVELOPE_FUZZ_H_

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/sender.h"

namespace chord::fuzz {

enum NodeEnvelopeOp : uint8_t {
  kRequest = 0,
  kResponse = 1,
  kFail = 2,
  kAdvance = 3,
  kLookup = 4,
  kLeave = 5,
  kMaintenance = 6,
  // 7 is read as kRequest.
};

enum NodeEnvelopeSetup : uint8_t {
  kAlone = 0,
  kJoined = 1,
  kJoining = 2,
  kJoinedVnode = 3,
  kThreeReplicas = 1 << 2,
  kWithRecords = 1 << 3,
};

// The processes of the test ring: 10.0.0.1:4000 (the node under test) to 10.0.0.6:4000.
inline constexpr int kTestProcesses = 6;
inline std::string TestProcess(int i) { return "10.0.0." + std::to_string(i + 1) + ":4000"; }

// Who a request can come from, as argument A of kRequest picks it.
inline std::vector<Sender> NodeEnvelopeSenders() {
  return {
      Sender{},                              // 0: unchecked (insecure mode)
      Sender::Member(TestProcess(1), 1),     // 1: a neighbour
      Sender::Member(TestProcess(2), 1),     // 2
      Sender::Member(TestProcess(5), 1),     // 3
      Sender::Member(TestProcess(0), 2),     // 4: this node's own process
      Sender::Member("10.0.0.99:4000", 4),   // 5: a member the ring does not know
      Sender::Client(Sender::Role::kAdmin),  // 6
      Sender::Client(Sender::Role::kWriter),
      Sender::Client(Sender::Role::kReader),
      Sender::Client(Sender::Role::kNobody),
  };
}

// One step, for writing seeds: the op byte, then for requests and responses the length and
// the envelope bytes.
inline std::string NodeEnvelopeStep(NodeEnvelopeOp op, uint8_t arg,
                                    const std::string& envelope = "") {
  std::string out(1, static_cast<char>(op | (arg << 3)));
  if (op == kRequest || op == kResponse) {
    out += static_cast<char>(envelope.size() >> 8);
    out += static_cast<char>(envelope.size() & 0xff);
    out += envelope;
  }
  return out;
}

}  // namespace chord::fuzz

#endif  // CHORD_FUZZ_NODE_ENVELOPE_FUZZ_H_
