#include "tools/placement/maglev.h"

#include <limits>

namespace chord::placement {

void Maglev::SetNodes(std::span<const std::string> nodes) {
  node_count_ = static_cast<uint32_t>(nodes.size());
  const uint64_t m = table_size_;
  std::vector<uint64_t> offset(node_count_);
  std::vector<uint64_t> skip(node_count_);
  for (uint32_t i = 0; i < node_count_; ++i) {
    const Sha256Digest d = Sha256(nodes[i]);
    offset[i] = LoadBigEndian64(d.data()) % m;
    skip[i] = LoadBigEndian64(d.data() + 8) % (m - 1) + 1;
  }
  constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
  table_.assign(table_size_, kEmpty);
  // next[i] of the paper is kept as the permutation value it points at: permutation[i][j] =
  // (offset + j * skip) mod M, so advancing j adds skip.
  std::vector<uint64_t> candidate = offset;
  uint64_t filled = 0;
  while (filled < m) {
    for (uint32_t i = 0; i < node_count_ && filled < m; ++i) {
      uint64_t c = candidate[i];
      while (table_[c] != kEmpty) c = (c + skip[i]) % m;
      table_[c] = i;
      candidate[i] = (c + skip[i]) % m;
      ++filled;
    }
  }
}

std::vector<double> Maglev::ExactShares() const {
  std::vector<uint64_t> entries(node_count_, 0);
  for (const uint32_t node : table_) ++entries[node];
  std::vector<double> shares;
  shares.reserve(node_count_);
  for (const uint64_t n : entries) shares.push_back(static_cast<double>(n) / table_size_);
  return shares;
}

}  // namespace chord::placement
