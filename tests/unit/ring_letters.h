// Ring positions named by letters, so that test cases written as data can say "C lies
// between B and D" without knowing a hash: the 26 addresses 10.9.0.1-13:4000#0 and #1 (13
// processes of two vnodes each), sorted by id, are A to Z. Points near a position are written
// "C+1" and "C-1"; "-" is an empty list. Test code only.
#ifndef CHORD_TESTS_UNIT_RING_LETTERS_H_
#define CHORD_TESTS_UNIT_RING_LETTERS_H_

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/id.h"
#include "protocol/node_ref.h"

namespace chord::test_support {

class RingLetters {
 public:
  RingLetters() {
    std::vector<NodeRef> all;
    for (int i = 1; i <= 13; ++i) {
      for (int k = 0; k < 2; ++k) {
        all.push_back(
            NodeRef::ForAddress("10.9.0." + std::to_string(i) + ":4000#" + std::to_string(k)));
      }
    }
    std::sort(all.begin(), all.end(),
              [](const NodeRef& a, const NodeRef& b) { return a.id < b.id; });
    for (size_t i = 0; i < all.size(); ++i) nodes_[i] = all[i];
  }

  const NodeRef& Node(std::string_view letter) const {
    if (letter.size() != 1 || letter[0] < 'A' || letter[0] > 'Z') {
      throw std::invalid_argument("not a ring letter: " + std::string(letter));
    }
    return nodes_[static_cast<size_t>(letter[0] - 'A')];
  }
  // "C", "C+1" or "C-1".
  Id Point(std::string_view token) const {
    const Id base = Node(token.substr(0, 1)).id;
    if (token.size() == 1) return base;
    const Id one = Id::PowerOfTwo(0);
    if (token.substr(1) == "+1") return base + one;
    if (token.substr(1) == "-1") return base - one;
    throw std::invalid_argument("not a ring point: " + std::string(token));
  }
  // Space-separated letters, or "-" for none.
  std::vector<NodeRef> Nodes(std::string_view text) const {
    std::vector<NodeRef> out;
    for (const std::string& t : Words(text)) {
      if (t != "-") out.push_back(Node(t));
    }
    return out;
  }
  std::string Name(const NodeRef& n) const {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i] == n) return std::string(1, static_cast<char>('A' + i));
    }
    return "?" + n.addr;
  }
  std::string Names(const std::vector<NodeRef>& list) const {
    if (list.empty()) return "-";
    std::string out;
    for (const NodeRef& n : list) out += (out.empty() ? "" : " ") + Name(n);
    return out;
  }
  // The letter whose id is `id`, else "?".
  std::string NameOf(const Id& id) const {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].id == id) return std::string(1, static_cast<char>('A' + i));
    }
    return "?";
  }

  static std::vector<std::string> Words(std::string_view text) {
    std::vector<std::string> out;
    std::istringstream in{std::string(text)};
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  }

 private:
  std::array<NodeRef, 26> nodes_;
};

// The cases of a testdata file: its non-blank lines that are not comments ('#'), each split
// at '|' into trimmed fields, with the line number.
struct TableRow {
  int line = 0;
  std::vector<std::string> fields;
};

inline std::vector<TableRow> ReadTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<TableRow> rows;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    TableRow row{n, {}};
    std::string field;
    std::istringstream cells(line);
    while (std::getline(cells, field, '|')) {
      const size_t b = field.find_first_not_of(" \t");
      const size_t e = field.find_last_not_of(" \t");
      row.fields.push_back(b == std::string::npos ? "" : field.substr(b, e - b + 1));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace chord::test_support

#endif  // CHORD_TESTS_UNIT_RING_LETTERS_H_
