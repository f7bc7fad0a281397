// Tests for ParseCost (protocol/parse_cost.h): its estimate of the memory parsing a message
// takes, read from the wire format, must cover what the parser holds afterwards (by
// protobuf's own count, Message::SpaceUsedLong) for the encodings that cost the most per byte,
// and stay close to it for the frames the nodes send.
#include "protocol/parse_cost.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "protocol/chord.pb.h"

namespace chord {
namespace {

constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

// The wire bytes of a varint.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

std::string Tag(uint32_t field, uint32_t wire_type) { return Varint(field << 3 | wire_type); }

// A length-delimited field.
std::string Field(uint32_t field, const std::string& bytes) {
  return Tag(field, 2) + Varint(bytes.size()) + bytes;
}

std::string Repeat(const std::string& piece, size_t times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (size_t i = 0; i < times; ++i) out += piece;
  return out;
}

// Envelope fields of the bodies used below (chord.proto).
constexpr uint32_t kReplicate = 40;       // ReplicateRequest: records = 2
constexpr uint32_t kLookupResp = 35;      // LookupResponse: route = 7 (repeated string)
constexpr uint32_t kSyncDigestResp = 43;  // SyncDigestResponse: differing = 2 (packed uint32)
constexpr uint32_t kPut = 30;

struct Case {
  std::string name;
  std::string wire;
};

std::vector<Case> CostlyEncodings() {
  const size_t n = 20000;
  std::vector<Case> cases;
  cases.push_back({"empty records", Field(kReplicate, Repeat(Field(2, ""), n))});
  cases.push_back(
      {"empty strings of a repeated field", Field(kLookupResp, Repeat(Field(7, ""), n))});
  cases.push_back(
      {"one-byte packed elements", Field(kSyncDigestResp, Field(2, Repeat(Varint(1), n)))});
  cases.push_back({"unpacked elements", Field(kSyncDigestResp, Repeat(Tag(2, 0) + Varint(1), n))});
  cases.push_back({"unknown varints", Repeat(Tag(1000, 0) + Varint(1), n)});
  cases.push_back({"unknown empty strings", Repeat(Field(1000, ""), n)});
  cases.push_back({"unknown fields in records",
                   Field(kReplicate, Repeat(Field(2, Tag(99, 0) + Varint(7)), n))});
  // Fields inside an unknown group are unknown even where their numbers are a known field's
  // (Envelope's request_id is field 1, a varint).
  cases.push_back(
      {"a group of fields with known numbers", Tag(1000, 3) + Repeat(Tag(1, 0) + Varint(1), n) +
                                                   Tag(1000, 4) + Field(kPut, Field(1, "k"))});
  cases.push_back({"empty groups", Repeat(Tag(1000, 3) + Tag(1000, 4), n)});
  // A fixed64 where Envelope's request_id (field 1) is a varint: kept as an unknown field
  // (found by fuzz/parse_cost_fuzz.cc).
  cases.push_back({"numbers of another wire type (unknown)",
                   Repeat(Tag(1, 1) + std::string(8, '\x01'), n) + Field(kPut, Field(1, "k"))});
  cases.push_back({"strings with a wire type of a number (unknown)",
                   Field(kPut, Repeat(Tag(1, 0) + Varint(5), n))});
  return cases;
}

TEST(ParseCostTest, TheBoundCoversWhatTheParserHoldsForTheCostliestEncodings) {
  const ParseCost cost(*wire::Envelope::descriptor());
  for (const Case& c : CostlyEncodings()) {
    SCOPED_TRACE(c.name);
    wire::Envelope parsed;
    ASSERT_TRUE(parsed.ParseFromString(c.wire));
    const size_t held = parsed.SpaceUsedLong();
    const ParseEstimate estimate = cost.Bound(c.wire, kNoLimit);
    EXPECT_FALSE(estimate.malformed);
    const size_t bound = estimate.bytes;
    EXPECT_GE(bound, held);
    // Each of these takes several times its size; the most per byte the table allows must
    // cover it.
    EXPECT_GT(held, 2 * c.wire.size());
    EXPECT_LE(held, cost.max_bytes_per_wire_byte() * c.wire.size());
  }
}

TEST(ParseCostTest, TheBoundStaysCloseToWhatTheFramesTheNodesSendTake) {
  const ParseCost cost(*wire::Envelope::descriptor());
  // A hand-over batch of tombstones with one-byte keys (the most records per byte a node
  // sends), a put of a 1 MiB value, a status answer.
  wire::Envelope transfer;
  for (int i = 0; i < 20000; ++i) {
    wire::Record* r = transfer.mutable_transfer()->add_records();
    r->set_key(std::string(1, static_cast<char>(i)));
    r->set_version((uint64_t{1800000000000} << 16) + static_cast<uint64_t>(i));
    r->set_writer(std::string(20, 'w'));
    r->set_deleted(true);
  }
  wire::Envelope put;
  put.mutable_put()->set_key("key");
  put.mutable_put()->set_value(std::string(1 << 20, 'v'));
  wire::Envelope status;
  status.mutable_status_resp()->mutable_self()->set_addr("127.0.0.1:4000");
  for (int i = 0; i < 8; ++i) status.mutable_status_resp()->add_successors()->set_id("id");
  for (const wire::Envelope* e : {&transfer, &put, &status}) {
    SCOPED_TRACE(e->ShortDebugString().substr(0, 60));
    const std::string wire = e->SerializeAsString();
    wire::Envelope parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire));
    const size_t held = parsed.SpaceUsedLong();
    const ParseEstimate estimate = cost.Bound(wire, kNoLimit);
    EXPECT_FALSE(estimate.malformed);
    const size_t bound = estimate.bytes;
    EXPECT_GE(bound, held);
    EXPECT_LE(bound, 2 * held + 1024) << "the estimate is far above what the parser holds";
    // The batch of tombstones stays below 8 times its size: a 4 MiB batch well within the
    // 64 MiB a frame may take.
    if (e == &transfer) {
      EXPECT_LE(bound, 8 * wire.size());
    }
  }
}

TEST(ParseCostTest, AnEstimateAboveTheLimitStopsAboveIt) {
  const ParseCost cost(*wire::Envelope::descriptor());
  const std::string wire = Field(kReplicate, Repeat(Field(2, ""), 100000));
  const size_t whole = cost.Bound(wire, kNoLimit).bytes;
  const size_t limit = whole / 10;
  const size_t stopped = cost.Bound(wire, limit).bytes;
  EXPECT_GT(stopped, limit);
  EXPECT_LT(stopped, whole) << "the scan went on after passing the limit";
}

// Bytes the parser is certain to refuse are malformed: it refuses them only after parsing all
// before the fault, so an estimate of what lies before it would let through a frame of empty
// records whose last length runs one byte past the end.
TEST(ParseCostTest, EncodingsTheParserRefusesAreMalformed) {
  const ParseCost cost(*wire::Envelope::descriptor());
  const std::string records = Repeat(Field(2, ""), 1000);
  const std::string good = Field(kReplicate, records);
  const std::string tail = Repeat(Field(1000, ""), 10);
  const std::vector<std::string> bad = {
      // The records' length one past the end of the frame.
      Tag(kReplicate, 2) + Varint(records.size() + 1) + records,
      // A record whose length runs past the end of the ReplicateRequest holding it (but not
      // past the frame).
      Field(kReplicate, records + Tag(2, 2) + Varint(40)) + tail,
      // Packed elements past the end of their message.
      Field(kSyncDigestResp, Tag(2, 2) + Varint(100) + Repeat(Varint(1), 20)) + tail,
      // A string past the end, a cut varint, a cut fixed64, a wire type that does not exist.
      good + Tag(1000, 2) + Varint(1000) + "x",
      good + "\xff\xff",
      good + Tag(1000, 1) + "1234",
      good + Tag(5, 7),
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE("encoding " + std::to_string(i));
    wire::Envelope parsed;
    EXPECT_FALSE(parsed.ParseFromString(bad[i]));
    EXPECT_TRUE(cost.Bound(bad[i], kNoLimit).malformed);
  }
  EXPECT_FALSE(cost.Bound(good + tail, kNoLimit).malformed);
}

}  // namespace
}  // namespace chord
