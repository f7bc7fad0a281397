#include "tools/client/wire_json.h"

#include "protocol/id.h"
#include "tools/client/value_json.h"

namespace chord {
namespace {

bool IsSet(const wire::NodeInfo& info) { return !info.id().empty() || !info.addr().empty(); }

bool CarriesState(const wire::WatchEvent& e) {
  return e.type() == wire::WatchEvent::RESYNC || e.type() == wire::WatchEvent::CURRENT;
}

}  // namespace

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

nlohmann::json NodeJson(const wire::NodeInfo& info) {
  if (!IsSet(info)) return nullptr;
  return nlohmann::json{{"id", HexOfIdBytes(info.id())}, {"addr", info.addr()}};
}

nlohmann::json LookupJson(const std::string& key, const wire::LookupResponse& lookup) {
  const std::string key_id =
      lookup.key_id().empty() ? Id::Sha1(key).ToHex() : HexOfIdBytes(lookup.key_id());
  nlohmann::json route = nlohmann::json::array();
  for (const std::string& addr : lookup.route()) route.push_back(addr);
  nlohmann::json replicas = nlohmann::json::array();
  for (const auto& r : lookup.replicas()) replicas.push_back(NodeJson(r));
  return nlohmann::json{{"key", key},
                        {"key_id", key_id},
                        {"owner", NodeJson(lookup.owner())},
                        {"hops", lookup.hops()},
                        {"timeouts", lookup.timeouts()},
                        {"route", std::move(route)},
                        {"replicas", std::move(replicas)}};
}

nlohmann::json DataCountersJson(const wire::DataCounters& d) {
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
                        {"hints_replaced", d.hints_replaced()},
                        {"hints_delivered", d.hints_delivered()},
                        {"hints_dropped", d.hints_dropped()},
                        {"hints_loaded", d.hints_loaded()},
                        {"hints_refused", d.hints_refused()},
                        {"requests_shed", d.requests_shed()},
                        {"writes_failed", d.writes_failed()},
                        {"cas_conflicts", d.cas_conflicts()},
                        {"keys_expired", d.keys_expired()}};
}

nlohmann::json StatusJson(const wire::StatusResponse& status) {
  nlohmann::json successors = nlohmann::json::array();
  for (const auto& s : status.successors()) successors.push_back(NodeJson(s));
  nlohmann::json fingers = nlohmann::json::array();
  for (const auto& f : status.fingers()) fingers.push_back(NodeJson(f));
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : status.known_members()) members.push_back(NodeJson(m));
  nlohmann::json j{{"id", HexOfIdBytes(status.self().id())},
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
                   {"store_free_bytes", status.store_free_bytes()},
                   {"data", DataCountersJson(status.data())}};
  // Why keys, replica_keys and tombstones are 0 although they may not be; absent when they are
  // the store's counts.
  if (!status.store_error().empty()) j["store_error"] = status.store_error();
  // The process the node runs in (Prometheus's standard names); absent from older nodes.
  if (status.has_process()) {
    const auto& p = status.process();
    j["process"] = nlohmann::json{{"cpu_seconds_total", p.cpu_seconds()},
                                  {"resident_memory_bytes", p.resident_memory_bytes()},
                                  {"virtual_memory_bytes", p.virtual_memory_bytes()},
                                  {"start_time_seconds", p.start_time_seconds()},
                                  {"open_fds", p.open_fds()},
                                  {"max_fds", p.max_fds()}};
  }
  return j;
}

nlohmann::json RingJson(const RingView& view) {
  nlohmann::json nodes = nlohmann::json::array();
  uint64_t total_keys = 0;
  uint64_t total_replica_keys = 0;
  uint64_t not_counted = 0;  // nodes that could not read their stores
  for (const RingNode& node : view.nodes) {
    const wire::StatusResponse& s = node.status;
    total_keys += s.keys();
    total_replica_keys += s.replica_keys();
    if (!s.store_error().empty()) ++not_counted;
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
    if (!s.store_error().empty()) nodes.back()["store_error"] = s.store_error();
  }
  nlohmann::json outside = nlohmann::json::array();
  for (const RingNode& o : view.outside) {
    outside.push_back(nlohmann::json{{"id", o.id.ToHex()}, {"addr", o.addr}});
  }
  return nlohmann::json{
      {"nodes", std::move(nodes)},       {"consistent", view.consistent},
      {"outside", std::move(outside)},   {"problems", view.problems},
      {"total_keys", total_keys},        {"total_replica_keys", total_replica_keys},
      {"nodes_not_counted", not_counted}};
}

std::string DumpJson(const nlohmann::json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* WatchEventTypeName(wire::WatchEvent::Type type) {
  switch (type) {
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

nlohmann::json WatchEventJson(const wire::WatchEvent& e) {
  const bool has_value = e.type() == wire::WatchEvent::PUT || (CarriesState(e) && !e.deleted());
  nlohmann::json doc;
  doc["type"] = WatchEventTypeName(e.type());
  doc["version"] = e.version();
  if (has_value) SetValueJson(&doc, e.value());
  if (CarriesState(e)) doc["deleted"] = e.deleted();
  return doc;
}

}  // namespace chord
