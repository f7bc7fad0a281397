// Tests for ReadBacklog's bound on held bytes (node/runtime/read_backlog.h): connections hold
// complete frames for the next turn only while all of them together keep at most
// kMaxHeldBytes; one that would pass it is refused (it delivers its frames at once), and what
// a removed connection held is counted no more. The loop is never run with connections held,
// so the placeholders below are never resumed.
#include "node/runtime/read_backlog.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <array>

namespace chord {
namespace {

class ReadBacklogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    ASSERT_TRUE(backlog_.Start(&loop_).ok());
  }
  void TearDown() override {
    backlog_.Close();
    uv_run(&loop_, UV_RUN_DEFAULT);  // the handles' close callbacks
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  // Distinct connection addresses; never dereferenced.
  TcpConnection* Conn(size_t i) { return reinterpret_cast<TcpConnection*>(&slots_[i]); }

  uv_loop_t loop_{};
  ReadBacklog backlog_;
  std::array<char, 4> slots_{};
};

TEST_F(ReadBacklogTest, HeldBytesAreBoundedAcrossConnections) {
  constexpr size_t kHalf = ReadBacklog::kMaxHeldBytes / 2;
  EXPECT_TRUE(backlog_.Hold(Conn(0), kHalf));
  EXPECT_TRUE(backlog_.Hold(Conn(1), kHalf));
  EXPECT_EQ(backlog_.held_bytes(), ReadBacklog::kMaxHeldBytes);
  EXPECT_FALSE(backlog_.Hold(Conn(2), 1)) << "held past the bound";
  EXPECT_TRUE(backlog_.Hold(Conn(2), 0)) << "a connection with nothing buffered past its frames";
  backlog_.Remove(Conn(0));
  EXPECT_EQ(backlog_.held_bytes(), kHalf);
  EXPECT_TRUE(backlog_.Hold(Conn(3), kHalf));
  EXPECT_FALSE(backlog_.Hold(Conn(0), ReadBacklog::kMaxHeldBytes + 1));
  backlog_.Remove(Conn(1));
  backlog_.Remove(Conn(2));
  backlog_.Remove(Conn(3));
  EXPECT_EQ(backlog_.held_bytes(), 0u);
}

TEST_F(ReadBacklogTest, NothingIsHeldOnceClosed) {
  backlog_.Close();
  EXPECT_FALSE(backlog_.Hold(Conn(0), 1));
  EXPECT_EQ(backlog_.held_bytes(), 0u);
}

}  // namespace
}  // namespace chord
