// LoadInput: the input format of `chordctl load`. Each line is either TSV `key<TAB>value`
// with the escapes `dump` writes (\t \n \r \\; see EscapeTsv in render.h), and for a key with
// a time to live a third field, when it expires (Unix time in ms), so that
// `chordctl dump | chordctl load -` round-trips, or one JSON object
// {"key": "...", "value": "..."} (optionally "expires_unix_ms": N): a line starting with '{' is
// read as JSON, unless it holds a
// tab and is not such an object, or its first tab follows a whole JSON value (a dump line
// whose key is JSON text), when it is TSV with a key that starts with '{'. The one dump line
// this misreads is a key that is the start of such an object, cut where JSON allows a tab,
// with a value that is the rest of it (key `{"key": "a",`, value `"value": "b"}`).
// Also the bounded line reader that splits the input. Pure parsing, no network; called by
// chordctl load.
#ifndef CHORD_TOOLS_CHORDCTL_LOAD_INPUT_H_
#define CHORD_TOOLS_CHORDCTL_LOAD_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/limits.h"

namespace chord::ctl {

// The longest input line read (an escaped 1 KiB key and 1 MiB value fit easily).
inline constexpr size_t kMaxLoadLineBytes = 8 << 20;

// One parsed input line.
struct LoadRecord {
  bool ok = false;
  bool empty = false;  // a blank line: skipped, neither a record nor an error
  std::string key;
  std::string value;
  uint64_t expires_unix_ms = 0;  // when the key expires (Unix ms); 0: never
  std::string error;  // !ok && !empty: what is wrong, without the "line N: " prefix
};

// The expiries a line may carry (Unix ms): from September 2001 (so a time in seconds, or a
// stray count in a third column, is an error rather than a long-past expiry) to the year
// 33658; what load puts is the time left, at most kMaxTtlMs.
inline constexpr uint64_t kMinLoadExpiryUnixMs = 1'000'000'000'000;
inline constexpr uint64_t kMaxLoadExpiryUnixMs = 1'000'000'000'000'000;

// Parses one line (without its '\n'; a trailing '\r' is dropped) and checks the key and value
// against the limits of protocol/limits.h (value up to max_value_bytes) and the expiry, if
// any, against the bounds above.
LoadRecord ParseLoadLine(std::string_view line, size_t max_value_bytes = kMaxValueBytes);

// Undoes EscapeTsv: \t, \n, \r and \\ . False, with the reason in *error, for any other
// escape or a lone backslash at the end.
bool UnescapeTsv(std::string_view field, std::string* out, std::string* error);

// Splits a file descriptor's bytes into lines, at most max_line_bytes each, reading with
// read(2) so that input typed on a terminal is taken line by line.
class LineReader {
 public:
  LineReader(int fd, size_t max_line_bytes);

  // The next line, without its '\n'. False at the end of the input (or on a read error, see
  // failed()). A line longer than the maximum comes back empty with *too_long set; the rest
  // of it is skipped.
  bool Next(std::string* line, bool* too_long);
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  uint64_t bytes_read() const { return bytes_read_; }
  // Bytes of the input up to the end of the line Next() returned last.
  uint64_t consumed() const { return bytes_read_ - (buf_.size() - pos_); }

 private:
  bool Fill();

  int fd_;
  size_t max_line_bytes_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  bool failed_ = false;
  std::string error_;
  uint64_t bytes_read_ = 0;
};

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_LOAD_INPUT_H_
