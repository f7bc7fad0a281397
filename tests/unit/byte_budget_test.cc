// ByteBudget: the node-wide caps on bytes held for connections.
#include "node/runtime/byte_budget.h"

#include <gtest/gtest.h>

namespace chord {
namespace {

TEST(ByteBudgetTest, ChargesUpToTheLimitAndNoFurther) {
  ByteBudget b(10);
  EXPECT_TRUE(b.Charge(6));
  EXPECT_FALSE(b.Charge(5));
  EXPECT_EQ(b.used(), 6u);
  EXPECT_TRUE(b.Charge(4));
  EXPECT_FALSE(b.Charge(1));
  b.Release(3);
  EXPECT_TRUE(b.Charge(3));
  EXPECT_EQ(b.used(), 10u);
}

// A charge moved over from another budget (a connection that turns out to be a member's) may
// pass the limit; until enough is released, nothing more may be charged.
TEST(ByteBudgetTest, NothingMoreIsChargedWhileATakeHasPassedTheLimit) {
  ByteBudget b(10);
  b.Take(11);
  EXPECT_FALSE(b.Charge(1));
  EXPECT_FALSE(b.Charge(1'000'000));
  EXPECT_EQ(b.used(), 11u);
  b.Release(2);
  EXPECT_TRUE(b.Charge(1));
  EXPECT_FALSE(b.Charge(1));
}

}  // namespace
}  // namespace chord
