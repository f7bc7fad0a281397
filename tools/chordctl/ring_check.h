// RingCheck: the verdict of `chordctl check` (and the last lines of `ring`, `watch` and
// `ring --svg`), in the style of `redis-cli --cluster check`: either one line
// "[OK] all N nodes agree: ..." or one "[ERR] ..." line per disagreement (a pointer that does
// not match the ring order of the answering nodes, a named node that does not answer, a node
// still joining or leaving). Pure function of a RingSurvey; called by chordctl's commands.
#ifndef CHORD_TOOLS_CHORDCTL_RING_CHECK_H_
#define CHORD_TOOLS_CHORDCTL_RING_CHECK_H_

#include <string>
#include <vector>

#include "tools/chordctl/ring_survey.h"

namespace chord::ctl {

struct RingVerdict {
  bool ok = false;
  std::vector<std::string> lines;  // each starts with "[OK] " or "[ERR] ", no newline
};

RingVerdict CheckRing(const RingSurvey& survey);

// The verdict's lines, each ended by a newline.
std::string VerdictText(const RingVerdict& verdict);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_RING_CHECK_H_
