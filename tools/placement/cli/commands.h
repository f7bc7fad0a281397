// The chord-placement subcommands: each runs one experiment of tools/placement and prints
// one JSON object (--json) or a table a person reads. Called by main.cc after the flags were
// parsed and checked; return the process exit code (0 ok).
#ifndef CHORD_TOOLS_PLACEMENT_CLI_COMMANDS_H_
#define CHORD_TOOLS_PLACEMENT_CLI_COMMANDS_H_

#include <cstdint>
#include <string>

#include "tools/placement/experiments.h"
#include "tools/placement/scheme.h"

namespace chord::placement::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;

struct CommonFlags {
  SchemeOptions options;
  bool json = false;
};

int RunMoveCommand(const CommonFlags& flags, Scheme scheme, uint32_t from, uint32_t to,
                   uint64_t keys);
int RunRemoveCommand(const CommonFlags& flags, Scheme scheme, uint32_t nodes, uint32_t index,
                     uint64_t keys);
int RunBalanceCommand(const CommonFlags& flags, Scheme scheme, uint32_t nodes, uint64_t keys);
int RunSpeedCommand(const CommonFlags& flags, uint32_t nodes, double seconds);
int RunMemoryCommand(const CommonFlags& flags, uint32_t nodes);
int RunCompareCommand(const CommonFlags& flags, const CompareOptions& options);
int RunJumpCommand(const CommonFlags& flags, uint64_t key, int32_t buckets);
int RunCrc16Command(const CommonFlags& flags, const std::string& text);
int RunSlotCommand(const CommonFlags& flags, const std::string& key);

}  // namespace chord::placement::cli

#endif  // CHORD_TOOLS_PLACEMENT_CLI_COMMANDS_H_
