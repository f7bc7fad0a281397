// RingSvg: `chordctl ring --svg FILE`, a self-contained SVG picture of a RingSurvey (no
// external resources: no links, fonts, images or scripts) that any browser opens: the ring
// circle with 0 at the top and ids growing clockwise (angle = id / 2^160 * 360 degrees), one
// dot per ring position labelled with its address and primary key count, each answering
// position's owned arc (predecessor, node] drawn with a width and colour that grow with its
// primary key count, a legend for both, and a title with the totals and the check verdict.
// Pure functions; called by chordctl's ring command.
#ifndef CHORD_TOOLS_CHORDCTL_RING_SVG_H_
#define CHORD_TOOLS_CHORDCTL_RING_SVG_H_

#include <string>
#include <string_view>

#include "tools/chordctl/ring_check.h"
#include "tools/chordctl/ring_survey.h"

namespace chord::ctl {

std::string RingSvg(const RingSurvey& survey, const RingVerdict& verdict);

// `text` as XML character data or an attribute value: & < > " ' as entities; control
// characters other than tab and newline, and bytes that are not valid UTF-8, become '?'.
std::string XmlEscape(std::string_view text);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_RING_SVG_H_
