#include "tools/client/key_watcher.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "tools/client/chord_client.h"

namespace chord {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Nodes remembered as contacts for lookups (the given ones first).
constexpr size_t kMaxContacts = 16;
// NOT_OWNER hints followed in a row before the next one waits a moment (a ring settling).
constexpr int kHintsBeforePause = 3;
constexpr auto kRetryPause = std::chrono::milliseconds(200);

void Remember(std::vector<std::string>* contacts, const std::string& addr) {
  if (addr.empty() || contacts->size() >= kMaxContacts) return;
  if (std::find(contacts->begin(), contacts->end(), addr) == contacts->end()) {
    contacts->push_back(addr);
  }
}

void Pause() { std::this_thread::sleep_for(kRetryPause); }

}  // namespace

AnswerProblem FollowKey(const KeyWatchOptions& options,
                        const std::function<bool(const wire::WatchEvent&)>& on_event,
                        const std::function<bool()>& keep_going) {
  const std::string& key = options.key;
  std::vector<std::string> contacts = options.contacts;
  if (contacts.empty()) return {AnswerKind::kUsage, "no node to watch through was given"};
  size_t next_contact = 0;
  std::string owner;  // the node to poll; empty: look it up first
  std::unique_ptr<ChordClient> client;
  uint64_t after = options.after_version;
  bool start = options.start;
  int hints_in_a_row = 0;
  std::string last_problem = "none yet";
  auto last_answer = SteadyClock::now();
  while (keep_going()) {
    if (SteadyClock::now() - last_answer > std::chrono::milliseconds(options.give_up_ms)) {
      return {AnswerKind::kUnavailable,
              "no node of the ring answered the watch of key " + QuoteKey(key) + " for " +
                  std::to_string(options.give_up_ms / 1000) + " s (last problem: " + last_problem +
                  "); check the ring with chordctl ring and watch again with " +
                  options.resume_hint + std::to_string(after)};
    }
    if (owner.empty()) {
      ChordClient lookup(contacts[next_contact++ % contacts.size()], options.timeout_ms);
      Result<wire::LookupResponse> r = lookup.Lookup(key);
      if (!r.ok() || r->code() != wire::OK) {
        last_problem = r.ok() ? r->error() : r.status().message();
        Pause();
        continue;
      }
      owner = r->owner().addr();
      Remember(&contacts, owner);
      client.reset();
    }
    if (!client)
      client = std::make_unique<ChordClient>(owner, options.wait_ms + options.timeout_ms);
    Result<wire::WatchResponse> r = client->Watch(key, after, options.wait_ms, start);
    if (!r.ok()) {
      // The owner died or is unreachable: look the key up again and resume.
      last_problem = r.status().message();
      owner.clear();
      Pause();
      continue;
    }
    last_answer = SteadyClock::now();
    if (r->code() == wire::OK) {
      hints_in_a_row = 0;
      for (const wire::WatchEvent& e : r->events()) {
        if (!on_event(e)) return {};
        after = e.version();
        start = false;
      }
      continue;
    }
    last_problem = r->error();
    if (r->code() == wire::INVALID) {
      return {AnswerKind::kUsage,
              "the watch of key " + QuoteKey(key) + " was refused: " + r->error()};
    }
    if (r->code() == wire::FORBIDDEN) return {AnswerKind::kUnavailable, r->error()};
    owner.clear();
    if (r->code() == wire::NOT_OWNER && r->has_hint() && hints_in_a_row < kHintsBeforePause) {
      ++hints_in_a_row;
      owner = r->hint().addr();
      Remember(&contacts, owner);
      client.reset();  // the next poll goes to the node the hint names
      continue;
    }
    hints_in_a_row = 0;
    Pause();
  }
  return {};
}

}  // namespace chord
