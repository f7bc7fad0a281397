// RingState's ring arithmetic, table-driven: the cases are data in testdata/ring_state/ (one
// line each, ring positions as letters, see testdata/ring_state/README), and the expected
// answers there were worked out by hand from the letters' ring order.
#include "node/core/ring_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/ring_letters.h"

namespace chord {
namespace {

using test_support::ReadTable;
using test_support::RingLetters;
using test_support::TableRow;

const RingLetters& L() {
  static const RingLetters letters;
  return letters;
}

std::vector<TableRow> Cases(const std::string& name, size_t fields) {
  auto rows = ReadTable(std::string(CHORD_TESTDATA_DIR) + "/ring_state/" + name);
  for (const TableRow& r : rows) {
    EXPECT_EQ(r.fields.size(), fields) << name << ":" << r.line << " has the wrong field count";
  }
  EXPECT_FALSE(rows.empty()) << name;
  return rows;
}

RingState Ring(const std::string& self, int successors = 8) {
  RingState ring(L().Node(self), successors);
  ring.state = NodeState::kJoined;
  return ring;
}

std::string Where(const std::string& file, const TableRow& r) {
  return file + ":" + std::to_string(r.line);
}

TEST(RingLettersTest, SiblingsAreAsTheTestdataSays) {
  // testdata/ring_state/README lists the vnodes of each process; the cases rely on it.
  for (const char* pair : {"A N", "B O", "C U", "D Y", "E R", "F M", "G J", "H T", "I Q", "K V",
                           "L X", "P Z", "S W"}) {
    const auto nodes = L().Nodes(pair);
    EXPECT_TRUE(nodes[0].SameProcess(nodes[1])) << pair;
  }
  for (char c = 'A'; c < 'Z'; ++c) {
    EXPECT_LT(L().Node(std::string(1, c)).id, L().Node(std::string(1, c + 1)).id);
  }
}

TEST(RingStateTest, OrderedSuccessorList) {
  for (const TableRow& r : Cases("ordered_successor_list.txt", 4)) {
    const RingState ring = Ring(r.fields[0], std::stoi(r.fields[1]));
    EXPECT_EQ(L().Names(ring.OrderedSuccessorList(L().Nodes(r.fields[2]))), r.fields[3])
        << Where("ordered_successor_list.txt", r);
  }
}

TEST(RingStateTest, MergedSuccessorList) {
  for (const TableRow& r : Cases("merged_successor_list.txt", 5)) {
    const RingState ring = Ring(r.fields[0], std::stoi(r.fields[1]));
    EXPECT_EQ(L().Names(ring.MergedSuccessorList(L().Nodes(r.fields[2]), L().Nodes(r.fields[3]))),
              r.fields[4])
        << Where("merged_successor_list.txt", r);
  }
}

TEST(RingStateTest, OwnerFromSuccessors) {
  for (const TableRow& r : Cases("owner_from_successors.txt", 6)) {
    RingState ring = Ring(r.fields[0], std::stoi(r.fields[1]));
    ring.successors = L().Nodes(r.fields[2]);
    const auto span = ring.OwnerFromSuccessors(L().Point(r.fields[3]));
    const std::string got =
        span ? L().Name(span->predecessor) + " | " + L().Names(span->owners) : "- | none";
    EXPECT_EQ(got, r.fields[4] + " | " + r.fields[5]) << Where("owner_from_successors.txt", r);
  }
}

TEST(RingStateTest, ClosestPreceding) {
  for (const TableRow& r : Cases("closest_preceding.txt", 6)) {
    RingState ring = Ring(r.fields[0]);
    const auto fingers = L().Nodes(r.fields[1]);
    for (size_t i = 0; i < fingers.size(); ++i) ring.fingers[i + 1] = fingers[i];
    ring.successors = L().Nodes(r.fields[2]);
    EXPECT_EQ(L().Names(ring.ClosestPreceding(L().Point(r.fields[3]), std::stoi(r.fields[4]))),
              r.fields[5])
        << Where("closest_preceding.txt", r);
  }
}

TEST(RingStateTest, Owns) {
  for (const TableRow& r : Cases("owns.txt", 7)) {
    RingState ring = Ring(r.fields[0]);
    ring.state = r.fields[1] == "joined"    ? NodeState::kJoined
                 : r.fields[1] == "joining" ? NodeState::kJoining
                                            : NodeState::kLeaving;
    if (r.fields[2] != "-") ring.predecessor = L().Node(r.fields[2]);
    ring.successors = L().Nodes(r.fields[3]);
    if (r.fields[4] != "-") ring.range_floor = L().Point(r.fields[4]);
    EXPECT_EQ(ring.Owns(L().Point(r.fields[5])) ? "yes" : "no", r.fields[6])
        << Where("owns.txt", r);
  }
}

TEST(RingStateTest, HandOverRange) {
  for (const TableRow& r : Cases("hand_over_range.txt", 5)) {
    RingState ring = Ring(r.fields[0]);
    ring.process_vnodes = L().Nodes(r.fields[1]);
    const auto range = ring.HandOverRange(L().Node(r.fields[2]), r.fields[3] == "leave");
    const std::string got =
        range ? L().NameOf(range->from) + " " + L().NameOf(range->to) : std::string("none");
    EXPECT_EQ(got, r.fields[4]) << Where("hand_over_range.txt", r);
  }
}

TEST(RingStateTest, DistinctProcesses) {
  for (const TableRow& r : Cases("distinct_processes.txt", 4)) {
    const auto got = RingState::DistinctProcesses(L().Nodes(r.fields[1]), L().Node(r.fields[0]),
                                                  static_cast<size_t>(std::stoi(r.fields[2])));
    EXPECT_EQ(L().Names(got), r.fields[3]) << Where("distinct_processes.txt", r);
  }
}

TEST(RingStateTest, DistinctProcessesAfterSkipsThisProcess) {
  RingState ring = Ring("C");
  ring.successors = L().Nodes("D U E Y F");
  EXPECT_EQ(L().Names(ring.DistinctProcessesAfter(3)), "D E F");
}

}  // namespace
}  // namespace chord
