// chordctl commands: one function per subcommand. Each talks to the ring through
// ChordClient / WalkRing, prints its result on stdout and at most one plain sentence per
// problem on stderr, and returns the process exit code. Called by chordctl's main only.
#ifndef CHORD_TOOLS_CHORDCTL_COMMANDS_H_
#define CHORD_TOOLS_CHORDCTL_COMMANDS_H_

#include <cstdint>
#include <string>

namespace chord::ctl {

// Process exit codes (DESIGN.md section 5).
inline constexpr int kExitOk = 0;
inline constexpr int kExitNotFound = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 3;

inline constexpr const char* kDefaultNode = "127.0.0.1:4000";
inline constexpr uint64_t kDefaultTimeoutMs = 15000;

// What every subcommand needs: where to connect, how long to wait, and the output form.
struct CtlOptions {
  std::string node = kDefaultNode;
  uint64_t timeout_ms = kDefaultTimeoutMs;
  bool json = false;
};

// Reads a value for `put --value-file` from `path` ("-" = stdin), at most one byte more than
// the value limit (so that RunPut can reject it). False, with the reason on stderr, when the
// file cannot be read.
bool ReadValueFile(const std::string& path, std::string* value);

int RunPut(const CtlOptions& options, const std::string& key, const std::string& value);
int RunGet(const CtlOptions& options, const std::string& key);
int RunDelete(const CtlOptions& options, const std::string& key);
int RunLookup(const CtlOptions& options, const std::string& key);
int RunStatus(const CtlOptions& options);
int RunRing(const CtlOptions& options);
// Every live key the ring holds, once, as TSV lines `key<TAB>value`, sorted by key.
int RunDump(const CtlOptions& options);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_COMMANDS_H_
