#include "tools/chordctl/watch.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "tools/chordctl/ring_check.h"
#include "tools/chordctl/ring_table.h"
#include "tools/chordctl/stop_signals.h"
#include "tools/chordctl/terminal.h"
#include "tools/chordctl/text_table.h"

namespace chord::ctl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorLinesShown = 5;
constexpr int kMinBarWidth = 10;
constexpr int kMaxBarWidth = 200;
// Columns of a row besides the address and the bar: state, keys, change, replicas, gaps.
constexpr int kRowColumnsBesideBar = 7 + 8 + 8 + 9 + 5 * 2;

std::string LocalTimeText() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Bar(uint64_t keys, uint64_t max_keys, int width) {
  if (keys == 0 || max_keys == 0) return "";
  const double cells = static_cast<double>(keys) / static_cast<double>(max_keys) * width;
  const int n = std::clamp(static_cast<int>(std::lround(cells)), 1, width);
  return std::string(static_cast<size_t>(n), '#');
}

void WriteAll(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// `frame` for an in-place redraw: home, every line cleared to its end (and cut to `columns`
// when known), the rest of the screen cleared.
std::string InPlace(const std::string& frame, int columns) {
  std::string out = kAnsiHome;
  size_t pos = 0;
  while (pos < frame.size()) {
    size_t end = frame.find('\n', pos);
    if (end == std::string::npos) end = frame.size();
    std::string line = frame.substr(pos, end - pos);
    if (columns > 0 && line.size() >= static_cast<size_t>(columns)) {
      line.resize(static_cast<size_t>(columns - 1));
    }
    out += line + kAnsiClearToLineEnd + "\n";
    pos = end + 1;
  }
  return out + kAnsiClearToScreenEnd;
}

}  // namespace

std::string WatchFrame(const RingSurvey* survey, const WatchFrameContext& context) {
  char every[32];
  std::snprintf(every, sizeof(every), "%.1f s", static_cast<double>(context.interval_ms) / 1000);
  std::string out = "chord ring";
  if (survey != nullptr) out += " via " + survey->via;
  out += " at " + context.time + " (every " + every + ", Ctrl-C to stop)\n";
  if (survey == nullptr) {
    return out + "no node answers: " + context.error + "\n";
  }
  const RingVerdict verdict = CheckRing(*survey);
  const uint64_t total = survey->TotalKeys();
  out += NodeCountText(*survey) + ", " + CountOf(total, "key", "keys");
  if (context.previous != nullptr) {
    // Over the same nodes as `total`: not those that answer but could not count.
    std::set<std::string> uncounted;
    for (const SurveyNode& node : survey->nodes) {
      if (node.answers() && !node.counted()) uncounted.insert(node.addr);
    }
    uint64_t before = 0;
    for (const auto& [addr, keys] : *context.previous) {
      if (uncounted.count(addr) == 0) before += keys;
    }
    out += " (" + SignedDelta(static_cast<int64_t>(total) - static_cast<int64_t>(before)) + ")";
  }
  out += ", " + CountOf(survey->TotalReplicaKeys(), "replica key", "replica keys") +
         UncountedText(*survey) + "  " +
         (verdict.ok ? "[OK]" : "[ERR] " + CountOf(verdict.lines.size(), "problem", "problems")) +
         "\n";

  uint64_t max_keys = 0;
  for (const SurveyNode& node : survey->nodes) max_keys = std::max(max_keys, node.keys());
  std::vector<std::vector<std::string>> rows;
  for (const SurveyNode& node : survey->nodes) {
    std::string change;
    if (context.previous != nullptr) {
      auto it = context.previous->find(node.addr);
      if (node.answers() && !node.counted()) {
        change = "";  // not known
      } else if (it == context.previous->end()) {
        change = node.answers() ? "new" : "";
      } else {
        change = SignedDelta(static_cast<int64_t>(node.keys()) - static_cast<int64_t>(it->second));
      }
    }
    const bool up = node.answers();
    // "?": it answers but could not read its store to count.
    const std::string unknown = up ? "?" : "-";
    rows.push_back({node.addr, NodeStateName(node.state),
                    PadRight(Bar(node.keys(), max_keys, context.bar_width),
                             static_cast<size_t>(context.bar_width)),
                    node.counted() ? std::to_string(node.keys()) : unknown, change,
                    node.counted() ? std::to_string(node.replica_keys()) : unknown});
  }
  out += FormatTable({"ADDRESS", "STATE", "PRIMARY KEYS", "KEYS", "CHANGE", "REPLICAS"}, rows,
                     {false, false, false, true, true, true});
  if (!verdict.ok) {
    const size_t shown = std::min(verdict.lines.size(), kMaxErrorLinesShown);
    for (size_t i = 0; i < shown; ++i) out += verdict.lines[i] + "\n";
    if (verdict.lines.size() > shown) {
      out += "... and " + std::to_string(verdict.lines.size() - shown) +
             " more (run chordctl check)\n";
    }
  }
  return out;
}

int RunWatch(const CtlOptions& options, const WatchOptions& watch) {
  const uint64_t timeout_ms = options.timeout_given ? options.timeout_ms : kWatchDefaultTimeoutMs;
  const bool terminal = IsTerminal(STDOUT_FILENO);
  StopSignals signals;

  std::vector<std::string> starts = {options.node};
  std::set<std::string> remembered;  // every position ever seen, shown as Down once it is gone
  std::map<std::string, uint64_t> previous;
  bool have_previous = false;
  bool cursor_hidden = false;
  uint64_t frames = 0;
  int exit_code = kExitOk;

  while (!StopRequested()) {
    const auto started = Clock::now();
    Result<RingSurvey> survey = SurveyRing(
        starts, std::vector<std::string>(remembered.begin(), remembered.end()), timeout_ms);
    if (!survey.ok() && frames == 0) {
      exit_code = ReportStatus(survey.status());
      break;
    }
    if (StopRequested()) break;

    WatchFrameContext context;
    context.time = LocalTimeText();
    context.interval_ms = watch.interval_ms;
    context.previous = have_previous ? &previous : nullptr;
    context.bar_width = kWatchPlainBarWidth;
    int columns = 0;
    if (terminal) {
      columns = TerminalColumns(STDOUT_FILENO);
      if (columns > 0 && survey.ok()) {
        size_t addr_width = 7;
        for (const SurveyNode& node : survey->nodes) {
          addr_width = std::max(addr_width, node.addr.size());
        }
        context.bar_width =
            std::clamp(columns - static_cast<int>(addr_width) - kRowColumnsBesideBar, kMinBarWidth,
                       kMaxBarWidth);
      }
    }
    if (!survey.ok()) context.error = survey.status().message();
    const std::string frame = WatchFrame(survey.ok() ? &*survey : nullptr, context);

    if (terminal) {
      std::string out;
      if (!cursor_hidden) {
        out += std::string(kAnsiHideCursor) + kAnsiClearScreen;
        cursor_hidden = true;
      }
      WriteAll(out + InPlace(frame, columns));
    } else {
      WriteAll((frames > 0 ? "\n" : "") + frame);
    }
    ++frames;

    if (survey.ok()) {
      const std::map<std::string, uint64_t> last_counts = std::move(previous);
      previous.clear();
      starts = {options.node};
      for (const SurveyNode& node : survey->nodes) {
        remembered.insert(node.addr);
        if (!node.answers()) continue;
        // One that could not count keeps its last count, for the change once it can again.
        if (node.counted()) {
          previous[node.addr] = node.keys();
        } else if (auto last = last_counts.find(node.addr); last != last_counts.end()) {
          previous[node.addr] = last->second;
        }
        if (node.addr != options.node) starts.push_back(node.addr);
      }
      have_previous = true;
    }
    if (watch.count > 0 && frames >= watch.count) break;
    SleepUntil(started + std::chrono::milliseconds(watch.interval_ms));
  }
  if (cursor_hidden) WriteAll(kAnsiShowCursor);
  return exit_code;
}

}  // namespace chord::ctl
