// Unit tests of Outbox::SendToEach and the Ready requests that share one message's body
// (Ready::Outgoing, Ready::Take): each target gets the same body under its own request id and
// deadline, answers reach the right fan-out index, and a target that is the node itself gets a
// copy of its own through the loopback queue.
#include "node/core/outbox.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace chord {
namespace {

constexpr uint64_t kTimeoutMs = 1000;

struct OutboxFixture {
  NodeRef self = NodeRef::ForAddress("127.0.0.1:7000");
  Clock now{500, 1'700'000'000'000};
  NodeMetrics metrics;
  NodeCounters counters;
  Outbox out{&self, &now, &metrics, &counters};
};

wire::Record SomeRecord() {
  wire::Record r;
  r.set_key("greeting");
  r.set_value(std::string(200, 'v'));
  r.set_version(42);
  r.set_writer("w");
  return r;
}

std::vector<NodeRef> Targets(const std::vector<std::string>& addrs) {
  std::vector<NodeRef> out;
  for (const std::string& a : addrs) out.push_back(NodeRef::ForAddress(a));
  return out;
}

TEST(OutboxTest, SendToEachHoldsOneBodyAndGivesEveryTargetItsOwnId) {
  OutboxFixture f;
  const std::vector<NodeRef> targets =
      Targets({"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"});
  const OpRef op{OpKind::kWrite, 1, 4, 99};
  f.out.SendToEach(targets, msg::ReplicateOne(f.self, SomeRecord()), kTimeoutMs, op);
  EXPECT_FALSE(f.out.has_loopback());
  EXPECT_EQ(f.out.pending(), 3u);
  EXPECT_EQ(f.metrics.Rpc("replicate").requests, 3u);

  Ready ready = f.out.TakeReady();
  ASSERT_EQ(ready.requests.size(), 3u);
  // The first holds the message; the others only their ids, naming the first.
  EXPECT_FALSE(ready.requests[0].body_of.has_value());
  EXPECT_TRUE(ready.requests[0].lent);
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(ready.requests[k].body_of, std::optional<size_t>(0));
    EXPECT_FALSE(ready.requests[k].envelope.has_replicate());
  }

  std::set<uint64_t> ids;
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(ready.requests[k].to, targets[k].addr);
    // What a driver encoding at once sends (the runtime).
    const wire::Envelope& sent = ready.Outgoing(k);
    ASSERT_TRUE(sent.has_replicate());
    ASSERT_EQ(sent.replicate().records_size(), 1);
    EXPECT_EQ(sent.replicate().records(0).key(), "greeting");
    EXPECT_EQ(sent.replicate().records(0).value(), std::string(200, 'v'));
    EXPECT_EQ(sent.replicate().records(0).version(), 42u);
    EXPECT_EQ(sent.deadline_unix_ms(), f.now.wall_ms + kTimeoutMs);
    ids.insert(sent.request_id());
    // Each id is answered to the fan-out's index for that target.
    const uint64_t id = sent.request_id();
    EXPECT_EQ(f.out.Complete(id, true),
              std::optional<OpRef>(OpRef{op.kind, op.step, static_cast<uint16_t>(4 + k), op.id}));
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(f.out.pending(), 0u);
}

TEST(OutboxTest, TakeCopiesASharedBodyForEveryRequest) {
  OutboxFixture f;
  f.out.SendToEach(Targets({"127.0.0.1:7001", "127.0.0.1:7002"}),
                   msg::ReplicateOne(f.self, SomeRecord()), kTimeoutMs,
                   OpRef{OpKind::kWrite, 1, 0, 7});
  Ready ready = f.out.TakeReady();
  ASSERT_EQ(ready.requests.size(), 2u);
  // A driver that keeps the messages (the simulator) takes them in order: the first is copied
  // out, as the second still needs its body.
  const wire::Envelope first = ready.Take(0);
  const wire::Envelope second = ready.Take(1);
  for (const wire::Envelope* e : {&first, &second}) {
    ASSERT_TRUE(e->has_replicate());
    ASSERT_EQ(e->replicate().records_size(), 1);
    EXPECT_EQ(e->replicate().records(0).value(), std::string(200, 'v'));
  }
  EXPECT_NE(first.request_id(), second.request_id());
}

TEST(OutboxTest, ATargetThatIsThisNodeGetsACopyThroughTheLoopback) {
  for (size_t self_at : {0u, 1u, 2u}) {
    SCOPED_TRACE(self_at);
    OutboxFixture f;
    std::vector<NodeRef> targets = Targets({"127.0.0.1:7001", "127.0.0.1:7002"});
    targets.insert(targets.begin() + static_cast<std::ptrdiff_t>(self_at), f.self);
    f.out.SendToEach(targets, msg::ReplicateOne(f.self, SomeRecord()), kTimeoutMs,
                     OpRef{OpKind::kWrite, 1, 0, 7});
    EXPECT_EQ(f.out.pending(), 3u);
    ASSERT_TRUE(f.out.has_loopback());
    const Outbox::Loopback loop = f.out.TakeLoopback();
    EXPECT_FALSE(f.out.has_loopback());
    EXPECT_FALSE(loop.is_reply);
    ASSERT_TRUE(loop.envelope.has_replicate());
    ASSERT_EQ(loop.envelope.replicate().records_size(), 1);
    EXPECT_EQ(loop.envelope.replicate().records(0).key(), "greeting");
    EXPECT_EQ(f.out.Complete(loop.envelope.request_id(), true),
              std::optional<OpRef>(OpRef{OpKind::kWrite, 1, static_cast<uint16_t>(self_at), 7}));

    Ready ready = f.out.TakeReady();
    ASSERT_EQ(ready.requests.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const wire::Envelope& sent = ready.Outgoing(k);
      ASSERT_TRUE(sent.has_replicate());
      EXPECT_EQ(sent.replicate().records(0).key(), "greeting");
      EXPECT_NE(sent.request_id(), loop.envelope.request_id());
    }
  }
}

}  // namespace
}  // namespace chord
