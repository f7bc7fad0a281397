#include "tools/chordctl/progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "tools/chordctl/terminal.h"

namespace chord::ctl {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled) {}

ProgressLine::~ProgressLine() { Clear(); }

void ProgressLine::WriteLocked(const std::string& bytes) {
  std::fwrite(bytes.data(), 1, bytes.size(), stderr);
  std::fflush(stderr);
}

void ProgressLine::Draw(const std::string& text) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::string shown = text;
  const int columns = TerminalColumns(STDERR_FILENO);
  if (columns > 1 && shown.size() >= static_cast<size_t>(columns)) {
    shown.resize(static_cast<size_t>(columns - 1));
  }
  current_ = shown;
  WriteLocked("\r" + shown + kAnsiClearToLineEnd);
}

void ProgressLine::Print(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (enabled_ && !current_.empty()) {
    WriteLocked(std::string("\r") + kAnsiClearToLineEnd + line + "\n" + current_ +
                kAnsiClearToLineEnd);
  } else {
    WriteLocked(line + "\n");
  }
}

void ProgressLine::Clear() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (current_.empty()) return;
  current_.clear();
  WriteLocked(std::string("\r") + kAnsiClearToLineEnd);
}

std::string ProgressBar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  width = std::max(width, 1);
  const int filled = static_cast<int>(fraction * width + 0.5);
  std::string bar(1, '[');
  bar.append(static_cast<size_t>(filled), '#').append(static_cast<size_t>(width - filled), '.');
  return bar.append(1, ']');
}

}  // namespace chord::ctl
