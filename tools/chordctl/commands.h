// chordctl commands: one function per subcommand. Each talks to the ring through
// ChordClient / WalkRing, prints its result on stdout and at most one plain sentence per
// problem on stderr, and returns the process exit code. Called by chordctl's main only.
#ifndef CHORD_TOOLS_CHORDCTL_COMMANDS_H_
#define CHORD_TOOLS_CHORDCTL_COMMANDS_H_

#include <cstdint>
#include <string>

#include "protocol/base/status.h"
#include "tools/client/chord_client.h"

namespace chord::ctl {

// Process exit codes (DESIGN.md section 5).
inline constexpr int kExitOk = 0;
inline constexpr int kExitNotFound = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 3;
// A compare-and-set condition (--if-version, --if-absent) did not hold.
inline constexpr int kExitConflict = 4;

inline constexpr const char* kDefaultNode = "127.0.0.1:4000";
inline constexpr uint64_t kDefaultTimeoutMs = 15000;

// What every subcommand needs: where to connect, how long to wait, and the output form.
struct CtlOptions {
  std::string node = kDefaultNode;
  uint64_t timeout_ms = kDefaultTimeoutMs;
  bool json = false;
  bool timeout_given = false;  // --timeout-ms was on the command line
};

// "chordctl: SENTENCE" on stderr.
void PrintError(const std::string& sentence);
// Prints a failed client call's message; its exit code (1 not found, 2 usage, 3 otherwise).
int ReportStatus(const Status& status);

// Reads a value for `put --value-file` from `path` ("-" = stdin), at most one byte more than
// the value limit (so that RunPut can reject it). False, with the reason on stderr, when the
// file cannot be read.
bool ReadValueFile(const std::string& path, std::string* value);

// With `data` (consistency, compare-and-set, TTL). With --json each prints one object
// {"key","code","version","acks","required"} (get adds "value", and "expires_unix_ms" for a
// value with a TTL); otherwise put and del print nothing and get prints the value.
int RunPut(const CtlOptions& options, const std::string& key, const std::string& value,
           const DataOptions& data = {});
int RunGet(const CtlOptions& options, const std::string& key, const DataOptions& data = {});
int RunDelete(const CtlOptions& options, const std::string& key, const DataOptions& data = {});
int RunLookup(const CtlOptions& options, const std::string& key);
int RunStatus(const CtlOptions& options);
// `ring --json`: the walk as JSON (DESIGN.md section 5). `ring`: the table of ring_table.h
// (a RingSurvey: the walk plus every node a pointer names). `ring --svg FILE` (FILE "-" is
// stdout): the picture of ring_svg.h, and one summary line on stdout (stderr for "-").
// Exit 0 whatever the check finds; 3 when --node is unreachable; 2 when FILE cannot be written.
int RunRing(const CtlOptions& options, const std::string& svg_path);
// Only the verdict of ring_check.h: exit 0 on [OK], 1 on [ERR], 3 when --node is unreachable.
int RunCheck(const CtlOptions& options);
// Every live key the ring holds, once, as TSV lines `key<TAB>value`, sorted by key. When
// stderr is a terminal, progress and a summary go there.
int RunDump(const CtlOptions& options);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_COMMANDS_H_
