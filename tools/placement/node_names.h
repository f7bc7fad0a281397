// The lab's node names: "server-a" ... "server-z", "server-aa", ... (spreadsheet-column order),
// the naming of ../background/004, so its figures can be reproduced exactly. Any thread.
#ifndef CHORD_TOOLS_PLACEMENT_NODE_NAMES_H_
#define CHORD_TOOLS_PLACEMENT_NODE_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace chord::placement {

[[nodiscard]] std::string NodeName(uint32_t index);
// NodeName(0) ... NodeName(count - 1).
[[nodiscard]] std::vector<std::string> NodeNames(uint32_t count);

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_NODE_NAMES_H_
