// BulkLoad: `chordctl load FILE|-`, the bulk import of TSV or JSON-lines records (format in
// load_input.h) through --node. The input is read on the calling thread; records go to a few
// worker threads, each with its own ChordClient connection, by a hash of the key, so that
// lines with the same key are stored in input order. Progress on stderr when it is a
// terminal, and a one-line summary at the end. Called by chordctl's main.
#ifndef CHORD_TOOLS_CHORDCTL_BULK_LOAD_H_
#define CHORD_TOOLS_CHORDCTL_BULK_LOAD_H_

#include <string>

#include "tools/chordctl/commands.h"

namespace chord::ctl {

inline constexpr int kDefaultLoadParallel = 4;
inline constexpr int kMaxLoadParallel = 64;
// After this many puts in a row have failed, load stops reading and reports the ring down.
inline constexpr int kLoadGiveUpAfterFailures = 32;

struct LoadOptions {
  std::string path;  // "-" = stdin
  int parallel = kDefaultLoadParallel;
};

// Exit codes: 0 every record stored; 2 the input had malformed lines (skipped, the rest
// loaded) or could not be read; 3 --node unreachable or the ring failed puts (wins over 2).
int RunLoad(const CtlOptions& options, const LoadOptions& load);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_BULK_LOAD_H_
