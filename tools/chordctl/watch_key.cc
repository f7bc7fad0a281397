#include "tools/chordctl/watch_key.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "protocol/limits.h"
#include "tools/chordctl/render.h"
#include "tools/chordctl/stop_signals.h"
#include "tools/client/chord_client.h"

namespace chord::ctl {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Nodes remembered as contacts for lookups (the --node one first).
constexpr size_t kMaxContacts = 16;
// NOT_OWNER hints followed in a row before the next one waits a moment (a ring settling).
constexpr int kHintsBeforePause = 3;
constexpr auto kRetryPause = std::chrono::milliseconds(200);

const char* TypeName(wire::WatchEvent::Type t) {
  switch (t) {
    case wire::WatchEvent::PUT:
      return "put";
    case wire::WatchEvent::DELETE:
      return "delete";
    case wire::WatchEvent::EXPIRE:
      return "expire";
    case wire::WatchEvent::RESYNC:
      return "resync";
    case wire::WatchEvent::CURRENT:
      return "current";
    default:
      return "unknown";
  }
}

bool CarriesState(const wire::WatchEvent& e) {
  return e.type() == wire::WatchEvent::RESYNC || e.type() == wire::WatchEvent::CURRENT;
}

void Remember(std::vector<std::string>* contacts, const std::string& addr) {
  if (addr.empty() || contacts->size() >= kMaxContacts) return;
  if (std::find(contacts->begin(), contacts->end(), addr) == contacts->end()) {
    contacts->push_back(addr);
  }
}

void Pause() { SleepUntil(SteadyClock::now() + kRetryPause); }

}  // namespace

std::string WatchEventLine(const wire::WatchEvent& e, bool json) {
  const bool has_value = e.type() == wire::WatchEvent::PUT || (CarriesState(e) && !e.deleted());
  if (json) {
    nlohmann::json doc;
    doc["type"] = TypeName(e.type());
    doc["version"] = e.version();
    if (has_value) doc["value"] = e.value();
    if (CarriesState(e)) doc["deleted"] = e.deleted();
    return DumpJson(doc);
  }
  std::string line = std::string(TypeName(e.type())) + " " + std::to_string(e.version());
  if (has_value) line += " " + EscapeTsv(e.value());
  if (CarriesState(e) && e.deleted()) line += " (absent)";
  return line;
}

int RunWatchKey(const CtlOptions& options, const std::string& key, const WatchKeyOptions& watch) {
  if (std::string problem = KeyProblem(key); !problem.empty()) {
    PrintError(problem);
    return kExitUsage;
  }
  StopSignals signals;
  std::vector<std::string> contacts{options.node};
  size_t next_contact = 0;
  std::string owner;  // the node to poll; empty: look it up first
  std::unique_ptr<ChordClient> client;
  uint64_t after = watch.from_version;
  bool start = after == 0;
  uint64_t printed = 0;
  int hints_in_a_row = 0;
  std::string last_problem = "none yet";
  auto last_answer = SteadyClock::now();
  while (!StopRequested() && (watch.count == 0 || printed < watch.count)) {
    if (SteadyClock::now() - last_answer > std::chrono::milliseconds(watch.give_up_ms)) {
      PrintError("no node of the ring answered the watch of key " + QuoteKey(key) + " for " +
                 std::to_string(watch.give_up_ms / 1000) + " s (last problem: " + last_problem +
                 "); check the ring with chordctl ring and watch again with --from-version " +
                 std::to_string(after));
      return kExitUnavailable;
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
    if (!client) client = std::make_unique<ChordClient>(owner, watch.wait_ms + options.timeout_ms);
    Result<wire::WatchResponse> r = client->Watch(key, after, watch.wait_ms, start);
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
        if (watch.count != 0 && printed >= watch.count) break;
        const std::string line = WatchEventLine(e, options.json) + "\n";
        std::fwrite(line.data(), 1, line.size(), stdout);
        ++printed;
        after = e.version();
        start = false;
      }
      std::fflush(stdout);
      continue;
    }
    last_problem = r->error();
    if (r->code() == wire::INVALID) {
      PrintError("the watch of key " + QuoteKey(key) + " was refused: " + r->error());
      return kExitUsage;
    }
    if (r->code() == wire::FORBIDDEN) {
      PrintError(r->error());
      return kExitUnavailable;
    }
    owner.clear();
    if (r->code() == wire::NOT_OWNER && r->has_hint() && hints_in_a_row < kHintsBeforePause) {
      ++hints_in_a_row;
      owner = r->hint().addr();
      Remember(&contacts, owner);
      continue;
    }
    hints_in_a_row = 0;
    Pause();
  }
  return kExitOk;
}

}  // namespace chord::ctl
