#include "node/core/replication/consistency.h"

#include <algorithm>

namespace chord {
namespace {

// The count a level names for R copies; 0 for an unknown level.
uint32_t LevelCount(wire::Consistency level, uint32_t replicas, bool write) {
  switch (level) {
    case wire::CONSISTENCY_DEFAULT:
      return write ? replicas / 2 + 1 : 1;
    case wire::CONSISTENCY_ONE:
      return 1;
    case wire::CONSISTENCY_QUORUM:
      return replicas / 2 + 1;
    case wire::CONSISTENCY_ALL:
      return replicas;
    default:
      return 0;
  }
}

Needed Compute(wire::Consistency level, uint32_t required, int replicas, bool write) {
  Needed n;
  const auto r = static_cast<uint32_t>(std::max(replicas, 1));
  n.hints_count = level != wire::CONSISTENCY_ALL;
  if (required != 0) {
    if (required > r) {
      n.problem = "the request needs " + std::to_string(required) + " replicas but keys have " +
                  std::to_string(r) + " (--replicas); ask for 1 to " + std::to_string(r);
    }
    n.count = required;
    return n;
  }
  n.count = LevelCount(level, r, write);
  if (n.count == 0) {
    n.count = 1;
    n.problem = "the request names an unknown consistency level (" +
                std::to_string(static_cast<int>(level)) + "); use one, quorum or all";
  }
  return n;
}

}  // namespace

Needed WritesNeeded(wire::Consistency level, uint32_t required, int replicas, size_t set_size) {
  Needed n = Compute(level, required, replicas, /*write=*/true);
  if (level == wire::CONSISTENCY_DEFAULT && required == 0 && set_size > 0 &&
      set_size < static_cast<size_t>(std::max(replicas, 1))) {
    n.count = std::min<uint32_t>(n.count, static_cast<uint32_t>(set_size / 2 + 1));
  }
  return n;
}

Needed ReadsNeeded(wire::Consistency level, uint32_t required, int replicas) {
  return Compute(level, required, replicas, /*write=*/false);
}

std::string LevelName(wire::Consistency level, uint32_t required, bool write) {
  if (required != 0) return (write ? "-w " : "-r ") + std::to_string(required);
  switch (level) {
    case wire::CONSISTENCY_ONE:
      return "consistency one";
    case wire::CONSISTENCY_QUORUM:
      return "consistency quorum";
    case wire::CONSISTENCY_ALL:
      return "consistency all";
    default:
      return write ? "the default consistency quorum" : "the default consistency one";
  }
}

}  // namespace chord
