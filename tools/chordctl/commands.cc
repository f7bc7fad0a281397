#include "tools/chordctl/commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <utility>
#include <vector>

#include "protocol/id.h"
#include "protocol/limits.h"
#include "tools/chordctl/progress_line.h"
#include "tools/chordctl/render.h"
#include "tools/chordctl/ring_check.h"
#include "tools/chordctl/ring_survey.h"
#include "tools/chordctl/ring_svg.h"
#include "tools/chordctl/ring_table.h"
#include "tools/chordctl/terminal.h"
#include "tools/chordctl/text_table.h"
#include "tools/client/chord_client.h"
#include "tools/client/duration.h"
#include "tools/client/ring_walk.h"

namespace chord::ctl {
namespace {

constexpr int kDumpProgressBarWidth = 20;

// Prints the sentence for a non-OK answer `r` to `op` and returns its exit code (0: none).
int ReportAnswer(const CtlOptions& options, const char* op, const std::string& key,
                 const wire::DataResponse& r) {
  AnswerProblem problem = DescribeDataAnswer(options.node, op, key, r);
  if (problem.kind != AnswerKind::kOk) PrintError(problem.sentence);
  return static_cast<int>(problem.kind);
}

// Client-side limits, the same as the node's (protocol/limits.h).
bool CheckKey(const std::string& key) {
  const std::string problem = KeyProblem(key);
  if (!problem.empty()) PrintError(problem);
  return problem.empty();
}

bool CheckValue(const std::string& value) {
  const std::string problem = ValueProblem(value.size());
  if (!problem.empty()) PrintError(problem);
  return problem.empty();
}

void WriteStdout(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// The exit code of a put's or delete's answer, with its JSON on stdout under --json: also for
// a condition that did not hold (code CONFLICT, the key's current version), which a script
// needs to retry.
int ReportWrite(const CtlOptions& options, const char* op, const std::string& key,
                const wire::DataResponse& r) {
  const int code = ReportAnswer(options, op, key, r);
  if (options.json && (code == kExitOk || code == kExitConflict)) {
    WriteStdout(DumpJson(DataJson(key, r, /*with_value=*/false)) + "\n");
  }
  return code;
}

}  // namespace

void PrintError(const std::string& sentence) { std::cerr << "chordctl: " << sentence << "\n"; }

int ReportStatus(const Status& status) {
  PrintError(status.message());
  switch (status.code()) {
    case Status::Code::kNotFound:
      return kExitNotFound;
    case Status::Code::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitUnavailable;
  }
}

bool ReadValueFile(const std::string& path, std::string* value) {
  const size_t limit = kMaxValueBytes + 1;
  const bool from_stdin = path == "-";
  std::FILE* file = from_stdin ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    PrintError("could not open the value file \"" + path + "\": " + std::strerror(errno) +
               "; check the path");
    return false;
  }
  value->clear();
  char buf[64 * 1024];
  // Bounded: stops once the limit is passed.
  while (value->size() < limit) {
    const size_t n = std::fread(buf, 1, sizeof(buf), file);
    if (n == 0) break;
    value->append(buf, std::min(n, limit - value->size()));
  }
  const bool failed = std::ferror(file) != 0;
  if (!from_stdin) std::fclose(file);
  if (failed) {
    PrintError("could not read the value file \"" + path + "\"; check that it is readable");
    return false;
  }
  return true;
}

int RunPut(const CtlOptions& options, const std::string& key, const std::string& value,
           const DataOptions& data) {
  if (!CheckKey(key) || !CheckValue(value)) return kExitUsage;
  ChordClient client(options.node, options.timeout_ms);
  Result<wire::DataResponse> r = client.Put(key, value, data);
  if (!r.ok()) return ReportStatus(r.status());
  return ReportWrite(options, "put", key, *r);
}

int RunGet(const CtlOptions& options, const std::string& key, const DataOptions& data) {
  if (!CheckKey(key)) return kExitUsage;
  ChordClient client(options.node, options.timeout_ms);
  Result<wire::DataResponse> r = client.Get(key, data);
  if (!r.ok()) return ReportStatus(r.status());
  if (int code = ReportAnswer(options, "get", key, *r); code != kExitOk) return code;
  WriteStdout((options.json ? DumpJson(DataJson(key, *r, /*with_value=*/true)) : r->value()) +
              "\n");
  return kExitOk;
}

int RunDelete(const CtlOptions& options, const std::string& key, const DataOptions& data) {
  if (!CheckKey(key)) return kExitUsage;
  ChordClient client(options.node, options.timeout_ms);
  Result<wire::DataResponse> r = client.Delete(key, data);
  if (!r.ok()) return ReportStatus(r.status());
  // Deleting a key that is not there leaves the ring as asked: success.
  return ReportWrite(options, "delete", key, *r);
}

int RunLookup(const CtlOptions& options, const std::string& key) {
  if (!CheckKey(key)) return kExitUsage;
  ChordClient client(options.node, options.timeout_ms);
  Result<wire::LookupResponse> r = client.Lookup(key);
  if (!r.ok()) return ReportStatus(r.status());
  if (r->code() != wire::OK) {
    wire::DataResponse answer;
    answer.set_code(r->code());
    answer.set_error(r->error());
    return ReportAnswer(options, "lookup", key, answer);
  }
  WriteStdout((options.json ? DumpJson(LookupJson(key, *r)) : LookupText(key, *r)) + "\n");
  return kExitOk;
}

int RunStatus(const CtlOptions& options) {
  ChordClient client(options.node, options.timeout_ms);
  Result<wire::StatusResponse> r = client.GetStatus();
  if (!r.ok()) return ReportStatus(r.status());
  WriteStdout(options.json ? DumpJson(StatusJson(*r)) + "\n" : StatusText(*r));
  return kExitOk;
}

int RunRing(const CtlOptions& options, const std::string& svg_path) {
  if (options.json) {
    Result<RingView> view = WalkRing(options.node, options.timeout_ms);
    if (!view.ok()) return ReportStatus(view.status());
    WriteStdout(DumpJson(RingJson(*view)) + "\n");
    return kExitOk;
  }
  Result<RingSurvey> survey = SurveyRing({options.node}, {}, options.timeout_ms);
  if (!survey.ok()) return ReportStatus(survey.status());
  const RingVerdict verdict = CheckRing(*survey);
  if (svg_path.empty()) {
    WriteStdout(RingTable(*survey, verdict));
    return kExitOk;
  }
  const std::string svg = RingSvg(*survey, verdict);
  const std::string summary = "wrote " + svg_path + ": " +
                              CountOf(survey->nodes.size(), "node", "nodes") + ", " +
                              CountOf(survey->TotalKeys(), "key", "keys") + "\n";
  if (svg_path == "-") {
    WriteStdout(svg);
    std::cerr << summary;
    return kExitOk;
  }
  std::FILE* file = std::fopen(svg_path.c_str(), "wb");
  if (file == nullptr) {
    PrintError("could not write \"" + svg_path + "\": " + std::strerror(errno) +
               "; give a writable path with --svg");
    return kExitUsage;
  }
  const bool written = std::fwrite(svg.data(), 1, svg.size(), file) == svg.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    PrintError("could not write \"" + svg_path + "\" completely; check the free space");
    return kExitUsage;
  }
  WriteStdout(summary);
  return kExitOk;
}

int RunCheck(const CtlOptions& options) {
  Result<RingSurvey> survey = SurveyRing({options.node}, {}, options.timeout_ms);
  if (!survey.ok()) return ReportStatus(survey.status());
  const RingVerdict verdict = CheckRing(*survey);
  WriteStdout(VerdictText(verdict));
  return verdict.ok ? kExitOk : kExitNotFound;
}

int RunDump(const CtlOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ProgressLine progress(IsTerminal(STDERR_FILENO));
  progress.Draw("dump: walking the ring from " + options.node);
  Result<RingView> view = WalkRing(options.node, options.timeout_ms);
  if (!view.ok()) {
    progress.Clear();
    return ReportStatus(view.status());
  }
  if (!view->consistent) {
    progress.Clear();
    PrintError("warning: the ring is not consistent (" +
               (view->problems.empty() ? std::string("see chordctl ring") : view->problems[0]) +
               "); the dump may miss or repeat keys");
  }
  // The vnodes of one process share its store: list it once, through its first vnode.
  std::map<std::string, std::vector<size_t>> vnodes_by_process;
  for (size_t i = 0; i < view->nodes.size(); ++i) {
    const std::string& addr = view->nodes[i].addr;
    vnodes_by_process[addr.substr(0, addr.find('#'))].push_back(i);
  }
  std::vector<DumpRecord> records;
  const bool alone = view->nodes.size() == 1;
  size_t listed = 0;
  for (const auto& [process, vnodes] : vnodes_by_process) {
    progress.Draw(
        "dump: " +
        ProgressBar(static_cast<double>(listed) / static_cast<double>(vnodes_by_process.size()),
                    kDumpProgressBarWidth) +
        " listing " + process + " (" + std::to_string(listed + 1) + " of " +
        std::to_string(vnodes_by_process.size()) + " nodes), " + std::to_string(records.size()) +
        " records so far");
    ++listed;
    ChordClient client(view->nodes[vnodes.front()].addr, options.timeout_ms);
    Result<std::vector<wire::Record>> list = client.ListKeys(/*with_values=*/true);
    if (!list.ok()) {
      progress.Clear();
      return ReportStatus(list.status());
    }
    for (wire::Record& record : list.value()) {
      if (record.deleted()) continue;
      // Primary copies only: the key's id is in (ring predecessor, node] of one of them.
      const Id key_id = Id::Sha1(record.key());
      const bool primary =
          alone || std::any_of(vnodes.begin(), vnodes.end(), [&](size_t i) {
            return Id::InHalfOpen(key_id, view->RingPredecessor(i).id, view->nodes[i].id);
          });
      if (!primary) continue;
      records.push_back(DumpRecord{std::move(*record.mutable_key()),
                                   std::move(*record.mutable_value()), record.expires_unix_ms()});
    }
  }
  // Expiries are judged by this machine's clock: a key past its expiry that its node has not
  // swept yet is left out.
  size_t lines = 0;
  const std::string out = DumpText(std::move(records), UnixNowMs(), &lines);
  WriteStdout(out);
  if (progress.enabled()) {
    progress.Clear();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char took[32];
    std::snprintf(took, sizeof(took), "%.2f", seconds);
    progress.Print("dumped " + CountOf(lines, "record", "records") + " from " +
                   CountOf(vnodes_by_process.size(), "node", "nodes") + " in " + took + " s");
  }
  return kExitOk;
}

}  // namespace chord::ctl
