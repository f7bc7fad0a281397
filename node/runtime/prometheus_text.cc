#include "node/runtime/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <utility>

namespace chord {

// A label value with backslash, double quote and line feed escaped (\\, \", \n).
std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// A sample value or bound: the shortest decimal that reads back as `value` ("0", "0.0005",
// "2.5", "1e+06"), or +Inf, -Inf, NaN.
std::string FormatPrometheusValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general);
  if (ec != std::errc()) return "NaN";  // cannot happen with 64 bytes
  return std::string(buf, end);
}

namespace {

// Builds the exposition text one family at a time.
class TextWriter {
 public:
  using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

  void Family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    for (char c : help) {  // HELP escapes backslash and line feed only
      if (c == '\\') {
        out_ += "\\\\";
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void Sample(std::string_view name, const Labels& labels, std::string_view value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) out_ += ',';
        out_ += labels[i].first;
        out_ += "=\"";
        out_ += EscapeLabelValue(labels[i].second);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void Sample(std::string_view name, const Labels& labels, uint64_t value) {
    Sample(name, labels, std::to_string(value));
  }

  // The _bucket (cumulative), _sum and _count series of one histogram.
  void HistogramSamples(std::string_view name, Labels labels, const Histogram& h) {
    const std::string bucket = std::string(name) + "_bucket";
    labels.emplace_back("le", "");
    uint64_t cumulative = 0;
    const auto bounds = h.bounds();
    for (size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += h.buckets()[i];
      const std::string le = i < bounds.size() ? FormatPrometheusValue(bounds[i]) : "+Inf";
      labels.back().second = le;
      Sample(bucket, labels, cumulative);
    }
    labels.pop_back();
    Sample(std::string(name) + "_sum", labels, FormatPrometheusValue(h.sum()));
    Sample(std::string(name) + "_count", labels, h.count());
  }

  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

// The exposition text for `vnodes` (families in a fixed order, vnodes in the given order
// within each family, RPC types in name order).
std::string RenderPrometheusText(const std::vector<VnodeMetricsSample>& vnodes) {
  TextWriter w;
  using Labels = TextWriter::Labels;
  using Get = std::function<uint64_t(const VnodeMetricsSample&)>;

  auto per_vnode = [&](std::string_view name, std::string_view type, std::string_view help,
                       const Get& get) {
    w.Family(name, type, help);
    for (const auto& v : vnodes) w.Sample(name, Labels{{"node", v.node}}, get(v));
  };
  auto counter = [&](std::string_view name, std::string_view help, uint64_t NodeCounters::*field) {
    per_vnode(name, "counter", help,
              [field](const VnodeMetricsSample& v) { return v.counters.*field; });
  };

  per_vnode("chord_up", "gauge", "1 while the process serves this vnode's metrics.",
            [](const VnodeMetricsSample&) { return uint64_t{1}; });
  per_vnode("chord_joined", "gauge", "1 when the vnode is a joined member of a ring, else 0.",
            [](const VnodeMetricsSample& v) { return uint64_t{v.joined ? 1u : 0u}; });
  per_vnode("chord_key_counts_readable", "gauge",
            "1 when the vnode could read its store to count its keys, else 0 (chord_keys and "
            "chord_replica_keys then read 0).",
            [](const VnodeMetricsSample& v) { return uint64_t{v.store_readable ? 1u : 0u}; });
  per_vnode("chord_keys", "gauge", "Live keys the vnode owns as primary.",
            [](const VnodeMetricsSample& v) { return v.keys; });
  per_vnode("chord_replica_keys", "gauge", "Live keys the vnode holds as a replica for others.",
            [](const VnodeMetricsSample& v) { return v.replica_keys; });
  per_vnode("chord_tombstones", "gauge",
            "Deleted keys (tombstones) held in the vnode's part of the store.",
            [](const VnodeMetricsSample& v) { return v.tombstones; });

  counter("chord_lookups_total", "Lookups started by the vnode.", &NodeCounters::lookups);
  w.Family("chord_lookup_hops", "histogram",
           "Lookup RPCs answered per lookup that found the key's owner.");
  for (const auto& v : vnodes) {
    w.HistogramSamples("chord_lookup_hops", Labels{{"node", v.node}}, v.metrics.lookup_hops);
  }

  w.Family("chord_rpc_requests_total", "counter", "Requests the vnode sent, by request type.");
  for (const auto& v : vnodes) {
    for (const auto& [type, m] : v.metrics.rpc) {
      w.Sample("chord_rpc_requests_total", Labels{{"node", v.node}, {"type", type}}, m.requests);
    }
  }
  w.Family("chord_rpc_timeouts_total", "counter",
           "Requests the vnode sent that timed out or could not be delivered, by request type.");
  for (const auto& v : vnodes) {
    for (const auto& [type, m] : v.metrics.rpc) {
      w.Sample("chord_rpc_timeouts_total", Labels{{"node", v.node}, {"type", type}}, m.timeouts);
    }
  }
  w.Family("chord_rpc_latency_seconds", "histogram",
           "Time from sending a request to its answer, by request type (answered requests only; "
           "millisecond resolution).");
  for (const auto& v : vnodes) {
    for (const auto& [type, m] : v.metrics.rpc) {
      w.HistogramSamples("chord_rpc_latency_seconds", Labels{{"node", v.node}, {"type", type}},
                         m.latency_seconds);
    }
  }

  counter("chord_stabilize_rounds_total", "Stabilization rounds run.",
          &NodeCounters::stabilize_rounds);
  counter("chord_successor_changes_total", "Times the vnode's successor changed.",
          &NodeCounters::successor_changes);
  counter("chord_predecessor_changes_total", "Times the vnode's predecessor changed.",
          &NodeCounters::predecessor_changes);
  counter("chord_keys_transferred_total", "Keys the vnode handed over on a join or leave.",
          &NodeCounters::keys_sent);
  counter("chord_keys_received_total", "Keys handed over to the vnode on a join or leave.",
          &NodeCounters::keys_received);
  counter("chord_bytes_transferred_total", "Record bytes the vnode handed over on a join or leave.",
          &NodeCounters::bytes_sent);
  counter("chord_anti_entropy_rounds_total", "Digest comparisons with one replica.",
          &NodeCounters::anti_entropy_rounds);
  counter("chord_anti_entropy_clean_rounds_total",
          "Digest comparisons with one replica that found nothing to repair.",
          &NodeCounters::anti_entropy_clean);
  counter("chord_anti_entropy_bytes_total",
          "Digest, pull and push message bytes sent and received by anti-entropy.",
          &NodeCounters::anti_entropy_bytes);
  counter("chord_keys_repaired_total",
          "Records sent or taken by anti-entropy or quorum read repair.",
          &NodeCounters::keys_repaired);
  counter("chord_keys_dropped_total",
          "Records erased once the replicas that should hold them confirmed them.",
          &NodeCounters::keys_dropped);
  counter("chord_tombstones_purged_total", "Tombstones erased after their grace period.",
          &NodeCounters::tombstones_purged);
  counter("chord_cas_conflicts_total", "Conditional writes whose condition did not hold.",
          &NodeCounters::cas_conflicts);
  counter("chord_keys_expired_total", "Records turned into tombstones by their time to live.",
          &NodeCounters::keys_expired);
  counter("chord_expiry_scan_slices_total",
          "Slices of the store the expiry sweeper scanned because more keys carry an expiry than "
          "its index holds.",
          &NodeCounters::expiry_scan_slices);
  counter("chord_condition_reads_refused_total",
          "Owners' condition reads refused here as a replica: it owns the key itself, or does "
          "not take the owner as its predecessor.",
          &NodeCounters::condition_reads_refused);
  counter("chord_condition_reads_late_total",
          "Condition reads whose answers came too late to decide a conditional write on.",
          &NodeCounters::condition_reads_late);
  counter("chord_requests_expired_total",
          "Requests from other nodes refused because they arrived after their deadline.",
          &NodeCounters::requests_expired);
  counter("chord_requests_refused_total",
          "Requests refused because the sender's credentials do not allow them.",
          &NodeCounters::requests_refused);
  counter("chord_writes_coordinated_total", "Writes the vnode coordinated as the key's owner.",
          &NodeCounters::writes_replicated);
  per_vnode("chord_watchers", "gauge", "Watch requests (chordctl watch-key) waiting for a change.",
            [](const VnodeMetricsSample& v) { return v.counters.watchers_waiting; });
  counter("chord_watch_resyncs_total",
          "Watchers sent the key's current state because its changes could not all be sent.",
          &NodeCounters::watch_resyncs);
  counter("chord_writes_failed_total",
          "Writes the vnode coordinated that did not reach the replicas their consistency needs.",
          &NodeCounters::writes_failed);
  counter("chord_hints_stored_total",
          "New hinted records accepted for a member that did not answer.",
          &NodeCounters::hints_stored);
  counter("chord_hints_replaced_total",
          "Hinted records that replaced an older hint of the same key for the same member.",
          &NodeCounters::hints_replaced);
  counter("chord_hints_delivered_total", "Hinted records handed to the member they were for.",
          &NodeCounters::hints_delivered);
  counter("chord_hints_dropped_total",
          "Hinted records erased as too old to deliver, or unreadable.",
          &NodeCounters::hints_dropped);
  counter("chord_hints_loaded_total", "Hinted records found in the store when the node started.",
          &NodeCounters::hints_loaded);
  counter("chord_hints_refused_total", "Hinted records refused because the hint store was full.",
          &NodeCounters::hints_refused);
  counter("chord_requests_shed_total",
          "Data requests refused because the node held its limit of requests under way.",
          &NodeCounters::requests_shed);
  per_vnode("chord_hints_pending", "gauge",
            "Hinted records the vnode holds for other members, not yet delivered.",
            [](const VnodeMetricsSample& v) { return v.counters.hints_pending; });
  per_vnode("chord_hint_bytes", "gauge", "Bytes of the hinted records held for other members.",
            [](const VnodeMetricsSample& v) { return v.counters.hint_bytes; });
  return w.Take();
}

std::string RenderProcessMetricsText(const ProcessSample& process) {
  if (!process.valid) return "";
  TextWriter w;
  const TextWriter::Labels none;
  w.Family("process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.");
  w.Sample("process_cpu_seconds_total", none, FormatPrometheusValue(process.cpu_seconds));
  w.Family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  w.Sample("process_resident_memory_bytes", none, process.resident_bytes);
  w.Family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  w.Sample("process_virtual_memory_bytes", none, process.virtual_bytes);
  w.Family("process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
  w.Sample("process_start_time_seconds", none, FormatPrometheusValue(process.start_time_seconds));
  w.Family("process_open_fds", "gauge", "Number of open file descriptors.");
  w.Sample("process_open_fds", none, process.open_fds);
  if (process.max_fds > 0) {
    w.Family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
    w.Sample("process_max_fds", none, process.max_fds);
  }
  return w.Take();
}

std::string RenderStoreMetricsText(uint64_t free_held_bytes) {
  TextWriter w;
  w.Family("chord_store_free_bytes", "gauge",
           "Bytes of free record blocks (freed, or the ends of earlier chunks) the in-memory "
           "store keeps for reuse (0 with RocksDB).");
  w.Sample("chord_store_free_bytes", TextWriter::Labels{}, free_held_bytes);
  return w.Take();
}

}  // namespace chord
