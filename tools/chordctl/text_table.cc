#include "tools/chordctl/text_table.h"

#include <algorithm>
#include <cstdio>

namespace chord::ctl {

std::string PadRight(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string PadLeft(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::vector<bool>& right_aligned) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) {
      if (c < row.size()) width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      if (c > 0) line += "  ";
      const bool right = c < right_aligned.size() && right_aligned[c];
      line += right ? PadLeft(cell, width[c]) : PadRight(cell, width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(header);
  for (const auto& row : rows) emit(row);
  return out;
}

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", fraction * 100.0);
  return buf;
}

std::string CountOf(uint64_t count, const std::string& singular, const std::string& plural) {
  return std::to_string(count) + " " + (count == 1 ? singular : plural);
}

std::string SignedDelta(int64_t delta) {
  std::string out(delta < 0 ? "" : "+");
  return out.append(std::to_string(delta));
}

}  // namespace chord::ctl
