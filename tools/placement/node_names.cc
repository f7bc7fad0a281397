#include "tools/placement/node_names.h"

#include <algorithm>

namespace chord::placement {

std::string NodeName(uint32_t index) {
  std::string letters;
  uint64_t n = static_cast<uint64_t>(index) + 1;  // bijective base 26
  while (n > 0) {
    --n;
    letters.push_back(static_cast<char>('a' + n % 26));
    n /= 26;
  }
  std::reverse(letters.begin(), letters.end());
  return "server-" + letters;
}

std::vector<std::string> NodeNames(uint32_t count) {
  std::vector<std::string> names;
  names.reserve(count);
  for (uint32_t i = 0; i < count; ++i) names.push_back(NodeName(i));
  return names;
}

}  // namespace chord::placement
