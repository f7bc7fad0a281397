// ProgressLine: a one-line progress display on stderr for long chordctl commands (load, dump).
// When stderr is a terminal, Draw() rewrites the line in place and Print() puts a message
// above it; otherwise Draw() does nothing and Print() just prints the message, so logs and
// pipes get no control characters. Thread-safe: workers may Print while another thread Draws.
#ifndef CHORD_TOOLS_CHORDCTL_PROGRESS_LINE_H_
#define CHORD_TOOLS_CHORDCTL_PROGRESS_LINE_H_

#include <mutex>
#include <string>

namespace chord::ctl {

class ProgressLine {
 public:
  // `enabled`: whether to draw (normally IsTerminal(STDERR_FILENO)).
  explicit ProgressLine(bool enabled);
  ~ProgressLine();  // clears the line
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  // Replaces the progress line with `text` (shortened to the terminal width).
  void Draw(const std::string& text);
  // Writes `line` and a newline on stderr, above the progress line.
  void Print(const std::string& line);
  // Removes the progress line.
  void Clear();

 private:
  void WriteLocked(const std::string& bytes);

  bool enabled_;
  std::mutex mu_;
  std::string current_;  // the progress text on screen; empty when none
};

// "[########............]": `fraction` (clamped to [0, 1]) of `width` cells filled.
std::string ProgressBar(double fraction, int width);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_PROGRESS_LINE_H_
