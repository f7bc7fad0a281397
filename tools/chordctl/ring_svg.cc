#include "tools/chordctl/ring_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "tools/chordctl/ring_table.h"
#include "tools/chordctl/text_table.h"

namespace chord::ctl {
namespace {

// "N keys", or why it is not known.
std::string KeysOf(const SurveyNode& node) {
  return node.counted() ? CountOf(node.keys(), "key", "keys")
                        : std::string("keys unknown (its store cannot be read)");
}

constexpr double kPi = 3.14159265358979323846;
constexpr int kWidth = 1100;
constexpr int kHeight = 840;
constexpr double kCenterX = 450;
constexpr double kCenterY = 500;
constexpr double kRadius = 240;
constexpr double kLabelRadius = kRadius + 40;
constexpr double kMinLabelOffset = 60;  // labels keep this far left/right of the middle
constexpr double kLabelTop = 200;       // label baselines stay within [top, bottom]
constexpr double kLabelBottom = 820;
constexpr double kLabelGap = 30;       // between label baselines (two lines of text)
constexpr double kSmallLabelGap = 18;  // ... with the small font of many nodes
constexpr double kLegendX = 920;
constexpr size_t kMaxVerdictChars = 140;
constexpr double kMinArcWidth = 4;
constexpr double kMaxArcWidth = 28;
constexpr double kDotRadius = 6;
constexpr double kArcGapDegrees = 0.6;
constexpr size_t kMaxVerdictLines = 6;
constexpr size_t kManyNodes = 40;  // beyond this, labels get smaller
constexpr int kLegendSamples = 5;

// Light to dark blue: the colour of an arc whose key count is `fraction` of the largest.
constexpr double kLightRgb[3] = {198, 219, 239};
constexpr double kDarkRgb[3] = {8, 48, 107};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

std::string ArcColour(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  char buf[16];
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = static_cast<int>(std::lround(kLightRgb[c] + (kDarkRgb[c] - kLightRgb[c]) * fraction));
  }
  std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  return buf;
}

double ArcWidth(double fraction) {
  return kMinArcWidth + (kMaxArcWidth - kMinArcWidth) * std::clamp(fraction, 0.0, 1.0);
}

// Degrees clockwise from the top for a ring id.
double AngleOf(const Id& id) { return id.ToUnitFraction() * 360.0; }

// The point at `degrees` (clockwise from the top) on a circle of `radius` around the centre.
void PointAt(double degrees, double radius, double* x, double* y) {
  const double rad = degrees * kPi / 180.0;
  *x = kCenterX + radius * std::sin(rad);
  *y = kCenterY - radius * std::cos(rad);
}

const char* DotFill(NodeState state) {
  switch (state) {
    case NodeState::kUp:
      return "#2b8cbe";
    case NodeState::kJoining:
    case NodeState::kLeaving:
      return "#fd8d3c";
    case NodeState::kDown:
      return "#ffffff";
  }
  return "#000000";
}

// Length of a valid UTF-8 sequence at text[i] that XML allows, or 0.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    len = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    len = 3;
    if (lead == 0xe0) lo = 0xa0;
    if (lead == 0xed) hi = 0x9f;  // no UTF-16 surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    len = 4;
    if (lead == 0xf0) lo = 0x90;
    if (lead == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  // U+FFFE and U+FFFF are not XML characters.
  if (len == 3 && lead == 0xef && byte(i + 1) == 0xbf && byte(i + 2) >= 0xbe) return 0;
  return len;
}

// Where one position's label goes: beside its dot, in the right or left column.
struct Label {
  size_t node = 0;  // index into RingSurvey::nodes
  double dot_x = 0;
  double dot_y = 0;
  bool right = true;
  double y = 0;  // baseline of the label's first line
};

// Moves the labels of one column apart vertically: at least `gap` between baselines, within
// [kLabelTop, kLabelBottom] as far as they fit (closer together when they do not).
void StackLabels(std::vector<Label*>* column, double gap) {
  if (column->empty()) return;
  std::sort(column->begin(), column->end(),
            [](const Label* a, const Label* b) { return a->dot_y < b->dot_y; });
  const size_t n = column->size();
  if (n > 1) gap = std::min(gap, (kLabelBottom - kLabelTop) / static_cast<double>(n - 1));
  double previous = kLabelTop - gap;
  for (Label* label : *column) {
    label->y = std::max(label->dot_y, previous + gap);
    previous = label->y;
  }
  double next = kLabelBottom + gap;
  for (size_t k = n; k-- > 0;) {
    Label* label = (*column)[k];
    label->y = std::min(label->y, next - gap);
    next = label->y;
  }
}

// `line` cut to kMaxVerdictChars characters (bytes) with an ellipsis when longer.
std::string Shorten(const std::string& line) {
  if (line.size() <= kMaxVerdictChars) return line;
  size_t cut = kMaxVerdictChars;
  // Do not cut inside a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xc0) == 0x80) --cut;
  return line.substr(0, cut) + "\xe2\x80\xa6";
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t len = Utf8SequenceLength(text, i);
      if (len == 0) {
        out += '?';
        ++i;
      } else {
        out.append(text.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? '?' : static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string RingSvg(const RingSurvey& survey, const RingVerdict& verdict) {
  uint64_t max_keys = 0;
  for (const SurveyNode& node : survey.nodes) max_keys = std::max(max_keys, node.keys());
  const auto fraction_of = [&](uint64_t keys) {
    return max_keys == 0 ? 0.0 : static_cast<double>(keys) / static_cast<double>(max_keys);
  };
  const bool many = survey.nodes.size() > kManyNodes;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(kWidth) +
         "\" height=\"" + std::to_string(kHeight) + "\" viewBox=\"0 0 " + std::to_string(kWidth) +
         " " + std::to_string(kHeight) + "\" font-family=\"sans-serif\">\n";
  const std::string headline = "chord ring via " + survey.via + ": " + NodeCountText(survey) +
                               ", " + CountOf(survey.TotalKeys(), "key", "keys") + ", " +
                               CountOf(survey.TotalReplicaKeys(), "replica key", "replica keys");
  out += "<title>" + XmlEscape(headline) + "</title>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(kWidth) + "\" height=\"" +
         std::to_string(kHeight) + "\" fill=\"#ffffff\"/>\n";

  // Title and verdict.
  out += "<g id=\"title\">\n";
  out += "<text x=\"30\" y=\"40\" font-size=\"20\" font-weight=\"bold\" fill=\"#222222\">" +
         XmlEscape(headline) + "</text>\n";
  double y = 66;
  const size_t shown = std::min(verdict.lines.size(), kMaxVerdictLines);
  for (size_t i = 0; i < shown; ++i, y += 18) {
    out += "<text x=\"30\" y=\"" + Num(y) + "\" font-size=\"13\" fill=\"" +
           (verdict.ok ? "#238b45" : "#cb181d") + "\">" + XmlEscape(Shorten(verdict.lines[i])) +
           "<title>" + XmlEscape(verdict.lines[i]) + "</title></text>\n";
  }
  if (verdict.lines.size() > shown) {
    out += "<text x=\"30\" y=\"" + Num(y) + "\" font-size=\"13\" fill=\"#cb181d\">" +
           XmlEscape("... and " + std::to_string(verdict.lines.size() - shown) +
                     " more (run chordctl check)") +
           "</text>\n";
  }
  out += "</g>\n";

  // The ring, 0 at the top.
  out += "<g id=\"ring\">\n";
  out += "<circle cx=\"" + Num(kCenterX) + "\" cy=\"" + Num(kCenterY) + "\" r=\"" + Num(kRadius) +
         "\" fill=\"none\" stroke=\"#d9d9d9\" stroke-width=\"2\"/>\n";
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  PointAt(0, kRadius - kMaxArcWidth, &x0, &y0);
  PointAt(0, kRadius + kMaxArcWidth, &x1, &y1);
  out += "<line x1=\"" + Num(x0) + "\" y1=\"" + Num(y0) + "\" x2=\"" + Num(x1) + "\" y2=\"" +
         Num(y1) + "\" stroke=\"#969696\" stroke-dasharray=\"3,3\"/>\n";
  out += "<text x=\"" + Num(kCenterX) + "\" y=\"" + Num(kCenterY) +
         "\" font-size=\"12\" fill=\"#969696\" text-anchor=\"middle\">id 0 at the top, "
         "clockwise</text>\n";
  out += "</g>\n";

  // Owned arcs (predecessor, node] of the answering positions.
  out += "<g id=\"arcs\" fill=\"none\" stroke-linecap=\"butt\">\n";
  for (size_t i = 0; i < survey.nodes.size(); ++i) {
    const SurveyNode& node = survey.nodes[i];
    if (!node.answers()) continue;
    const double f = fraction_of(node.keys());
    const std::string style =
        "stroke=\"" + ArcColour(f) + "\" stroke-width=\"" + Num(ArcWidth(f)) + "\"";
    const std::string tooltip = "<title>" +
                                XmlEscape(node.addr + " owns " + Percent(survey.Share(i)) +
                                          " of the ring: " + KeysOf(node)) +
                                "</title>";
    const std::optional<size_t> pred = survey.AnsweringPredecessor(i);
    if (!pred || *pred == i) {
      out += "<circle cx=\"" + Num(kCenterX) + "\" cy=\"" + Num(kCenterY) + "\" r=\"" +
             Num(kRadius) + "\" " + style + ">" + tooltip + "</circle>\n";
      continue;
    }
    const double from = AngleOf(survey.nodes[*pred].id);
    double span = AngleOf(node.id) - from;
    if (span < 0) span += 360.0;
    const double gap = std::min(kArcGapDegrees, span * 0.1);
    const double start = from + gap;
    const double end = from + span - gap;
    if (end <= start) continue;
    PointAt(start, kRadius, &x0, &y0);
    PointAt(end, kRadius, &x1, &y1);
    out += "<path d=\"M " + Num(x0) + " " + Num(y0) + " A " + Num(kRadius) + " " + Num(kRadius) +
           " 0 " + (end - start > 180.0 ? "1" : "0") + " 1 " + Num(x1) + " " + Num(y1) + "\" " +
           style + ">" + tooltip + "</path>\n";
  }
  out += "</g>\n";

  // Positions, and their labels in two columns (right half, left half) stacked without
  // overlap, each tied to its dot by a leader line.
  out += "<g id=\"nodes\">\n";
  const std::string addr_size = many ? "8" : "12";
  const std::string count_size = many ? "7" : "11";
  const double label_gap = many ? kSmallLabelGap : kLabelGap;
  std::vector<Label> labels;
  for (size_t i = 0; i < survey.nodes.size(); ++i) {
    const SurveyNode& node = survey.nodes[i];
    const double angle = AngleOf(node.id);
    double x = 0, y_dot = 0;
    PointAt(angle, kRadius, &x, &y_dot);
    std::string detail = std::string(NodeStateName(node.state)) + ", id " + node.id.ToHex();
    if (node.answers()) {
      detail += ", " +
                (node.counted() ? CountOf(node.keys(), "key", "keys") + ", " +
                                      CountOf(node.replica_keys(), "replica key", "replica keys")
                                : KeysOf(node)) +
                ", " + Percent(survey.Share(i)) + " of the ring";
    } else if (!node.down_reason.empty()) {
      detail += ": " + node.down_reason;
    }
    out += "<circle cx=\"" + Num(x) + "\" cy=\"" + Num(y_dot) + "\" r=\"" + Num(kDotRadius) +
           "\" fill=\"" + DotFill(node.state) + "\" stroke=\"" +
           (node.answers() ? "#08306b" : "#cb181d") + "\" stroke-width=\"2\"><title>" +
           XmlEscape(node.addr + " (" + detail + ")") + "</title></circle>\n";
    labels.push_back(Label{i, x, y_dot, angle < 180.0, y_dot});
  }
  for (bool right : {true, false}) {
    std::vector<Label*> column;
    for (Label& label : labels) {
      if (label.right == right) column.push_back(&label);
    }
    StackLabels(&column, label_gap);
  }
  for (const Label& label : labels) {
    const SurveyNode& node = survey.nodes[label.node];
    // On the label circle at the label's height, at least kMinLabelOffset from the middle.
    const double dy = label.y - kCenterY;
    const double reach = std::sqrt(std::max(0.0, kLabelRadius * kLabelRadius - dy * dy));
    const double offset = std::max(reach, kMinLabelOffset);
    const double lx = kCenterX + (label.right ? offset : -offset);
    const char* anchor = label.right ? "start" : "end";
    out += "<line x1=\"" + Num(label.dot_x) + "\" y1=\"" + Num(label.dot_y) + "\" x2=\"" +
           Num(lx + (label.right ? -4 : 4)) + "\" y2=\"" + Num(label.y - 4) +
           "\" stroke=\"#bdbdbd\" stroke-width=\"1\"/>\n";
    const std::string second = node.answers() ? KeysOf(node) : std::string("Down");
    out += "<text x=\"" + Num(lx) + "\" y=\"" + Num(label.y) + "\" font-size=\"" + addr_size +
           "\" text-anchor=\"" + anchor + "\" fill=\"#222222\">" + XmlEscape(node.addr) +
           "<tspan x=\"" + Num(lx) + "\" dy=\"1.2em\" font-size=\"" + count_size + "\" fill=\"" +
           (node.answers() ? "#525252" : "#cb181d") + "\">" + XmlEscape(second) +
           "</tspan></text>\n";
  }
  out += "</g>\n";

  // Legend: arc width and colour against primary key counts, and the dot states.
  const double lx = kLegendX;
  double ly = 200;
  out += "<g id=\"legend\" font-size=\"12\" fill=\"#222222\">\n";
  out += "<text x=\"" + Num(lx) + "\" y=\"" + Num(ly) +
         "\" font-weight=\"bold\">primary keys per arc</text>\n";
  ly += 26;
  for (int k = kLegendSamples - 1; k >= 0; --k, ly += 34) {
    const double f = static_cast<double>(k) / (kLegendSamples - 1);
    const uint64_t count = static_cast<uint64_t>(std::llround(f * static_cast<double>(max_keys)));
    out += "<line x1=\"" + Num(lx) + "\" y1=\"" + Num(ly) + "\" x2=\"" + Num(lx + 60) + "\" y2=\"" +
           Num(ly) + "\" stroke=\"" + ArcColour(f) + "\" stroke-width=\"" + Num(ArcWidth(f)) +
           "\"/>\n";
    out += "<text x=\"" + Num(lx + 72) + "\" y=\"" + Num(ly + 4) + "\">" +
           XmlEscape(CountOf(count, "key", "keys")) + "</text>\n";
  }
  ly += 10;
  for (NodeState state : {NodeState::kUp, NodeState::kJoining, NodeState::kDown}) {
    const std::string name =
        state == NodeState::kJoining ? "Joining / Leaving" : std::string(NodeStateName(state));
    out += "<circle cx=\"" + Num(lx + 8) + "\" cy=\"" + Num(ly) + "\" r=\"" + Num(kDotRadius) +
           "\" fill=\"" + DotFill(state) + "\" stroke=\"" +
           (state == NodeState::kDown ? "#cb181d" : "#08306b") + "\" stroke-width=\"2\"/>\n";
    out += "<text x=\"" + Num(lx + 24) + "\" y=\"" + Num(ly + 4) + "\">" + XmlEscape(name) +
           "</text>\n";
    ly += 24;
  }
  out += "</g>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace chord::ctl
