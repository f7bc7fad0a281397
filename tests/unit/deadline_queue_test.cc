// DeadlineQueue: the earliest waiting deadline and the expired requests, against a brute-force
// list, with several timeouts, answered requests and an entry that arrives out of order.
#include "node/core/deadline_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace chord {
namespace {

TEST(DeadlineQueueTest, EarliestSkipsAnsweredRequests) {
  DeadlineQueue q;
  std::set<uint64_t> waiting{1, 2, 3};
  auto is_waiting = [&](uint64_t id) { return waiting.count(id) != 0; };
  q.Add(1000, 1000, 1);
  q.Add(1000, 1010, 2);
  q.Add(3000, 3000, 3);
  EXPECT_EQ(q.Earliest(is_waiting), 1000u);
  waiting.erase(1);
  EXPECT_EQ(q.Earliest(is_waiting), 1010u);
  waiting.erase(2);
  EXPECT_EQ(q.Earliest(is_waiting), 3000u);
  waiting.erase(3);
  EXPECT_EQ(q.Earliest(is_waiting), std::nullopt);
  EXPECT_EQ(q.size(), 0u);  // answered entries are dropped as they reach the front
}

TEST(DeadlineQueueTest, PopExpiredReportsOnlyWaitingRequestsDue) {
  DeadlineQueue q;
  std::set<uint64_t> waiting{1, 2, 3, 4};
  auto is_waiting = [&](uint64_t id) { return waiting.count(id) != 0; };
  q.Add(100, 150, 1);
  q.Add(100, 160, 2);
  q.Add(500, 550, 3);
  q.Add(100, 170, 4);
  waiting.erase(2);
  std::vector<uint64_t> expired;
  q.PopExpired(165, is_waiting, [&](uint64_t id) {
    expired.push_back(id);
    waiting.erase(id);
  });
  EXPECT_EQ(expired, (std::vector<uint64_t>{1}));
  EXPECT_EQ(q.Earliest(is_waiting), 170u);
  expired.clear();
  q.PopExpired(1000, is_waiting, [&](uint64_t id) { expired.push_back(id); });
  std::sort(expired.begin(), expired.end());
  EXPECT_EQ(expired, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(q.size(), 0u);
}

// Random sends (a few timeouts, a clock that now and then steps back), answers and expiry
// checks: the queue agrees with a plain map of the waiting requests' deadlines.
TEST(DeadlineQueueTest, AgreesWithBruteForce) {
  std::mt19937_64 rng(11);
  DeadlineQueue q;
  std::map<uint64_t, uint64_t> waiting;  // id -> deadline
  auto is_waiting = [&](uint64_t id) { return waiting.count(id) != 0; };
  const uint64_t timeouts[] = {100, 200, 300, 1000};
  uint64_t now = 1000;
  uint64_t next_id = 1;
  for (int step = 0; step < 20000; ++step) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 5) {
      const uint64_t timeout = timeouts[rng() % 4];
      const uint64_t sent = (rng() % 50 == 0 && now > 20) ? now - 20 : now;  // rare step back
      q.Add(timeout, sent + timeout, next_id);
      waiting[next_id] = sent + timeout;
      ++next_id;
    } else if (what < 8 && !waiting.empty()) {
      auto it = waiting.begin();
      std::advance(it, static_cast<long>(rng() % waiting.size()));
      waiting.erase(it);  // answered
    } else {
      now += rng() % 30;
      std::set<uint64_t> want;
      for (const auto& [id, deadline] : waiting) {
        if (deadline <= now) want.insert(id);
      }
      std::set<uint64_t> got;
      q.PopExpired(now, is_waiting, [&](uint64_t id) { got.insert(id); });
      for (uint64_t id : got) waiting.erase(id);
      ASSERT_EQ(got, want) << "step " << step;
    }
    std::optional<uint64_t> earliest;
    for (const auto& [id, deadline] : waiting) {
      if (!earliest || deadline < *earliest) earliest = deadline;
    }
    ASSERT_EQ(q.Earliest(is_waiting), earliest) << "step " << step;
  }
}

}  // namespace
}  // namespace chord
