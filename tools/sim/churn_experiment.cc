#include "tools/sim/churn_experiment.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tools/sim/ideal_ring.h"
#include "tools/sim/random_ids.h"
#include "tools/sim/sample_stats.h"

namespace chord::sim {
namespace {

constexpr uint64_t kRingCheckPeriodMs = 1000;
constexpr uint64_t kLookupDrainMs = 60000;
constexpr int kDepartureTries = 8;
constexpr size_t kBootstraps = 3;
constexpr double kDepartureRetryMs = 1000;

class ChurnRun {
 public:
  explicit ChurnRun(const ChurnOptions& options)
      : options_(options), net_(MakeNetOptions(options)), checker_(&net_) {
    config_.successors = options.successors;
    // The paper's experiments measure routing alone: one copy of each key, no replica traffic.
    config_.replicas = 1;
    config_.stabilize_ms = options.stabilize_ms;
    config_.stabilize_jitter = options.stabilize_jitter;
    config_.rpc_timeout_ms = options.rpc_timeout_ms;
  }

  ChurnReport Run() {
    BuildIdealRing(&net_, options_.nodes, config_);
    if (options_.partition_at_s > 0 && options_.partition_seconds > 0) {
      const auto from_ms = static_cast<uint64_t>(options_.partition_at_s * 1000);
      const auto until_ms = from_ms + static_cast<uint64_t>(options_.partition_seconds * 1000);
      const double fraction = options_.partition_fraction;
      net_.SetPartition(
          [this, from_ms, until_ms, fraction](const std::string& a, const std::string& b) {
            const uint64_t now = net_.now_ms();
            if (now < from_ms || now >= until_ms) return false;
            return (Id::Sha1(a).ToUnitFraction() < fraction) !=
                   (Id::Sha1(b).ToUnitFraction() < fraction);
          });
    }
    next_index_ = static_cast<uint64_t>(options_.nodes);
    if (options_.check_invariants) {
      net_.set_after_event([this](const ChordNode* touched) {
        if (touched != nullptr) checker_.CheckNode(*touched);
      });
      checker_.CheckAllNodes();
      checker_.CheckRing();
    }
    const double per_ms = 1.0 / 1000.0;
    const double start = static_cast<double>(net_.now_ms());
    double next_join = start + Exponential(options_.rate * per_ms);
    double next_leave = start + Exponential(options_.rate * per_ms);
    double next_lookup = start + Exponential(per_ms);
    int issued = 0;
    while (issued < options_.lookups) {
      const double t = std::min({next_join, next_leave, next_lookup});
      AdvanceTo(static_cast<uint64_t>(t));
      if (t == next_lookup) {
        IssueLookup();
        ++issued;
        next_lookup += Exponential(per_ms);
      } else if (t == next_join) {
        Join();
        next_join += Exponential(options_.rate * per_ms);
      } else if (Depart()) {
        next_leave += Exponential(options_.rate * per_ms);
      } else {
        // No member may leave right now (operating assumption, or a join under way): the
        // departure is retried shortly rather than dropped, so that the rates stay equal.
        next_leave = t + kDepartureRetryMs;
      }
    }
    // Churn stops: run until the ring is ideal. (A lookup whose origin node departed never
    // completes; it counts as failed.)
    const uint64_t churn_end = net_.now_ms();
    const uint64_t converge_bound =
        static_cast<uint64_t>(options_.max_converge_rounds) * options_.stabilize_ms;
    while (net_.now_ms() - churn_end < converge_bound) {
      if (IsIdealRing(net_, options_.successors)) {
        report_.converged = true;
        break;
      }
      AdvanceTo(net_.now_ms() + kRingCheckPeriodMs);
    }
    const uint64_t converged_at = net_.now_ms();
    AdvanceTo(net_.now_ms() + kLookupDrainMs);  // in-flight lookups finish
    if (!report_.converged) IsIdealRing(net_, options_.successors, &report_.not_converged_why);
    if (report_.converged) {
      const double rounds = static_cast<double>(converged_at - churn_end) /
                            static_cast<double>(options_.stabilize_ms);
      report_.rounds_to_converge = static_cast<int>(std::ceil(rounds));
    }
    report_.lookups = options_.lookups;
    report_.failed += options_.lookups - finished_;
    report_.hops_mean = hops_.Mean();
    report_.timeouts_mean = timeouts_.Mean();
    report_.invariants = checker_.counts();
    report_.invariant_violations = checker_.counts().total();
    report_.first_violation = checker_.first_violation();
    report_.final_nodes = static_cast<int>(net_.live_count());
    report_.events = net_.events_processed();
    report_.virtual_seconds = static_cast<double>(net_.now_ms()) / 1000.0;
    return report_;
  }

 private:
  static SimOptions MakeNetOptions(const ChurnOptions& o) {
    SimOptions s;
    s.seed = o.seed;
    s.mean_latency_ms = o.mean_latency_ms;
    s.loss = o.loss;
    if (o.log_nodes) s.log = PrintNodeLog;
    return s;
  }

  // A Poisson process's next gap, in ms.
  double Exponential(double rate_per_ms) {
    if (rate_per_ms <= 0) return 1e300;
    return std::exponential_distribution<double>(rate_per_ms)(net_.rng());
  }

  // Runs the network up to virtual time `t`, checking the global invariants once per period.
  void AdvanceTo(uint64_t t) {
    while (net_.now_ms() < t) {
      const uint64_t step = std::min<uint64_t>(t - net_.now_ms(), kRingCheckPeriodMs);
      net_.RunFor(step);
      if (options_.check_invariants && net_.now_ms() >= next_ring_check_) {
        checker_.CheckRing();
        next_ring_check_ = net_.now_ms() + kRingCheckPeriodMs;
      }
    }
  }

  // Joined members that are not on their way out.
  std::vector<const ChordNode*> Members() {
    std::vector<const ChordNode*> out;
    for (const ChordNode* n : net_.LiveNodes()) {
      if (n->joined()) out.push_back(n);
    }
    return out;
  }

  size_t Leaving() {
    size_t n = 0;
    for (const ChordNode* x : net_.LiveNodes())
      n += x->state() == ChordNode::State::kLeaving ? 1 : 0;
    return n;
  }

  void IssueLookup() {
    const auto members = Members();
    if (members.empty()) return;
    const ChordNode* from = members[net_.rng()() % members.size()];
    const Id key = RandomId(net_.rng());
    net_.Lookup(from->self().addr, key, /*verify_owner=*/true, [this, key](Result<LookupResult> r) {
      ++finished_;
      if (!r.ok()) {
        ++report_.failed;
        return;
      }
      // Right when it is the first joined member clockwise from the key right now.
      std::vector<Id> ids;
      for (const ChordNode* n : Members()) ids.push_back(n->self().id);
      if (ids.empty() || !(r->owner.id == RingOrder(std::move(ids)).Successor(key))) {
        ++report_.failed;
        return;
      }
      hops_.Add(r->hops);
      timeouts_.Add(r->timeouts);
    });
  }

  void Join() {
    const auto members = Members();
    if (members.empty()) return;
    if (options_.max_nodes > 0 && static_cast<int>(net_.live_count()) >= options_.max_nodes) {
      ++report_.skipped_joins;
      return;
    }
    // Through a random live member; two more random members are fallbacks in case it leaves
    // before the join completes (as an operator would give --join A,B,C).
    std::vector<std::string> bootstraps;
    for (size_t i = 0; i < 3 * kBootstraps && bootstraps.size() < kBootstraps; ++i) {
      const std::string& a = members[net_.rng()() % members.size()]->self().addr;
      if (std::find(bootstraps.begin(), bootstraps.end(), a) == bootstraps.end()) {
        bootstraps.push_back(a);
      }
    }
    net_.AddNode(SimAddress(next_index_++), config_, bootstraps);
    ++report_.joins;
    if (options_.check_invariants) checker_.CheckRing();
  }

  // Zave's operating assumption: after `leaver` goes, every other member still has a live
  // successor, and at least R + 2 members remain.
  bool DepartureSafe(const ChordNode* leaver, const std::vector<const ChordNode*>& members) {
    const int min_nodes = std::max(options_.min_nodes, options_.successors + 2);
    if (static_cast<int>(members.size()) - 1 < min_nodes) return false;
    // A node in the middle of joining is about to adopt a successor list that an answer in
    // flight already holds; no snapshot of the members shows it. Departures wait until no
    // join is under way, so that they cannot empty that list behind the guard's back.
    if (net_.live_count() > members.size() + Leaving()) return false;
    // A predecessor may still adopt the leaver's list from an answer in flight: [leaver] plus
    // all but the last of it. That part must hold a live member, or the leave strands it.
    if (options_.successors >= 2) {
      const auto& list = leaver->successors();
      const size_t adopted = std::min(list.size(), static_cast<size_t>(options_.successors - 1));
      bool live = false;
      for (size_t i = 0; i < adopted && !live; ++i) {
        const ChordNode* n = net_.node(list[i].addr);
        live = n != nullptr && n != leaver && n->state() != ChordNode::State::kLeaving;
      }
      if (!live) return false;
    }
    for (const ChordNode* m : members) {
      if (m == leaver) continue;
      bool live = false;
      for (const NodeRef& s : m->successors()) {
        const ChordNode* n = net_.node(s.addr);
        if (n != nullptr && n != leaver && n->state() != ChordNode::State::kLeaving) {
          live = true;
          break;
        }
      }
      if (!live) return false;
    }
    return true;
  }

  // True when a member departed.
  bool Depart() {
    const auto members = Members();
    if (members.empty()) return false;
    // A random member whose departure keeps the operating assumption (a few tries).
    const ChordNode* leaver = nullptr;
    for (int attempt = 0; attempt < kDepartureTries && leaver == nullptr; ++attempt) {
      const ChordNode* candidate = members[net_.rng()() % members.size()];
      if (DepartureSafe(candidate, members)) leaver = candidate;
    }
    if (leaver == nullptr) {
      ++report_.skipped_departures;
      return false;
    }
    const std::string addr = leaver->self().addr;
    const bool crash =
        std::uniform_real_distribution<double>(0, 1)(net_.rng()) < options_.crash_fraction;
    if (crash) {
      net_.Crash(addr);
      ++report_.crashes;
      if (options_.check_invariants) checker_.CheckAllNodes();
    } else {
      net_.Leave(addr);
      ++report_.leaves;
    }
    if (options_.check_invariants) checker_.CheckRing();
    return true;
  }

  const ChurnOptions options_;
  NodeConfig config_;
  SimNetwork net_;
  InvariantChecker checker_;
  ChurnReport report_;
  SampleStats hops_;
  SampleStats timeouts_;
  uint64_t next_index_ = 0;
  uint64_t next_ring_check_ = 0;
  int finished_ = 0;
};

}  // namespace

ChurnReport RunChurnExperiment(const ChurnOptions& options) { return ChurnRun(options).Run(); }

}  // namespace chord::sim
