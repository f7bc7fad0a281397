// Terminal: what chordctl needs to know about where its output goes (is it a terminal, how
// wide) and the few ANSI control sequences it writes there. Called by watch, load and dump.
#ifndef CHORD_TOOLS_CHORDCTL_TERMINAL_H_
#define CHORD_TOOLS_CHORDCTL_TERMINAL_H_

namespace chord::ctl {

inline constexpr const char* kAnsiClearScreen = "\x1b[2J";
inline constexpr const char* kAnsiHome = "\x1b[H";
inline constexpr const char* kAnsiClearToLineEnd = "\x1b[K";
inline constexpr const char* kAnsiClearToScreenEnd = "\x1b[J";
inline constexpr const char* kAnsiHideCursor = "\x1b[?25l";
inline constexpr const char* kAnsiShowCursor = "\x1b[?25h";

// Whether `fd` is a terminal (isatty) and TERM is not "dumb".
bool IsTerminal(int fd);
// Columns of the terminal on `fd`, else $COLUMNS, else 0 when unknown.
int TerminalColumns(int fd);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_TERMINAL_H_
