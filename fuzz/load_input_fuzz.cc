// libFuzzer target: the input of `chordctl load` (tools/chordctl/load_input.h). The bytes are
// split into lines by LineReader (from a memfd, with a small line limit so that over-long lines
// are reached) and every line is parsed by ParseLoadLine. Checked: the lines joined give back
// the input (but for over-long lines, which come back empty and flagged); a line parses to
// exactly one of blank, record or error; a record obeys the key and value limits; a record
// parsed from TSV is written again by EscapeTsv (as `chordctl dump` does) to a line that parses
// to the same record (but for the one ambiguity load_input.h documents); UnescapeTsv undoes
// EscapeTsv.
//
// Input: byte 0 picks the value limit (1 + 97 * byte bytes) and the line limit (16 + 2 * byte
// bytes); the rest is the file. Seeds: fuzz/corpus/load_input_fuzz/.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "protocol/limits.h"
#include "tools/chordctl/load_input.h"
#include "tools/chordctl/render.h"

namespace chord::ctl {
namespace {

void CheckLine(std::string_view line, size_t max_value_bytes) {
  const LoadRecord r = ParseLoadLine(line, max_value_bytes);
  std::string_view trimmed = line;
  if (!trimmed.empty() && trimmed.back() == '\r') trimmed.remove_suffix(1);
  FUZZ_CHECK(r.empty == trimmed.empty(), "blank is not the same as an empty line");
  if (r.empty) {
    FUZZ_CHECK(!r.ok && r.error.empty(), "a blank line is a record or an error");
    return;
  }
  FUZZ_CHECK(r.ok == r.error.empty(), "a line is both or neither a record and an error");
  if (!r.ok) return;
  FUZZ_CHECK(KeyProblem(r.key).empty(), "a record's key breaks the key limits");
  FUZZ_CHECK(ValueProblem(r.value.size(), max_value_bytes).empty(), "a value is too large");

  // What dump writes for this record loads back as the same record, unless it is the one
  // ambiguity the format documents: the key is the start of a JSON object, up to a point
  // where JSON allows the tab, and the value is the rest of it.
  // A record with an expiry has it as a third field.
  std::string dumped = EscapeTsv(r.key) + "\t" + EscapeTsv(r.value);
  if (r.expires_unix_ms != 0) dumped += "\t" + std::to_string(r.expires_unix_ms);
  const LoadRecord again = ParseLoadLine(dumped, max_value_bytes);
  if (!nlohmann::json::accept(dumped) || nlohmann::json::accept(EscapeTsv(r.key))) {
    FUZZ_CHECK(again.ok, "a dumped record does not load");
    FUZZ_CHECK(
        again.key == r.key && again.value == r.value && again.expires_unix_ms == r.expires_unix_ms,
        "a dumped record loads differently");
  }
  std::string unescaped;
  std::string error;
  FUZZ_CHECK(UnescapeTsv(EscapeTsv(r.value), &unescaped, &error) && unescaped == r.value,
             "UnescapeTsv does not undo EscapeTsv");
}

// Splits `file` with a LineReader over a memfd and checks the pieces against the input.
void CheckLines(std::string_view file, size_t max_line_bytes, size_t max_value_bytes) {
  const int fd = memfd_create("load_input_fuzz", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t written = 0;
  while (written < file.size()) {
    const ssize_t n = write(fd, file.data() + written, file.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  if (written != file.size() || lseek(fd, 0, SEEK_SET) != 0) {
    close(fd);
    return;
  }
  LineReader reader(fd, max_line_bytes);
  std::string line;
  bool too_long = false;
  size_t pos = 0;  // where the next line starts in `file`
  while (reader.Next(&line, &too_long)) {
    const size_t newline = file.find('\n', pos);
    const size_t end = newline == std::string_view::npos ? file.size() : newline;
    const std::string_view want = file.substr(pos, end - pos);
    if (too_long) {
      FUZZ_CHECK(line.empty(), "an over-long line came back with bytes");
      FUZZ_CHECK(want.size() > max_line_bytes, "a line within the limit was called too long");
    } else {
      FUZZ_CHECK(line == want, "LineReader returned other bytes than the line");
      CheckLine(line, max_value_bytes);
    }
    pos = newline == std::string_view::npos ? file.size() : newline + 1;
    FUZZ_CHECK(reader.consumed() == pos, "consumed() is not the end of the line");
  }
  FUZZ_CHECK(!reader.failed(), "reading a memfd failed");
  FUZZ_CHECK(pos == file.size(), "LineReader stopped before the end of the input");
  close(fd);
}

}  // namespace
}  // namespace chord::ctl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t max_value_bytes = 1 + 97 * size_t{data[0]};
  const size_t max_line_bytes = 16 + 2 * size_t{data[0]};
  const std::string_view file(reinterpret_cast<const char*>(data + 1), size - 1);
  // The whole input as one line too (the reader's limit keeps most lines short).
  if (file.find('\n') == std::string_view::npos) chord::ctl::CheckLine(file, max_value_bytes);
  chord::ctl::CheckLines(file, max_line_bytes, max_value_bytes);
  return 0;
}
