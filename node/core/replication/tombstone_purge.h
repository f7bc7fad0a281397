// TombstonePurge: erasing tombstones older than the grace period from a range. With replicas
// the owner asks them first (Purge: erase where still that tombstone at that version) and
// erases its own only once all of them confirmed; if one misses the purge, the next digest
// comparison sends it the tombstone again (never the deleted value), and the purge is
// retried. Started by AntiEntropy after a round in which every replica matched; the node's
// thread only. A round reads only the arcs whose ledger counts tombstones, and at most a
// bounded number of records; the next round continues after the last one it looked at.
//
// A member that left this node's replica group (its replicas and, for the range it may take
// over, its predecessor), and one a hand-over's sender counted missing, is "missing": it may
// hold, or come back with, live copies of keys whose tombstones a purge would erase (down, it
// missed the delete; pushed out alive by a join, its clean-up walk has still to hand its
// copies on). While any member is missing, nothing is purged here. A missing member is probed
// (first once what was sent to it before it left has arrived or timed out, then every
// anti-entropy period): asked for the digests of this node's range with every piece empty
// (SyncDigest), so that it names the pieces where it holds anything. It is forgotten when it
// answers that it holds nothing there (its clean-up walk handed its copies to the holders,
// where the kept tombstones beat them, or it restarted empty); when it is back in the group
// (the next clean round includes it; a round in flight when it came back, which compared
// without it, purges nothing: AntiEntropy checks returns()); or after kForgetMissingMs (or 10
// grace periods, if longer) without answering that it still holds copies: a node down longer
// than that must be restarted with an empty data directory. Being listed again outside the
// group, or being the predecessor again, is not enough: no round here compares with it.
#ifndef CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_
#define CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "node/core/missing_members.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"

namespace chord {

class TombstonePurge : public MissingMembers {
 public:
  explicit TombstonePurge(NodeContext& ctx) : ctx_(ctx) {}

  static constexpr uint64_t kForgetMissingMs = 24ull * 3600 * 1000;

  // The replica group at the start of an anti-entropy round (its replicas and this node's
  // predecessor); called every maintenance round, before Start, with the ring's successor
  // list and predecessor. Notes who left, forgets who is back, and sends the probes due.
  void NoteGroup(const std::vector<NodeRef>& replicas, const RingState& ring);
  // MissingMembers: who the hand-overs carry (each with how long it has been missing, and
  // the overflow), and who they brought (missing for as long as it was there).
  MissingList Missing() const override;
  void NoteHandedOver(const MissingList& list) override;
  // The replicas the anti-entropy round under way compares with (none: no round): a missing
  // member among them may still be sent copies, so its empty answer to a probe is not taken.
  void NoteComparing(const std::vector<NodeRef>& targets) { comparing_ = targets; }
  // Whether a member of the group is missing (so nothing may be purged).
  bool MembersMissing();
  // How many times a missing member was seen back. A round that started before a return
  // compared without that member, which may hold live copies of what the round's tombstones
  // deleted: its purge must wait for a round that includes it.
  uint64_t returns() const { return returns_; }
  // Purges the expired tombstones of `range` (a page of them) on `replicas`, then here;
  // nothing while a member is missing.
  void Start(const KeyRange& range, const std::vector<NodeRef>& replicas);
  // Answers to purges and probes.
  void OnRpc(OpRef op, const wire::Envelope* response);
  void HandlePurge(ReplyToken from, const wire::Envelope& request);

 private:
  // The step of an OpRef of kind kPurge: a purge's answer, or a probe's.
  enum Step : uint8_t { kPurgeStep = 0, kProbeStep = 1 };
  struct PurgeOp {
    std::vector<wire::Record> tombstones;
    size_t pending = 0;
    bool all_ok = true;
  };
  struct MissingEntry {
    NodeRef member;              // where it was last seen: the probes go there
    uint64_t since_ms = 0;       // when it went missing (mono)
    uint64_t next_probe_ms = 0;  // no probe before then (mono)
    uint64_t probe = 0;          // the probe in flight, 0: none
  };
  struct Probe {
    std::string process;
    KeyRange range;  // the range it asked about
  };
  // Notes `member` missing since `since` (mono ms), or since then if it already is and was
  // noted later; `why` goes to the log.
  void AddMissing(const NodeRef& member, uint64_t since, std::string_view why);
  // Probes the missing members whose turn it is, at most kMaxProbesPerRound.
  void ProbeMissing(const RingState& ring, uint64_t now);
  // A probe's answer: forgets the member if it holds nothing of our range (and the range is
  // still the one asked about); keeps it missing from now if it answered holding copies.
  void OnProbe(uint64_t id, const wire::Envelope* response);
  // How long a missing member that does not answer holding copies is remembered.
  uint64_t ForgetAfterMs() const;
  void EraseHere(const std::vector<wire::Record>& tombstones);

  NodeContext& ctx_;
  std::unordered_map<uint64_t, PurgeOp> ops_;
  std::vector<NodeRef> replicas_;               // the last group's replicas
  std::optional<NodeRef> predecessor_;          // the last group's predecessor
  std::map<std::string, MissingEntry> missing_;  // by process
  std::unordered_map<uint64_t, Probe> probes_;  // in flight, by id
  std::vector<NodeRef> comparing_;              // NoteComparing
  // More members went missing than missing_ holds: nothing is purged until then (mono).
  uint64_t overflow_until_ms_ = 0;
  uint64_t returns_ = 0;
  uint64_t next_id_ = 1;
  std::optional<Id> after_;  // where the next look for tombstones continues
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_
