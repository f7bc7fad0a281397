// MemberBook: which members a full book keeps. Expected contents are worked out here from the
// addresses the test feeds it.
#include "node/core/membership/member_book.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "node/core/node_config.h"
#include "node/core/node_context.h"
#include "node/storage/ledger_store.h"
#include "node/storage/memory_store.h"
#include "protocol/node_ref.h"

namespace chord {
namespace {

NodeRef Member(const std::string& prefix, int i) {
  return NodeRef::ForAddress(prefix + std::to_string(i) + ":4000");
}

struct Fixture {
  MemoryStore memory;
  LedgerStore store{&memory};
  NodeConfig config;
  NodeContext ctx{config, NodeRef::ForAddress("10.0.0.1:4000"), &store, 1};
  MemberBook book{ctx};

  bool Has(const NodeRef& n) const {
    const auto all = book.members();
    return std::find(all.begin(), all.end(), n) != all.end();
  }
  // A book full of established members: each heard from at `from_ms` and again
  // kEstablishedMs later.
  void FillEstablished(uint64_t from_ms) {
    for (const uint64_t t : {from_ms, from_ms + MemberBook::kEstablishedMs}) {
      ctx.now.mono_ms = t;
      for (int i = 0; i < static_cast<int>(MemberBook::kMaxMembers); ++i)
        book.Saw(Member("10.1.0.", i));
    }
  }
};

// New neighbours of a node whose book is full of long-standing members (a large ring, or a
// book kept by an earlier life) must find a place and keep it while they are heard from,
// pushing out members not heard from since.
TEST(MemberBookTest, NewNeighboursOfAFullBookOfEstablishedMembersFindAPlace) {
  Fixture f;
  f.FillEstablished(0);
  const NodeRef n1 = Member("10.2.0.", 1);
  const NodeRef n2 = Member("10.2.0.", 2);
  const uint64_t from = 2 * MemberBook::kEstablishedMs;
  for (uint64_t t = from; t <= from + MemberBook::kEstablishedMs + 1000; t += 1000) {
    f.ctx.now.mono_ms = t;
    f.book.Saw(n1);
    f.book.Saw(n2);
    ASSERT_TRUE(f.Has(n1) && f.Has(n2)) << "at " << t << " ms";
  }
  EXPECT_EQ(f.book.members().size(), MemberBook::kMaxMembers);
}

// Churn (members heard from once, briefly) pushes out at most kNewcomerSlots of the
// established members, the least recently heard from first.
TEST(MemberBookTest, ChurnPushesOutAtMostTheNewcomerSlotsOfEstablishedMembers) {
  Fixture f;
  f.FillEstablished(0);
  uint64_t t = 3 * MemberBook::kEstablishedMs;
  for (int i = 0; i < 500; ++i) {
    f.ctx.now.mono_ms = t += 1000;
    f.book.Saw(Member("10.3.", i));
  }
  int established_left = 0;
  for (int i = 0; i < static_cast<int>(MemberBook::kMaxMembers); ++i) {
    established_left += f.Has(Member("10.1.0.", i)) ? 1 : 0;
  }
  EXPECT_EQ(established_left,
            static_cast<int>(MemberBook::kMaxMembers - MemberBook::kNewcomerSlots));
  EXPECT_TRUE(f.Has(Member("10.3.", 499)));
}

// A successor list can hold more new members than the newcomer places (vnodes of a scale-out):
// the current neighbours must all stay in the book, round after round, rather than push each
// other out before any of them has been heard from long enough to be established.
TEST(MemberBookTest, CurrentNeighboursAreNotPushedOutByEachOther) {
  Fixture f;
  f.FillEstablished(0);
  std::vector<NodeRef> list;
  for (int i = 0; i < static_cast<int>(MemberBook::kNewcomerSlots) + 8; ++i)
    list.push_back(Member("10.4.0.", i));
  f.ctx.ring.successors = list;
  const uint64_t from = 2 * MemberBook::kEstablishedMs;
  for (uint64_t t = from; t <= from + MemberBook::kEstablishedMs + 1000; t += 1000) {
    f.ctx.now.mono_ms = t;
    f.book.SawAll(list);
  }
  for (const NodeRef& n : list) EXPECT_TRUE(f.Has(n)) << n.addr;
  // Established by now: churn after that does not push them out.
  f.ctx.ring.successors.clear();
  uint64_t t = from + 2 * MemberBook::kEstablishedMs;
  for (int i = 0; i < 200; ++i) {
    f.ctx.now.mono_ms = t += 1000;
    f.book.Saw(Member("10.5.", i));
  }
  int kept = 0;
  for (const NodeRef& n : list) kept += f.Has(n) ? 1 : 0;
  EXPECT_GE(kept, static_cast<int>(list.size()) - static_cast<int>(MemberBook::kNewcomerSlots));
}

}  // namespace
}  // namespace chord
