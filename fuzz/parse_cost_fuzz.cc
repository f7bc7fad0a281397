// libFuzzer target: ParseCost (protocol/parse_cost.h) on arbitrary bytes read as an Envelope.
// Bytes the estimate calls malformed must not parse; whenever the bytes parse, the estimate must
// cover what protobuf counts the parsed message to hold (Message::SpaceUsedLong), and what one
// byte of wire format costs must stay within the estimator's own bound per byte; and under any
// limit the estimate either passes it (when the whole estimate does) or is the whole estimate.
//
// Input: the bytes of one Envelope, at most libFuzzer's -max_len. Seeds:
// fuzz/corpus/parse_cost_fuzz/.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "protocol/chord.pb.h"
#include "protocol/parse_cost.h"

// Protobuf logs every string field that is not UTF-8; the fuzzer makes many.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const chord::ParseCost cost(*chord::wire::Envelope::descriptor());
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  const chord::ParseEstimate estimate = cost.Bound(wire, std::numeric_limits<size_t>::max());
  const size_t whole = estimate.bytes;
  chord::wire::Envelope parsed;
  const bool parses = parsed.ParseFromArray(data, static_cast<int>(size));
  FUZZ_CHECK(!estimate.malformed || !parses, "bytes the parser takes were called malformed");
  if (parses) {
    const size_t held = parsed.SpaceUsedLong();
    FUZZ_CHECK(whole >= held, "the estimate is below what the parsed message holds");
    FUZZ_CHECK(held <= cost.max_bytes_per_wire_byte() * size + sizeof(chord::wire::Envelope),
               "the message holds more per wire byte than the bound per byte");
  }
  for (const size_t limit : {size_t{0}, whole / 2, whole - 1, whole}) {
    const size_t stopped = cost.Bound(wire, limit).bytes;
    if (whole > limit) {
      FUZZ_CHECK(stopped > limit, "an estimate above the limit came back within it");
    } else {
      FUZZ_CHECK(stopped == whole, "an estimate within the limit changed under it");
    }
  }
  return 0;
}
