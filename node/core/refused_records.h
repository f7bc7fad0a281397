// MarkRefused: which records of a batch its receiver refused as outside its limits, from the
// `refused` count and `refused_at` positions that ReplicateResponse and TransferResponse carry.
// The sender keeps its copies of those. Pure function; any thread.
#ifndef CHORD_NODE_CORE_REFUSED_RECORDS_H_
#define CHORD_NODE_CORE_REFUSED_RECORDS_H_

#include <cstdint>
#include <vector>

namespace chord {

// Marks in `refused` (one entry per record sent, kept from earlier answers) the positions
// `response` names. False, marking nothing, if it does not name each refusal once, in
// ascending order, within the batch (an older build counts refusals without naming them, and
// an answer from the network is not trusted): the caller keeps the whole batch.
template <typename Response>
[[nodiscard]] bool MarkRefused(const Response& response, std::vector<bool>* refused) {
  if (response.refused() == 0) return true;
  if (response.refused_at_size() != static_cast<int>(response.refused())) return false;
  for (int i = 0; i < response.refused_at_size(); ++i) {
    const uint32_t at = response.refused_at(i);
    if (at >= refused->size() || (i > 0 && at <= response.refused_at(i - 1))) return false;
  }
  for (const uint32_t at : response.refused_at()) (*refused)[at] = true;
  return true;
}

}  // namespace chord

#endif  // CHORD_NODE_CORE_REFUSED_RECORDS_H_
