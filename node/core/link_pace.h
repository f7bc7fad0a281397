// LinkPace: how many bytes of records one bulk message between this node and a peer process
// may carry, so that it crosses the link in about a quarter of the RPC deadline. A short
// request of ring maintenance to the same process waits behind it on the connection the two
// share: on a slow link a 4 MiB batch kept it waiting past its deadline, the connection was
// reset and the batch failed with it, again and again. One LinkPace serves one direction (the
// node keeps one for what it sends and one for the pages it asks peers for).
//
// The pace is learnt per peer process from the bulk exchanges the node times itself: after an
// exchange that carried at least half the pace it was sent at, the next may carry what the
// link carried in the target time (bytes over the time to the answer), at most twice as much
// as this one; every peer starts at the configured transfer_batch_bytes. An unanswered one of
// that size cuts it to an eighth of the pace it was sent at (exchanges lost together cut it
// once). Smaller exchanges say nothing about the link (their time is queueing and round
// trips; their failure a dead peer) and are ignored. Never below
// kMinBytes, nor above the configured size. Pure logic fed with the node's clock; the
// thread of the nodes that share it.
#ifndef CHORD_NODE_CORE_LINK_PACE_H_
#define CHORD_NODE_CORE_LINK_PACE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/node_ref.h"

namespace chord {

class LinkPace {
 public:
  // No bulk message is cut below this, or below the configured size if that is smaller (a few
  // records still go at a time on any link).
  static constexpr size_t kMinBytes = size_t{16} << 10;
  // Peers whose pace is below the configured size, at most; past it one is forgotten (back
  // at the full size) for each new one.
  static constexpr size_t kMaxPeers = 1024;

  // `max_bytes`: the configured batch size; `rpc_timeout_ms`: a short request's deadline.
  LinkPace(size_t max_bytes, uint64_t rpc_timeout_ms);

  // The bytes of records the next bulk message with `process` (HOST:PORT) may carry.
  [[nodiscard]] size_t BatchBytes(std::string_view process) const;
  // Whether the link to `process` is paced below the configured size (a slow link).
  [[nodiscard]] bool Paced(std::string_view process) const {
    return BatchBytes(process) < max_bytes_;
  }
  // The smallest of BatchBytes over the processes of `peers` (one message for all of them).
  [[nodiscard]] size_t BatchBytesForAll(const std::vector<NodeRef>& peers) const;
  // A bulk exchange with `process` that carried `bytes` over the link was answered
  // `elapsed_ms` after it was sent, when the pace was `sent_at` (BatchBytes then).
  void Answered(std::string_view process, uint64_t bytes, uint64_t elapsed_ms, size_t sent_at);
  // A bulk exchange with `process` that was to carry `bytes`, sent when the pace was `sent_at`,
  // was not answered (in time, or the connection was lost).
  void Failed(std::string_view process, uint64_t bytes, size_t sent_at);
  // The time a bulk message should take on the wire.
  [[nodiscard]] uint64_t target_ms() const { return target_ms_; }

 private:
  void Set(std::string_view process, size_t bytes);
  // An exchange of `bytes` sent at the pace `sent_at` is too small to say anything of the link.
  static bool TooSmallToTime(uint64_t bytes, size_t sent_at) {
    return bytes == 0 || bytes < sent_at / 2;
  }

  size_t max_bytes_;
  size_t min_bytes_;
  uint64_t target_ms_;
  std::unordered_map<std::string, size_t> paced_;  // peers below max_bytes_ only
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_LINK_PACE_H_
