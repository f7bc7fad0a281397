// TextTable: aligned plain-text tables and the small number formats chordctl's readable output
// shares (ring, watch). Pure functions; called by chordctl's renderers.
#ifndef CHORD_TOOLS_CHORDCTL_TEXT_TABLE_H_
#define CHORD_TOOLS_CHORDCTL_TEXT_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace chord::ctl {

// The id prefix shown in tables: this many hex digits.
inline constexpr int kTableIdHexDigits = 12;

// Rows of cells, one column per cell of `header`; columns are separated by two spaces, padded
// to their widest cell, left-aligned unless right_aligned[c]. No trailing spaces.
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::vector<bool>& right_aligned);

// "20.3%".
std::string Percent(double fraction);
// "1 key" / "12 keys": `count` and the noun, plural unless count == 1.
std::string CountOf(uint64_t count, const std::string& singular, const std::string& plural);
// "+12", "-3", "+0".
std::string SignedDelta(int64_t delta);

std::string PadRight(const std::string& s, size_t width);
std::string PadLeft(const std::string& s, size_t width);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_TEXT_TABLE_H_
