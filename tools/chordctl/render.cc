#include "tools/chordctl/render.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <tuple>
#include <utility>

#include "protocol/id.h"
#include "tools/chordctl/text_table.h"

namespace chord::ctl {
namespace {

bool IsSet(const wire::NodeInfo& info) { return !info.id().empty() || !info.addr().empty(); }

std::string NodeText(const wire::NodeInfo& info) {
  if (!IsSet(info)) return "(none)";
  return info.addr() + " [" + HexOfIdBytes(info.id()).substr(0, kTableIdHexDigits) + "]";
}

}  // namespace

std::string LookupText(const std::string& key, const wire::LookupResponse& lookup) {
  std::string out = "key " + QuoteKey(key) + " -> owner " + HexOfIdBytes(lookup.owner().id()) +
                    " " + lookup.owner().addr() + " (" + std::to_string(lookup.hops()) +
                    (lookup.hops() == 1 ? " hop" : " hops");
  if (lookup.timeouts() > 0) {
    out += ", " + std::to_string(lookup.timeouts()) +
           (lookup.timeouts() == 1 ? " timeout" : " timeouts");
  }
  return out + ")";
}

std::string StatusText(const wire::StatusResponse& status) {
  std::ostringstream out;
  auto line = [&out](const std::string& name, const std::string& value) {
    out << PadRight(name + ":", 25) << value << "\n";
  };
  line("id", HexOfIdBytes(status.self().id()));
  line("addr", status.self().addr());
  line("joined", status.joined() ? "yes" : "no");
  line("leaving", status.leaving() ? "yes" : "no");
  line("predecessor", NodeText(status.predecessor()));
  line("successors", std::to_string(status.successors_size()) + " of " +
                         std::to_string(status.successor_list_length()));
  for (int i = 0; i < status.successors_size(); ++i) {
    line("  successor[" + std::to_string(i) + "]", NodeText(status.successors(i)));
  }
  line("fingers", std::to_string(status.fingers_size()) + " distinct");
  for (int i = 0; i < status.fingers_size(); ++i) {
    line("  finger[" + std::to_string(i) + "]", NodeText(status.fingers(i)));
  }
  if (status.store_error().empty()) {
    line("keys", std::to_string(status.keys()));
    line("replica_keys", std::to_string(status.replica_keys()));
    line("tombstones", std::to_string(status.tombstones()));
  } else {
    line("keys", "unknown: the store could not be read (" + status.store_error() + ")");
  }
  line("store_free_bytes", std::to_string(status.store_free_bytes()));
  line("replicas", std::to_string(status.replicas()));
  line("ring_has_enough_members", status.ring_has_enough_members() ? "yes" : "no");
  line("stabilize_rounds", std::to_string(status.stabilize_rounds()));
  const auto& d = status.data();
  line("handed over", std::to_string(d.keys_sent()) + " keys, " + std::to_string(d.bytes_sent()) +
                          " bytes (received " + std::to_string(d.keys_received()) + " keys)");
  line("anti-entropy", std::to_string(d.anti_entropy_rounds()) + " rounds, " +
                           std::to_string(d.anti_entropy_clean()) + " clean, " +
                           std::to_string(d.anti_entropy_bytes()) + " bytes, " +
                           std::to_string(d.keys_repaired()) + " keys repaired");
  line("dropped", std::to_string(d.keys_dropped()) + " copies no longer held; " +
                      std::to_string(d.tombstones_purged()) + " tombstones purged");
  line("watch", std::to_string(status.watchers()) + " watchers waiting, " +
                    std::to_string(status.watched_keys()) + " keys followed, " +
                    std::to_string(d.watch_resyncs()) + " resyncs");
  line("hints",
       std::to_string(status.hints_pending()) + " pending (" + std::to_string(status.hint_bytes()) +
           " bytes); " + std::to_string(d.hints_stored()) + " stored, " +
           std::to_string(d.hints_replaced()) + " replaced, " +
           std::to_string(d.hints_delivered()) + " delivered, " +
           std::to_string(d.hints_dropped()) + " dropped, " + std::to_string(d.hints_loaded()) +
           " loaded at start, " + std::to_string(d.hints_refused()) + " refused");
  line("writes_failed", std::to_string(d.writes_failed()));
  line("cas_conflicts", std::to_string(d.cas_conflicts()));
  line("keys_expired", std::to_string(d.keys_expired()));
  line("requests_shed", std::to_string(d.requests_shed()) +
                            " (refused: the node held its limit of requests under way)");
  if (status.has_process()) {
    const auto& p = status.process();
    char cpu[32];
    std::snprintf(cpu, sizeof(cpu), "%.2f", p.cpu_seconds());
    line("process", std::string(cpu) + " CPU seconds, " +
                        std::to_string(p.resident_memory_bytes() >> 20) + " MiB resident, " +
                        std::to_string(p.open_fds()) + " open files of " +
                        std::to_string(p.max_fds()));
  }
  return out.str();
}

std::string EscapeTsv(const std::string& field) {
  std::string out;
  out.reserve(field.size());
  for (char c : field) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string DumpText(std::vector<DumpRecord> records, uint64_t now_unix_ms, size_t* listed) {
  std::erase_if(records, [now_unix_ms](const DumpRecord& r) {
    return r.expires_unix_ms != 0 && r.expires_unix_ms <= now_unix_ms;
  });
  std::sort(records.begin(), records.end(), [](const DumpRecord& a, const DumpRecord& b) {
    return std::tie(a.key, a.value, a.expires_unix_ms) <
           std::tie(b.key, b.value, b.expires_unix_ms);
  });
  records.erase(
      std::unique(records.begin(), records.end(),
                  [](const DumpRecord& a, const DumpRecord& b) { return a.key == b.key; }),
      records.end());
  std::string out;
  for (const DumpRecord& r : records) {
    out += EscapeTsv(r.key);
    out += '\t';
    out += EscapeTsv(r.value);
    if (r.expires_unix_ms != 0) {  // load puts it with the time it has left
      out += '\t';
      out += std::to_string(r.expires_unix_ms);
    }
    out += '\n';
  }
  *listed = records.size();
  return out;
}

}  // namespace chord::ctl
