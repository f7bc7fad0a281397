// RingTable: the readable form of `chordctl ring`, in the style of `nodetool status`: one row
// per ring position (vnode) with its state (Up, Joining, Leaving, Down), address, id prefix,
// primary and replica key counts and share of the ring, then per-process totals (with
// virtual nodes), a totals line and the cluster check (RingCheck). Pure; called by chordctl.
#ifndef CHORD_TOOLS_CHORDCTL_RING_TABLE_H_
#define CHORD_TOOLS_CHORDCTL_RING_TABLE_H_

#include <string>

#include "tools/chordctl/ring_check.h"
#include "tools/chordctl/ring_survey.h"

namespace chord::ctl {

std::string RingTable(const RingSurvey& survey, const RingVerdict& verdict);

// "5 nodes (4 up, 1 down)": the position count and the count of every state present.
std::string NodeCountText(const RingSurvey& survey);
// " (not counting 1 node that cannot read its store)" when answering positions could not
// count their keys (so totals are short); "" otherwise.
std::string UncountedText(const RingSurvey& survey);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_RING_TABLE_H_
