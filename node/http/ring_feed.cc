#include "node/http/ring_feed.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "tools/client/ring_walk.h"
#include "tools/client/wire_json.h"

namespace chord {
namespace {

uint64_t UnixMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string StateOf(const wire::StatusResponse& s) {
  return s.leaving() ? "Leaving" : (s.joined() ? "Up" : "Joining");
}

}  // namespace

RingFeed::RingFeed(std::string start_addr, uint64_t timeout_ms, uint64_t poll_ms,
                   LoopMailbox* mailbox, WalkFn on_walk)
    : start_addr_(std::move(start_addr)),
      timeout_ms_(timeout_ms),
      poll_ms_(poll_ms),
      mailbox_(mailbox),
      on_walk_(std::move(on_walk)),
      thread_([this] { Run(); }) {}

RingFeed::~RingFeed() { Stop(); }

void RingFeed::WalkNow() {
  std::lock_guard<std::mutex> lock(mu_);
  walk_requested_ = true;
  cv_.notify_one();
}

void RingFeed::SetPolling(bool polling) {
  std::lock_guard<std::mutex> lock(mu_);
  polling_ = polling;
  if (polling) walk_requested_ = true;
  cv_.notify_one();
}

void RingFeed::RequestStop() {
  stopping_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_one();
}

void RingFeed::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

void RingFeed::Run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_),
                   [this] { return stop_ || walk_requested_; });
      if (stop_) return;
      if (!walk_requested_ && !polling_) continue;
      walk_requested_ = false;
    }
    Result<RingView> view = WalkRing(start_addr_, timeout_ms_, [this] { return stopping_.load(); });
    if (stopping_) return;
    if (!view.ok()) {
      const std::string error = view.status().message();
      mailbox_->Post([this, error] { on_walk_(false, error, {}); });
      continue;
    }
    std::map<std::string, Seen> now;
    for (const RingNode& n : view->nodes) now[n.id.ToHex()] = Seen{n.addr, StateOf(n.status)};
    std::vector<RingEvent> events;
    if (have_last_) events = Diff(last_, now, view->problems, UnixMs());
    last_ = std::move(now);
    have_last_ = true;
    std::string body = DumpJson(RingJson(*view), -1);
    mailbox_->Post([this, body = std::move(body), events = std::move(events)] {
      on_walk_(true, body, events);
    });
  }
}

std::vector<RingEvent> RingFeed::Diff(const std::map<std::string, Seen>& before,
                                      const std::map<std::string, Seen>& now,
                                      const std::vector<std::string>& problems, uint64_t at_ms) {
  std::vector<RingEvent> events;
  for (const auto& [id, seen] : before) {
    if (now.count(id) > 0) continue;
    // Why it is gone: the walk's sentence that names it, if any.
    std::string reason = "no longer in the ring";
    for (const std::string& p : problems) {
      if (p.find(seen.addr) != std::string::npos) {
        reason = p;
        break;
      }
    }
    events.push_back(RingEvent{
        "down",
        DumpJson({{"id", id}, {"addr", seen.addr}, {"at_unix_ms", at_ms}, {"reason", reason}},
                 -1)});
  }
  for (const auto& [id, seen] : now) {
    auto it = before.find(id);
    if (it == before.end()) {
      events.push_back(RingEvent{
          "join",
          DumpJson({{"id", id}, {"addr", seen.addr}, {"at_unix_ms", at_ms}, {"state", seen.state}},
                   -1)});
    } else if (it->second.state != seen.state) {
      events.push_back(RingEvent{
          "state",
          DumpJson({{"id", id}, {"addr", seen.addr}, {"state", seen.state}, {"at_unix_ms", at_ms}},
                   -1)});
    }
  }
  return events;
}

}  // namespace chord
