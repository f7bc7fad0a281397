// Tests for RequestBudget::CostOf (node/core/request_budget.h): what a request is charged while
// a node holds it must cover what holding the parsed request takes, by protobuf's own count
// (Message::SpaceUsedLong), also for a request padded with many empty fields this build does
// not know, each of which the parser holds apart (some 35 bytes held for every 2 sent).
#include "node/core/request_budget.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "protocol/messages.h"

namespace chord {
namespace {

// `count` empty length-delimited fields numbered 1000, as a peer would send them.
std::string EmptyUnknownFields(size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += std::string("\xc2\x3e\x00", 3);  // field 1000
  return out;
}

// The serialized `request` with `padding` appended to its top level, parsed again as a node
// would.
wire::Envelope Padded(const wire::Envelope& request, const std::string& padding) {
  const std::string wire = request.SerializeAsString() + padding;
  wire::Envelope out;
  EXPECT_TRUE(out.ParseFromString(wire));
  return out;
}

TEST(RequestBudgetTest, ARequestPaddedWithEmptyUnknownFieldsIsChargedWhatItHolds) {
  const std::string padding = EmptyUnknownFields(20000);
  wire::Envelope put = msg::Put("key", "value");
  put.mutable_put()->GetReflection()->MutableUnknownFields(put.mutable_put())->AddVarint(1001, 1);
  wire::Envelope get = msg::Get("key");
  get.mutable_get()->mutable_asker()->set_addr("127.0.0.1:4000");
  for (const wire::Envelope* request : {&put, &get}) {
    SCOPED_TRACE(request->ShortDebugString());
    const wire::Envelope parsed = Padded(*request, padding);
    ASSERT_GT(RequestBudget::UnknownFieldCount(parsed), 0u);
    EXPECT_GE(RequestBudget::CostOf(parsed), parsed.SpaceUsedLong());
    // Without padding, a request is charged its size and the fixed share.
    EXPECT_GE(RequestBudget::CostOf(*request), request->SpaceUsedLong());
  }
}

// An unknown group holds its fields apart too: a request padded with one group of 20,000 empty
// varints (two bytes each) is charged what it holds.
TEST(RequestBudgetTest, FieldsInsideAnUnknownGroupCount) {
  std::string group = "\xc3\x3e";                                       // field 1000, start group
  for (int i = 0; i < 20000; ++i) group += std::string("\x08\x00", 2);  // field 1, varint 0
  group += "\xc4\x3e";                                                  // field 1000, end group
  const wire::Envelope parsed = Padded(msg::Put("key", "value"), group);
  EXPECT_GE(RequestBudget::UnknownFieldCount(parsed), 20001u);
  EXPECT_GE(RequestBudget::CostOf(parsed), parsed.SpaceUsedLong());
}

// The body's own unknown fields and the asker's count too: a get whose asker carries the
// padding, parsed as a node would.
TEST(RequestBudgetTest, UnknownFieldsInsideTheBodyCount) {
  wire::Envelope get = msg::Get("key");
  wire::NodeInfo asker;
  asker.set_addr("127.0.0.1:4000");
  std::string asker_wire = asker.SerializeAsString() + EmptyUnknownFields(5000);
  std::string get_wire = get.get().SerializeAsString() + EmptyUnknownFields(5000);
  get_wire += std::string("\x42", 1);  // GetRequest.asker = 8, length-delimited
  for (uint64_t n = asker_wire.size();; n >>= 7) {
    get_wire.push_back(static_cast<char>(n >= 0x80 ? (n & 0x7f) | 0x80 : n));
    if (n < 0x80) break;
  }
  get_wire += asker_wire;
  wire::Envelope parsed;
  ASSERT_TRUE(parsed.mutable_get()->ParseFromString(get_wire));
  EXPECT_EQ(RequestBudget::UnknownFieldCount(parsed), 10000u);
  EXPECT_GE(RequestBudget::CostOf(parsed), parsed.SpaceUsedLong());
}

}  // namespace
}  // namespace chord
