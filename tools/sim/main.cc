// chord-sim: runs the node's own protocol core (node/core) at thousands of nodes in virtual
// time and reproduces the Chord paper's experiments. Same seed and flags, same output.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/sim/balance_experiment.h"
#include "tools/sim/churn_experiment.h"
#include "tools/sim/fail_experiment.h"
#include "tools/sim/lookup_experiment.h"

namespace {

using namespace chord::sim;  // NOLINT: the experiments are this program's whole vocabulary
using nlohmann::json;

void Print(const json& j, bool as_json, const std::string& table) {
  if (as_json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << table;
  }
}

std::string Format(const char* fmt, double a = 0, double b = 0, double c = 0, double d = 0) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c, d);
  return buf;
}

void RunLookups(const LookupOptions& o, bool as_json) {
  const LookupReport r = RunLookupExperiment(o);
  json j = {{"experiment", "lookups"},    {"nodes", r.nodes},
            {"lookups", r.lookups},       {"seed", o.seed},
            {"successors", o.successors}, {"hops_mean", r.hops_mean},
            {"hops_p1", r.hops_p1},       {"hops_p50", r.hops_p50},
            {"hops_p99", r.hops_p99},     {"failed", r.failed},
            {"events", r.events},         {"virtual_seconds", r.virtual_seconds}};
  std::string t = "lookup path length: " + std::to_string(r.nodes) + " nodes, " +
                  std::to_string(r.lookups) + " lookups, successor list " +
                  std::to_string(o.successors) + ", seed " + std::to_string(o.seed) + "\n";
  t += "                 mean    p1   p50   p99  failed\n";
  t += Format("  ours          %5.2f %5.0f %5.0f %5.0f", r.hops_mean, r.hops_p1, r.hops_p50,
              r.hops_p99) +
       "  " + std::to_string(r.failed) + "\n";
  t += Format("  paper         %5.2f   (1/2 log2 N; Fig. 10 at N = 4096: 5.9, p1 2, p99 10)\n",
              0.5 * std::log2(static_cast<double>(r.nodes)));
  Print(j, as_json, t);
}

void RunBalance(const BalanceOptions& o, bool as_json) {
  const BalanceReport r = RunBalanceExperiment(o);
  json j = {{"experiment", "balance"},
            {"nodes", r.nodes},
            {"keys", r.keys},
            {"vnodes", r.vnodes},
            {"seed", o.seed},
            {"mean", r.mean},
            {"p1", r.p1},
            {"p99", r.p99},
            {"max", r.max},
            {"p1_over_mean", r.mean > 0 ? r.p1 / r.mean : 0},
            {"p99_over_mean", r.mean > 0 ? r.p99 / r.mean : 0}};
  std::string t = "keys per real node: " + std::to_string(r.nodes) + " nodes x " +
                  std::to_string(r.vnodes) + " vnodes, " + std::to_string(r.keys) + " keys, seed " +
                  std::to_string(o.seed) + "\n";
  t += Format("  mean %.1f  p1 %.0f  p99 %.0f  max %.0f\n", r.mean, r.p1, r.p99, r.max);
  t += Format("  p1/mean %.2f  p99/mean %.2f", r.mean > 0 ? r.p1 / r.mean : 0,
              r.mean > 0 ? r.p99 / r.mean : 0);
  t += "   (paper, Fig. 8-9, 10^4 nodes, 10^6 keys: V=1 p99/mean ~4.8, p1/mean 0;"
       " V=20 p99/mean ~1.6, p1/mean ~0.5)\n";
  Print(j, as_json, t);
}

void RunFail(const FailOptions& o, bool as_json) {
  const FailReport r = RunFailExperiment(o);
  json j = {{"experiment", "fail"},       {"nodes", r.nodes},
            {"successors", o.successors}, {"fail_fraction", o.fail_fraction},
            {"crashed", r.crashed},       {"seed", o.seed},
            {"lookups", r.lookups},       {"failed", r.failed},
            {"hops_mean", r.hops_mean},   {"timeouts_mean", r.timeouts_mean},
            {"events", r.events}};
  std::string t = "simultaneous failures: " + std::to_string(r.nodes) + " nodes, successor list " +
                  std::to_string(o.successors) + ", " + std::to_string(r.crashed) +
                  " crashed, stabilization off, " + std::to_string(r.lookups) + " lookups\n";
  t += Format("  ours   hops %.2f  timeouts %.2f", r.hops_mean, r.timeouts_mean) + "  failed " +
       std::to_string(r.failed) + "\n";
  t += "  paper  (ToN Table II, N=1000, R=20): no failures up to P=0.5; hops 3.84 (P=0) to "
       "5.09 (P=0.5); timeouts 0.60 (P=0.1) to 5.10 (P=0.5)\n";
  Print(j, as_json, t);
}

void RunChurn(const ChurnOptions& o, bool as_json) {
  const ChurnReport r = RunChurnExperiment(o);
  const auto& c = r.invariants;
  json j = {{"experiment", "churn"},
            {"nodes", o.nodes},
            {"successors", o.successors},
            {"rate", o.rate},
            {"seed", o.seed},
            {"loss", o.loss},
            {"partition_at", o.partition_at_s},
            {"partition_seconds", o.partition_seconds},
            {"lookups", r.lookups},
            {"failed", r.failed},
            {"failed_per_10k", r.lookups > 0 ? 1e4 * r.failed / r.lookups : 0},
            {"hops_mean", r.hops_mean},
            {"timeouts_mean", r.timeouts_mean},
            {"invariant_violations", r.invariant_violations},
            {"invariants_checked", o.check_invariants},
            {"invariant_detail",
             {{"node_checks", c.node_checks},
              {"ring_checks", c.ring_checks},
              {"one_live_successor", c.one_live_successor},
              {"no_duplicates", c.no_duplicates},
              {"ordered_successor_lists", c.ordered_lists},
              {"ring_count", c.ring_count},
              {"ring_order", c.ring_order}}},
            {"first_violation", r.first_violation},
            {"converged", r.converged},
            {"not_converged_why", r.not_converged_why},
            {"rounds_to_converge", r.rounds_to_converge},
            {"joins", r.joins},
            {"leaves", r.leaves},
            {"crashes", r.crashes},
            {"skipped_departures", r.skipped_departures},
            {"skipped_joins", r.skipped_joins},
            {"final_nodes", r.final_nodes},
            {"events", r.events},
            {"virtual_seconds", r.virtual_seconds}};
  std::string t = "churn: " + std::to_string(o.nodes) + " nodes, successor list " +
                  std::to_string(o.successors) +
                  Format(", %.3f joins/s and %.3f leaves/s", o.rate, o.rate) + ", seed " +
                  std::to_string(o.seed) + "\n";
  t += Format("  ours   failed/10^4 %.1f  hops %.2f  timeouts %.2f",
              r.lookups > 0 ? 1e4 * r.failed / r.lookups : 0, r.hops_mean, r.timeouts_mean) +
       "  (" + std::to_string(r.joins) + " joins, " + std::to_string(r.leaves) + " leaves, " +
       std::to_string(r.crashes) + " crashes)\n";
  t += "  paper  (ToN Table III, N=1000, R=20): failed/10^4 0 at X=0.05 to ~15 at X=0.40; "
       "hops 3.8-4.1\n";
  t += "  invariant violations: " +
       (o.check_invariants ? std::to_string(r.invariant_violations) : std::string("not checked")) +
       (r.first_violation.empty() ? "" : " (first: " + r.first_violation + ")") + "\n";
  t += "  converged after churn: " + std::string(r.converged ? "yes" : "no") +
       (r.converged ? ", in " + std::to_string(r.rounds_to_converge) + " stabilization rounds"
                    : "") +
       "\n";
  Print(j, as_json, t);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "chord-sim: the chord protocol core (the same code as chord-node) at thousands of "
      "nodes in virtual time. Same seed and flags give the same output."};
  app.require_subcommand(1);
  bool as_json = false;
  app.add_flag("--json", as_json, "Print one JSON object instead of a table");

  LookupOptions lookup;
  auto* lookups = app.add_subcommand("lookups", "Lookup path length on a converged ring (Fig. 10)");
  lookups->add_option("--nodes", lookup.nodes, "Ring size")->check(CLI::Range(1, 1000000));
  lookups->add_option("--lookups", lookup.lookups, "Lookups to run")
      ->check(CLI::Range(1, 100000000));
  lookups->add_option("--seed", lookup.seed, "Random seed");
  lookups->add_option("--successors", lookup.successors, "Successor list length")
      ->check(CLI::Range(1, 1024));
  lookups->add_option("--loss", lookup.loss, "Probability that a message is lost")
      ->check(CLI::Range(0.0, 0.9));

  BalanceOptions balance;
  auto* bal = app.add_subcommand("balance", "Keys per node, with virtual nodes (Fig. 8-9)");
  bal->add_option("--nodes", balance.nodes, "Real nodes")->check(CLI::Range(1, 1000000));
  bal->add_option("--keys", balance.keys, "Keys")->check(CLI::Range(1, 100000000));
  bal->add_option("--vnodes", balance.vnodes, "Virtual nodes per real node")
      ->check(CLI::Range(1, 10000));
  bal->add_option("--seed", balance.seed, "Random seed");

  FailOptions fail;
  auto* fl = app.add_subcommand("fail", "Lookups after simultaneous crashes (Table II)");
  fl->add_option("--nodes", fail.nodes, "Ring size")->check(CLI::Range(2, 1000000));
  fl->add_option("--successors", fail.successors, "Successor list length R")
      ->check(CLI::Range(1, 1024));
  fl->add_option("--fail-fraction", fail.fail_fraction, "Fraction of nodes that crash")
      ->check(CLI::Range(0.0, 0.99));
  fl->add_option("--lookups", fail.lookups, "Lookups to run")->check(CLI::Range(1, 100000000));
  fl->add_option("--seed", fail.seed, "Random seed");
  fl->add_option("--loss", fail.loss, "Probability that a message is lost")
      ->check(CLI::Range(0.0, 0.9));

  ChurnOptions churn;
  auto* ch = app.add_subcommand("churn", "Lookups under continuous joins and leaves (Table III)");
  ch->add_option("--nodes", churn.nodes, "Initial ring size")->check(CLI::Range(2, 1000000));
  ch->add_option("--successors", churn.successors, "Successor list length R")
      ->check(CLI::Range(1, 1024));
  ch->add_option("--rate", churn.rate, "Joins per second, and leaves per second")
      ->check(CLI::Range(0.0, 1000.0));
  ch->add_option("--lookups", churn.lookups, "Lookups (one per second)")
      ->check(CLI::Range(1, 100000000));
  ch->add_option("--seed", churn.seed, "Random seed");
  ch->add_flag("--check-invariants", churn.check_invariants,
               "Check Zave's invariants after every event");
  ch->add_option("--crash-fraction", churn.crash_fraction,
                 "Share of departures that are crashes rather than graceful leaves")
      ->check(CLI::Range(0.0, 1.0));
  ch->add_option("--loss", churn.loss, "Probability that a message is lost")
      ->check(CLI::Range(0.0, 0.9));
  ch->add_option("--partition-at", churn.partition_at_s,
                 "Virtual second at which a partition starts (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  ch->add_option("--partition-seconds", churn.partition_seconds, "How long the partition lasts")
      ->check(CLI::Range(0.0, 1e9));
  ch->add_option("--partition-fraction", churn.partition_fraction,
                 "Share of the ring (an arc from id 0) cut off from the rest")
      ->check(CLI::Range(0.0, 1.0));
  ch->add_option("--min-nodes", churn.min_nodes,
                 "Departures keep at least this many members (and always R + 2)");
  ch->add_flag("--log", churn.log_nodes,
               "Print every node's log lines to stderr, with the virtual time (for replays)");
  ch->add_option("--max-nodes", churn.max_nodes, "Joins keep at most this many nodes; 0: no limit");
  ch->add_option("--stabilize-ms", churn.stabilize_ms,
                 "Mean stabilization period; periods are uniform in [0.5, 1.5] times it")
      ->check(CLI::Range(1, 10000000));

  for (auto* sub : {lookups, bal, fl, ch})
    sub->add_flag("--json", as_json, "Print one JSON object");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (*lookups) RunLookups(lookup, as_json);
  if (*bal) RunBalance(balance, as_json);
  if (*fl) RunFail(fail, as_json);
  if (*ch) RunChurn(churn, as_json);
  return 0;
}
