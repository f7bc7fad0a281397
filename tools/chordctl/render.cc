#include "tools/chordctl/render.h"

#include <algorithm>
#include <sstream>

#include "protocol/id.h"
#include "tools/chordctl/text_table.h"

namespace chord::ctl {
namespace {

constexpr size_t kMaxQuotedKeyBytes = 60;

// 40 lowercase hex digits for a wire id; any byte string that is not 20 bytes long is
// shown byte by byte so that nothing is hidden.
std::string HexOfIdBytes(const std::string& bytes) {
  if (auto id = Id::FromBytes(bytes)) return id->ToHex();
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

bool IsSet(const wire::NodeInfo& info) { return !info.id().empty() || !info.addr().empty(); }

std::string NodeText(const wire::NodeInfo& info) {
  if (!IsSet(info)) return "(none)";
  return info.addr() + " [" + HexOfIdBytes(info.id()).substr(0, kTableIdHexDigits) + "]";
}

}  // namespace

nlohmann::json NodeJson(const wire::NodeInfo& info) {
  if (!IsSet(info)) return nullptr;
  return nlohmann::json{{"id", HexOfIdBytes(info.id())}, {"addr", info.addr()}};
}

nlohmann::json LookupJson(const std::string& key, const wire::LookupResponse& lookup) {
  const std::string key_id =
      lookup.key_id().empty() ? Id::Sha1(key).ToHex() : HexOfIdBytes(lookup.key_id());
  return nlohmann::json{{"key", key},
                        {"key_id", key_id},
                        {"owner", NodeJson(lookup.owner())},
                        {"hops", lookup.hops()},
                        {"timeouts", lookup.timeouts()}};
}

static nlohmann::json DataCountersJson(const wire::DataCounters& d) {
  return nlohmann::json{{"keys_sent", d.keys_sent()},
                        {"bytes_sent", d.bytes_sent()},
                        {"keys_received", d.keys_received()},
                        {"writes_coordinated", d.writes_coordinated()},
                        {"anti_entropy_rounds", d.anti_entropy_rounds()},
                        {"anti_entropy_clean", d.anti_entropy_clean()},
                        {"anti_entropy_bytes", d.anti_entropy_bytes()},
                        {"keys_repaired", d.keys_repaired()},
                        {"keys_dropped", d.keys_dropped()},
                        {"tombstones_purged", d.tombstones_purged()},
                        {"watch_resyncs", d.watch_resyncs()},
                        {"hints_stored", d.hints_stored()},
                        {"hints_delivered", d.hints_delivered()},
                        {"hints_refused", d.hints_refused()},
                        {"writes_failed", d.writes_failed()}};
}

nlohmann::json StatusJson(const wire::StatusResponse& status) {
  nlohmann::json successors = nlohmann::json::array();
  for (const auto& s : status.successors()) successors.push_back(NodeJson(s));
  nlohmann::json fingers = nlohmann::json::array();
  for (const auto& f : status.fingers()) fingers.push_back(NodeJson(f));
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : status.known_members()) members.push_back(NodeJson(m));
  return nlohmann::json{{"id", HexOfIdBytes(status.self().id())},
                        {"addr", status.self().addr()},
                        {"predecessor", NodeJson(status.predecessor())},
                        {"successors", std::move(successors)},
                        {"fingers", std::move(fingers)},
                        {"keys", status.keys()},
                        {"replica_keys", status.replica_keys()},
                        {"joined", status.joined()},
                        {"leaving", status.leaving()},
                        {"successor_list_length", status.successor_list_length()},
                        {"ring_has_enough_members", status.ring_has_enough_members()},
                        {"stabilize_rounds", status.stabilize_rounds()},
                        {"replicas", status.replicas()},
                        {"tombstones", status.tombstones()},
                        {"known_members", std::move(members)},
                        {"ring_merges", status.ring_merges()},
                        {"watchers", status.watchers()},
                        {"watched_keys", status.watched_keys()},
                        {"hints_pending", status.hints_pending()},
                        {"hint_bytes", status.hint_bytes()},
                        {"data", DataCountersJson(status.data())}};
}

nlohmann::json RingJson(const RingView& view) {
  nlohmann::json nodes = nlohmann::json::array();
  uint64_t total_keys = 0;
  uint64_t total_replica_keys = 0;
  for (const RingNode& node : view.nodes) {
    const wire::StatusResponse& s = node.status;
    total_keys += s.keys();
    total_replica_keys += s.replica_keys();
    nodes.push_back(nlohmann::json{
        {"id", node.id.ToHex()},
        {"addr", node.addr},
        {"keys", s.keys()},
        {"replica_keys", s.replica_keys()},
        {"predecessor", NodeJson(s.predecessor())},
        {"successor", s.successors().empty() ? nlohmann::json(nullptr) : NodeJson(s.successors(0))},
        {"joined", s.joined()},
        {"leaving", s.leaving()},
        {"state", s.leaving() ? "Leaving" : (s.joined() ? "Up" : "Joining")},
    });
  }
  nlohmann::json outside = nlohmann::json::array();
  for (const RingNode& o : view.outside) {
    outside.push_back(nlohmann::json{{"id", o.id.ToHex()}, {"addr", o.addr}});
  }
  return nlohmann::json{
      {"nodes", std::move(nodes)},     {"consistent", view.consistent},
      {"outside", std::move(outside)}, {"problems", view.problems},
      {"total_keys", total_keys},      {"total_replica_keys", total_replica_keys}};
}

std::string DumpJson(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

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
  line("keys", std::to_string(status.keys()));
  line("replica_keys", std::to_string(status.replica_keys()));
  line("tombstones", std::to_string(status.tombstones()));
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
  line("hints", std::to_string(status.hints_pending()) + " pending (" +
                    std::to_string(status.hint_bytes()) + " bytes); " +
                    std::to_string(d.hints_stored()) + " stored, " +
                    std::to_string(d.hints_delivered()) + " delivered, " +
                    std::to_string(d.hints_refused()) + " refused");
  line("writes_failed", std::to_string(d.writes_failed()));
  return out.str();
}

std::string QuoteKey(const std::string& key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "\"";
  const size_t n = std::min(key.size(), kMaxQuotedKeyBytes);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "\"";
  if (key.size() > n) out += " (" + std::to_string(key.size()) + " bytes, shortened)";
  return out;
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

}  // namespace chord::ctl
