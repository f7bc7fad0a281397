// TombstonePurge's missing members, driven directly (no network): who counts as missing, who a
// hand-over carries and who it never counts, the probes (their timing, how many, what their
// answers do) and the bounds on what is remembered.
#include "node/core/replication/tombstone_purge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "node/core/hand_over.h"
#include "node/core/missing_members.h"
#include "node/core/node_config.h"
#include "node/core/node_context.h"
#include "node/core/ready.h"
#include "node/storage/ledger_store.h"
#include "node/storage/memory_store.h"
#include "protocol/messages.h"
#include "protocol/node_ref.h"

namespace chord {
namespace {

bool Names(const MissingList& list, const std::string& addr) {
  return std::any_of(list.members.begin(), list.members.end(),
                     [&addr](const MissingMember& m) { return m.member.addr == addr; });
}

struct PurgeFixture {
  PurgeFixture() : store(&memory), ctx(Config(), NodeRef::ForAddress("10.0.3.1:4000"), &store, 1) {}
  static NodeConfig Config() {
    NodeConfig c;
    c.successors = 4;
    c.replicas = 3;
    return c;
  }
  MemoryStore memory;
  LedgerStore store;
  NodeContext ctx;
  TombstonePurge purge{ctx};
};

// Answers every probe out now as `differing` says (the pieces where the member holds
// anything); returns how many there were, and whom they asked in `asked`. Each probe must be
// a digest of this node's range as it is now, with every piece empty.
int AnswerProbes(PurgeFixture& f, const std::vector<uint32_t>& differing,
                 std::vector<std::string>* asked = nullptr) {
  Ready ready = f.ctx.out.TakeReady();
  int probes = 0;
  for (auto& r : ready.requests) {
    if (!r.envelope.has_sync_digest()) continue;
    ++probes;
    if (asked != nullptr) asked->push_back(r.to);
    const wire::SyncDigestRequest& digest = r.envelope.sync_digest();
    EXPECT_EQ(Id::FromBytes(digest.from_id()), f.ctx.ring.RangeStart());
    EXPECT_EQ(Id::FromBytes(digest.to_id()), std::optional<Id>(f.ctx.ring.self.id));
    EXPECT_FALSE(digest.digests().empty());
    for (uint64_t d : digest.digests()) EXPECT_EQ(d, 0u);
    auto op = f.ctx.out.Complete(r.envelope.request_id(), true);
    EXPECT_TRUE(op.has_value());
    if (!op) continue;
    wire::Envelope reply;
    reply.mutable_sync_digest_resp()->set_code(wire::OK);
    for (uint32_t piece : differing) reply.mutable_sync_digest_resp()->add_differing(piece);
    f.purge.OnRpc(*op, &reply);
  }
  return probes;
}

// The spacing of a member's probes.
uint64_t ProbeSpacingMs(const PurgeFixture& f) {
  return std::max(f.ctx.config.anti_entropy_ms, f.ctx.config.rpc_timeout_ms);
}

std::vector<NodeRef> Members(int n) {
  std::vector<NodeRef> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(NodeRef::ForAddress("10.0.5." + std::to_string(i) + ":4000"));
  }
  return out;
}

// A replica taken off the successor list is handed over as missing at once: a join in the
// same maintenance round, before NoteGroup notes it, must not lose it.
TEST(TombstonePurgeTest, AReplicaOffTheListIsHandedOverBeforeTheRoundNotesIt) {
  PurgeFixture f;
  const NodeRef a = NodeRef::ForAddress("10.0.3.2:4000");
  const NodeRef b = NodeRef::ForAddress("10.0.3.3:4000");
  const NodeRef c = NodeRef::ForAddress("10.0.3.4:4000");
  f.ctx.ring.successors = {a, b, c};
  f.purge.NoteGroup({a, b}, f.ctx.ring);
  EXPECT_TRUE(f.purge.Missing().members.empty());
  EXPECT_FALSE(f.purge.MembersMissing());
  // `a` is taken off the list (dead); no round has run since.
  f.ctx.ring.successors = {b, c};
  const auto handed = f.purge.Missing();
  EXPECT_TRUE(Names(handed, a.addr));
  EXPECT_FALSE(Names(handed, b.addr));
  // The next round notes it, pushed out of the group or not.
  f.purge.NoteGroup({b, c}, f.ctx.ring);
  EXPECT_TRUE(f.purge.MembersMissing());
  EXPECT_EQ(f.purge.Missing().members.size(), 1u);
}

// What a hand-over brings is missing here for as long as it was there (its day does not start
// again), except a position of this node's own process (it shares this store) and one missing
// there longer than a day; back in the group, it is no longer missing. The sender's overflow
// goes along.
TEST(TombstonePurgeTest, MembersHandedOverAreMissingForAsLongAsThereUntilBackInTheGroup) {
  PurgeFixture f;
  const NodeRef a = NodeRef::ForAddress("10.0.3.2:4000");
  const NodeRef old = NodeRef::ForAddress("10.0.3.5:4000");
  const NodeRef own{Id::Sha1("elsewhere"), "10.0.3.1:4000"};
  const uint64_t day = TombstonePurge::kForgetMissingMs;
  f.ctx.now.mono_ms = day;
  f.purge.NoteHandedOver(MissingList{{{a, 1000}, {a, 5000}, {own, 0}, {old, day}}, 0});
  EXPECT_TRUE(f.purge.MembersMissing());
  const auto missing = f.purge.Missing();
  ASSERT_EQ(missing.members.size(), 1u);
  EXPECT_EQ(missing.members[0].member.addr, a.addr);
  EXPECT_EQ(missing.members[0].missing_for_ms, 5000u);
  EXPECT_EQ(missing.overflow_ms_left, 0u);
  // Forgotten a day after it went missing there, not a day after it was handed over.
  f.ctx.now.mono_ms = 2 * day - 5000;
  EXPECT_FALSE(f.purge.MembersMissing());
  // Handed over again, then back in the group.
  f.purge.NoteHandedOver(MissingList{{{a, 0}}, 0});
  const uint64_t returns = f.purge.returns();
  f.ctx.ring.successors = {a};
  f.purge.NoteGroup({a}, f.ctx.ring);
  EXPECT_FALSE(f.purge.MembersMissing());
  EXPECT_EQ(f.purge.returns(), returns + 1);
  // A sender that could not remember everyone: nothing is purged here for as long.
  f.purge.NoteHandedOver(MissingList{{}, 3000});
  EXPECT_TRUE(f.purge.MembersMissing());
  EXPECT_GT(f.purge.Missing().overflow_ms_left, 0u);
  f.ctx.now.mono_ms += 3000;
  EXPECT_FALSE(f.purge.MembersMissing());
}

// Only a neighbour's hand-over is read for missing members (the successor's on our join, the
// predecessor's on its leave); a stranger's names nobody, and a list longer than anyone keeps
// counts as overflow.
TEST(TombstonePurgeTest, OnlyANeighboursHandOverNamesMissingMembers) {
  PurgeFixture f;
  HandOver hand_over(f.ctx);
  hand_over.set_missing_members(&f.purge);
  const NodeRef succ = NodeRef::ForAddress("10.0.3.2:4000");
  const NodeRef pred = NodeRef::ForAddress("10.0.3.9:4000");
  const NodeRef stranger = NodeRef::ForAddress("10.0.3.7:4000");
  const NodeRef named = NodeRef::ForAddress("10.0.3.5:4000");
  f.ctx.ring.state = NodeState::kJoined;
  f.ctx.ring.successors = {succ};
  f.ctx.ring.predecessor = pred;
  const auto transfer = [&](const NodeRef& from, int names) {
    wire::Envelope e = msg::Transfer(from, {}, true);
    for (int i = 0; i < names; ++i) {
      auto* m = e.mutable_transfer()->add_missing();
      (i == 0 ? named : NodeRef::ForAddress("10.0.4." + std::to_string(i) + ":4000"))
          .ToWire(m->mutable_node());
    }
    hand_over.HandleTransfer(1, e);
  };
  transfer(stranger, 1);
  EXPECT_FALSE(f.purge.MembersMissing());
  transfer(pred, 1);
  EXPECT_TRUE(Names(f.purge.Missing(), named.addr));
  PurgeFixture g;
  HandOver other(g.ctx);
  other.set_missing_members(&g.purge);
  g.ctx.ring.state = NodeState::kJoined;
  g.ctx.ring.successors = {succ};
  wire::Envelope e = msg::Transfer(succ, {}, true);
  for (int i = 0; i < 200; ++i) {
    NodeRef::ForAddress("10.0.4." + std::to_string(i) + ":4000")
        .ToWire(e.mutable_transfer()->add_missing()->mutable_node());
  }
  other.HandleTransfer(1, e);
  EXPECT_GT(g.purge.Missing().overflow_ms_left, 0u);
}

// A missing member is probed once what was sent to it has had time to arrive, with a digest
// of this node's range whose every piece is empty; an answer naming pieces (it still holds
// copies) keeps it missing past kForgetMissingMs from when it went missing; an answer naming
// none forgets it.
TEST(TombstonePurgeTest, AProbeAnsweredWithCopiesKeepsTheMemberAndAnEmptyOneForgetsIt) {
  PurgeFixture f;
  const NodeRef a = NodeRef::ForAddress("10.0.3.2:4000");
  const NodeRef b = NodeRef::ForAddress("10.0.3.3:4000");
  f.ctx.ring.predecessor = NodeRef::ForAddress("10.0.3.9:4000");
  f.ctx.ring.successors = {a, b};
  f.purge.NoteGroup({a, b}, f.ctx.ring);
  f.ctx.ring.successors = {b};
  f.purge.NoteGroup({b}, f.ctx.ring);
  ASSERT_TRUE(f.purge.MembersMissing());
  std::vector<std::string> asked;
  const auto probe = [&f, &asked](std::vector<uint32_t> differing) {
    return AnswerProbes(f, differing, &asked);
  };
  // Not before what was in flight to it had its deadline.
  f.ctx.now.mono_ms = f.ctx.config.transfer_timeout_ms - 1;
  f.purge.NoteGroup({b}, f.ctx.ring);
  EXPECT_EQ(probe({}), 0);
  f.ctx.now.mono_ms = f.ctx.config.transfer_timeout_ms;
  f.purge.NoteGroup({b}, f.ctx.ring);
  EXPECT_EQ(probe({0}), 1);
  // Still holding copies: remembered past a day from when it went missing.
  f.ctx.now.mono_ms = TombstonePurge::kForgetMissingMs + 1;
  EXPECT_TRUE(f.purge.MembersMissing());
  // Holding nothing of the range, but a round under way started with it (it may still be sent
  // copies): not taken.
  f.purge.NoteComparing({a, b});
  f.purge.NoteGroup({b}, f.ctx.ring);
  EXPECT_EQ(probe({}), 1);
  EXPECT_TRUE(f.purge.MembersMissing());
  // Holding nothing of the range, no round with it: forgotten.
  f.purge.NoteComparing({});
  f.ctx.now.mono_ms += ProbeSpacingMs(f);
  f.purge.NoteGroup({b}, f.ctx.ring);
  EXPECT_EQ(probe({}), 1);
  EXPECT_FALSE(f.purge.MembersMissing());
  EXPECT_EQ(asked, std::vector<std::string>(3, a.addr));
}

// More members leaving the group than are remembered: nothing is purged for a day, even once
// every remembered one is back, and the hand-overs carry the overflow.
TEST(TombstonePurgeTest, MoreMissingMembersThanRememberedStopPurgesForADay) {
  PurgeFixture f;
  f.ctx.ring.predecessor = NodeRef::ForAddress("10.0.3.9:4000");
  const std::vector<NodeRef> group = Members(70);
  f.purge.NoteGroup(group, f.ctx.ring);
  EXPECT_FALSE(f.purge.MembersMissing());
  f.purge.NoteGroup({}, f.ctx.ring);
  const MissingList list = f.purge.Missing();
  EXPECT_EQ(list.members.size(), 64u);
  EXPECT_GT(list.overflow_ms_left, 0u);
  // All back: none is missing, but those not remembered may hold deleted values still.
  f.ctx.ring.successors = group;
  f.purge.NoteGroup(group, f.ctx.ring);
  EXPECT_TRUE(f.purge.Missing().members.empty());
  EXPECT_TRUE(f.purge.MembersMissing());
  f.ctx.now.mono_ms = TombstonePurge::kForgetMissingMs - 1;
  EXPECT_TRUE(f.purge.MembersMissing());
  f.ctx.now.mono_ms = TombstonePurge::kForgetMissingMs;
  EXPECT_FALSE(f.purge.MembersMissing());
}

// A maintenance round sends at most four probes; the rest go in the next rounds, and a member
// with a probe in flight is not probed again.
TEST(TombstonePurgeTest, ARoundProbesAtMostFourMissingMembers) {
  PurgeFixture f;
  f.ctx.ring.predecessor = NodeRef::ForAddress("10.0.3.9:4000");
  const std::vector<NodeRef> group = Members(6);
  f.purge.NoteGroup(group, f.ctx.ring);
  f.purge.NoteGroup({}, f.ctx.ring);
  f.ctx.now.mono_ms = f.ctx.config.transfer_timeout_ms;
  std::vector<std::string> first;
  std::vector<std::string> second;
  f.purge.NoteGroup({}, f.ctx.ring);
  Ready ready = f.ctx.out.TakeReady();
  for (auto& r : ready.requests) {
    if (r.envelope.has_sync_digest()) first.push_back(r.to);
  }
  EXPECT_EQ(first.size(), 4u);
  f.purge.NoteGroup({}, f.ctx.ring);
  EXPECT_EQ(AnswerProbes(f, {0}, &second), 2);
  // Every member probed once.
  std::vector<std::string> all = first;
  all.insert(all.end(), second.begin(), second.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), group.size());
  // A probe's spacing later all six are due again, but the first four still have their probe
  // out (never answered): only the two answered ones are probed.
  f.ctx.now.mono_ms += ProbeSpacingMs(f);
  f.purge.NoteGroup({}, f.ctx.ring);
  std::vector<std::string> third;
  EXPECT_EQ(AnswerProbes(f, {0}, &third), 2);
  std::sort(second.begin(), second.end());
  std::sort(third.begin(), third.end());
  EXPECT_EQ(third, second);
}

// An empty answer to a probe of a range that has changed since (a join took part of it, or
// the predecessor changed) is not taken; the next probe asks about the range as it is now.
TEST(TombstonePurgeTest, AnEmptyAnswerAboutAnOlderRangeIsNotTaken) {
  PurgeFixture f;
  const NodeRef a = NodeRef::ForAddress("10.0.3.2:4000");
  const NodeRef pred = NodeRef::ForAddress("10.0.3.9:4000");
  // A node that joins between the predecessor and this node (computed, not assumed).
  std::optional<NodeRef> joiner;
  for (int i = 10; i < 200 && !joiner; ++i) {
    NodeRef n = NodeRef::ForAddress("10.0.6." + std::to_string(i) + ":4000");
    if (Id::InHalfOpen(n.id, pred.id, f.ctx.ring.self.id)) joiner = n;
  }
  ASSERT_TRUE(joiner.has_value());
  f.ctx.ring.predecessor = pred;
  f.purge.NoteGroup({a}, f.ctx.ring);
  f.purge.NoteGroup({}, f.ctx.ring);
  f.ctx.now.mono_ms = f.ctx.config.transfer_timeout_ms;
  f.purge.NoteGroup({}, f.ctx.ring);
  Ready ready = f.ctx.out.TakeReady();
  int probes = 0;
  for (auto& r : ready.requests) {
    if (!r.envelope.has_sync_digest()) continue;
    ++probes;
    EXPECT_EQ(Id::FromBytes(r.envelope.sync_digest().from_id()), std::optional<Id>(pred.id));
    auto op = f.ctx.out.Complete(r.envelope.request_id(), true);
    ASSERT_TRUE(op.has_value());
    // The range changes before the answer arrives.
    f.ctx.ring.predecessor = *joiner;
    wire::Envelope reply;
    reply.mutable_sync_digest_resp()->set_code(wire::OK);
    f.purge.OnRpc(*op, &reply);
  }
  EXPECT_EQ(probes, 1);
  EXPECT_TRUE(f.purge.MembersMissing());
  f.ctx.now.mono_ms += ProbeSpacingMs(f);
  f.purge.NoteGroup({}, f.ctx.ring);
  EXPECT_EQ(AnswerProbes(f, {}), 1);
  EXPECT_FALSE(f.purge.MembersMissing());
}

}  // namespace
}  // namespace chord
