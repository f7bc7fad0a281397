#include "tools/chordctl/bulk_load.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "protocol/limits.h"
#include "tools/chordctl/load_input.h"
#include "tools/chordctl/progress_line.h"
#include "tools/chordctl/render.h"
#include "tools/chordctl/terminal.h"
#include "tools/client/chord_client.h"
#include "tools/client/duration.h"

namespace chord::ctl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxQueuedJobs = 1024;       // per worker
constexpr size_t kMaxQueuedBytes = 16 << 20;  // per worker (values may be 1 MiB)
constexpr int kPutAttempts = 3;               // a put is retried on transient failures
constexpr int kRetryBackoffMs = 100;          // times the attempt number
constexpr size_t kMaxPrintedErrors = 100;     // of each kind; the rest are only counted
constexpr auto kProgressEvery = std::chrono::milliseconds(200);
constexpr int kProgressBarWidth = 30;

// One record to store, with the input line it came from.
struct Job {
  uint64_t line = 0;
  uint64_t end_offset = 0;  // input bytes up to the end of its line
  std::string key;
  std::string value;
  uint64_t expires_unix_ms = 0;  // 0: never
};

// A bounded queue between the reader and one worker.
class JobQueue {
 public:
  // Blocks while the queue is full (it always takes a job when empty).
  void Push(Job job) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] {
      return jobs_.empty() || (jobs_.size() < kMaxQueuedJobs && bytes_ < kMaxQueuedBytes);
    });
    bytes_ += job.key.size() + job.value.size();
    jobs_.push_back(std::move(job));
    not_empty_.notify_one();
  }
  // The next job; nullopt once the queue is closed and empty.
  std::optional<Job> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return !jobs_.empty() || closed_; });
    if (jobs_.empty()) return std::nullopt;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    bytes_ -= job.key.size() + job.value.size();
    not_full_.notify_one();
    return job;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<Job> jobs_;
  size_t bytes_ = 0;
  bool closed_ = false;
};

// What the workers and the reader share.
struct LoadState {
  std::atomic<uint64_t> stored{0};
  std::atomic<uint64_t> expired{0};  // past their expiry when their turn came: not put
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> not_attempted{0};  // queued when load gave up
  std::atomic<int> failures_in_a_row{0};
  std::atomic<bool> give_up{false};
  std::atomic<uint64_t> printed_failures{0};
  std::atomic<uint64_t> bytes_done{0};  // input bytes up to the last record stored or failed
};

// kRefused: the node answered that the record itself is invalid (no retry; does not count
// toward giving up on the ring).
enum class PutOutcome { kStored, kExpired, kFailed, kRefused };

// Stores one record, retrying transient failures; a record with an expiry is put with the time
// it has left (at most kMaxTtlMs: a later expiry is brought forward to that), and not at all
// once that is gone. kFailed or kRefused, with the reason, when it was not stored.
PutOutcome PutWithRetries(ChordClient* client, const Job& job, std::string* error) {
  for (int attempt = 1; attempt <= kPutAttempts; ++attempt) {
    DataOptions put_options;
    if (job.expires_unix_ms != 0) {
      const uint64_t now = UnixNowMs();
      if (job.expires_unix_ms <= now) return PutOutcome::kExpired;
      put_options.ttl_ms = std::min(job.expires_unix_ms - now, kMaxTtlMs);
    }
    Result<wire::DataResponse> r = client->Put(job.key, job.value, put_options);
    bool retryable = true;
    if (r.ok() && r->code() == wire::OK) return PutOutcome::kStored;
    if (r.ok()) {
      *error = client->addr() + " answered " + wire::Code_Name(r->code()) +
               (r->error().empty() ? "" : " (" + r->error() + ")");
      retryable = r->code() != wire::INVALID;
    } else {
      *error = r.status().message();
      retryable = r.status().code() != Status::Code::kInvalidArgument;
    }
    if (!retryable) return PutOutcome::kRefused;
    if (attempt == kPutAttempts) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(kRetryBackoffMs * attempt));
  }
  return PutOutcome::kFailed;
}

void Worker(const CtlOptions& options, JobQueue* queue, LoadState* state, ProgressLine* progress) {
  ChordClient client(options.node, options.timeout_ms);
  while (std::optional<Job> job = queue->Pop()) {
    uint64_t done = state->bytes_done.load();
    while (done < job->end_offset &&
           !state->bytes_done.compare_exchange_weak(done, job->end_offset)) {
    }
    if (state->give_up.load()) {
      state->not_attempted.fetch_add(1);
      continue;
    }
    std::string error;
    const PutOutcome outcome = PutWithRetries(&client, *job, &error);
    if (outcome == PutOutcome::kStored || outcome == PutOutcome::kExpired) {
      (outcome == PutOutcome::kStored ? state->stored : state->expired).fetch_add(1);
      state->failures_in_a_row.store(0);
      continue;
    }
    state->failed.fetch_add(1);
    // A record the node refuses says nothing of the ring: only failed puts lead to giving up.
    if (outcome == PutOutcome::kFailed &&
        state->failures_in_a_row.fetch_add(1) + 1 >= kLoadGiveUpAfterFailures) {
      state->give_up.store(true);
    }
    const uint64_t printed = state->printed_failures.fetch_add(1);
    if (printed < kMaxPrintedErrors) {
      progress->Print("chordctl: line " + std::to_string(job->line) + ": could not store key " +
                      QuoteKey(job->key) + ": " + error);
    } else if (printed == kMaxPrintedErrors) {
      progress->Print("chordctl: more puts failed; they are counted but not printed");
    }
  }
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f s", s);
  return buf;
}

uint64_t PerSecond(uint64_t count, double seconds) {
  return seconds > 0 ? static_cast<uint64_t>(static_cast<double>(count) / seconds) : count;
}

}  // namespace

int RunLoad(const CtlOptions& options, const LoadOptions& load) {
  const bool from_stdin = load.path == "-";
  const int fd = from_stdin ? STDIN_FILENO : ::open(load.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    PrintError("could not open \"" + load.path + "\": " + std::strerror(errno) +
               "; give a readable file, or - for stdin");
    return kExitUsage;
  }
  struct stat st {};
  const uint64_t total_bytes =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;

  // Fail fast, with exit 3, when --node itself cannot be reached.
  {
    ChordClient probe(options.node, options.timeout_ms);
    Result<wire::StatusResponse> status = probe.GetStatus();
    if (!status.ok()) {
      if (!from_stdin) ::close(fd);
      return ReportStatus(status.status());
    }
  }

  const auto start = Clock::now();
  ProgressLine progress(IsTerminal(STDERR_FILENO));
  LoadState state;
  const int parallel = std::clamp(load.parallel, 1, kMaxLoadParallel);
  std::vector<JobQueue> queues(static_cast<size_t>(parallel));
  std::vector<std::thread> workers;
  for (int i = 0; i < parallel; ++i) {
    workers.emplace_back(Worker, std::cref(options), &queues[static_cast<size_t>(i)], &state,
                         &progress);
  }

  // Redraws the progress line until the load is over.
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread ticker;
  if (progress.enabled()) {
    ticker = std::thread([&] {
      std::unique_lock<std::mutex> lock(done_mu);
      while (!done_cv.wait_for(lock, kProgressEvery, [&] { return done; })) {
        const uint64_t records = state.stored.load() + state.expired.load() + state.failed.load();
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        std::string text = "load: ";
        if (total_bytes > 0) {
          const double fraction =
              static_cast<double>(state.bytes_done.load()) / static_cast<double>(total_bytes);
          text += ProgressBar(fraction, kProgressBarWidth) + " " +
                  std::to_string(static_cast<int>(fraction * 100)) + "%  ";
        }
        text += std::to_string(records) + " records  " +
                std::to_string(PerSecond(records, elapsed)) + " records/s";
        progress.Draw(text);
      }
    });
  }

  LineReader reader(fd, kMaxLoadLineBytes);
  std::string line;
  bool too_long = false;
  uint64_t line_no = 0;
  uint64_t malformed = 0;
  std::hash<std::string> hasher;
  bool stopped_early = false;
  while (reader.Next(&line, &too_long)) {
    ++line_no;
    if (state.give_up.load()) {
      stopped_early = true;
      break;
    }
    LoadRecord record;
    if (too_long) {
      record.error = "the line is longer than " + std::to_string(kMaxLoadLineBytes) +
                     " bytes; keys may be at most " + std::to_string(kMaxKeyBytes) +
                     " bytes and values at most " + std::to_string(kMaxValueBytes);
    } else {
      record = ParseLoadLine(line);
      if (record.empty) continue;
    }
    if (!record.ok) {
      if (malformed < kMaxPrintedErrors) {
        progress.Print("chordctl: line " + std::to_string(line_no) + ": " + record.error);
      } else if (malformed == kMaxPrintedErrors) {
        progress.Print("chordctl: more lines are malformed; they are counted but not printed");
      }
      ++malformed;
      continue;
    }
    const size_t worker = hasher(record.key) % queues.size();
    queues[worker].Push(Job{line_no, reader.consumed(), std::move(record.key),
                            std::move(record.value), record.expires_unix_ms});
  }
  for (JobQueue& q : queues) q.Close();
  for (std::thread& t : workers) t.join();
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
  if (ticker.joinable()) ticker.join();
  progress.Clear();
  if (!from_stdin) ::close(fd);

  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t stored = state.stored.load();
  std::string summary = "loaded " + std::to_string(stored) +
                        (stored == 1 ? " record" : " records") + " in " + Seconds(elapsed) + " (" +
                        std::to_string(PerSecond(stored, elapsed)) + " records/s)";
  if (const uint64_t expired = state.expired.load(); expired > 0) {
    summary += "; " + std::to_string(expired) +
               (expired == 1 ? " record had expired already and was not put"
                             : " records had expired already and were not put");
  }
  if (malformed > 0) {
    summary += "; skipped " + std::to_string(malformed) +
               (malformed == 1 ? " malformed line" : " malformed lines");
  }
  if (state.failed.load() > 0) {
    summary += "; " + std::to_string(state.failed.load()) + " could not be stored";
  }
  if (state.give_up.load()) {
    summary +=
        "; gave up after " + std::to_string(kLoadGiveUpAfterFailures) + " failed puts in a row";
    if (stopped_early) summary += " at line " + std::to_string(line_no);
    summary += ", the rest of the input was not loaded; check the ring with chordctl check";
  }
  progress.Print(summary);
  if (reader.failed()) {
    PrintError("could not read \"" + load.path + "\" after line " + std::to_string(line_no) + ": " +
               reader.error() + "; the rest of it was not loaded");
  }

  if (state.failed.load() > 0 || state.not_attempted.load() > 0 || stopped_early) {
    return kExitUnavailable;
  }
  if (malformed > 0 || reader.failed()) return kExitUsage;
  return kExitOk;
}

}  // namespace chord::ctl
