#include "node/core/membership/member_book.h"

#include <algorithm>
#include <sstream>

namespace chord {
namespace {

constexpr const char* kMetaName = "members";

}  // namespace

void MemberBook::Load() {
  std::string text;
  Status s = ctx_.store()->GetMeta(kMetaName, &text);
  if (!s.ok()) {
    if (!s.IsNotFound())
      ctx_.Log(LogLevel::kWarn, "cannot read remembered members: " + s.message());
    return;
  }
  std::istringstream in(text);
  for (std::string addr; std::getline(in, addr);) {
    if (!addr.empty()) Saw(NodeRef::ForAddress(addr));
  }
  for (Entry& e : entries_) e.kept = true;
  dirty_ = false;
}

void MemberBook::SaveIfChanged() {
  if (!dirty_) return;
  std::string text;
  for (const Entry& e : entries_) text.append(e.node.addr).append(1, '\n');
  Status s = ctx_.store()->PutMeta(kMetaName, text);
  if (!s.ok()) {
    ctx_.Log(LogLevel::kWarn, "cannot keep the remembered members: " + s.message());
    return;
  }
  dirty_ = false;
}

void MemberBook::Saw(const NodeRef& n) {
  if (n == ctx_.self()) return;
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&n](const Entry& e) { return e.node == n; });
  if (it != entries_.end()) {
    it->seen_ms = ctx_.now.mono_ms;
    return;
  }
  if (entries_.size() >= kMaxMembers) {
    // A newcomer takes the place of the least recently heard from newcomer once kNewcomerSlots
    // are taken by newcomers, else of the least recently heard from established member: so
    // churn cannot push out more than kNewcomerSlots established members, and the current
    // neighbours (heard from every round) always find a place.
    const auto newcomers = static_cast<size_t>(std::count_if(
        entries_.begin(), entries_.end(), [](const Entry& e) { return !e.established(); }));
    const bool from_newcomers = newcomers >= kNewcomerSlots;
    // A current neighbour is never pushed out while another entry can go (a successor list
    // may hold more newcomers than the slots, vnodes of a scale-out, say).
    const auto rank = [&](const Entry& e) {
      return (ctx_.ring.IsNeighbour(e.node) ? 2 : 0) + (e.established() == from_newcomers ? 1 : 0);
    };
    auto first_out = entries_.begin();
    for (auto e = entries_.begin(); e != entries_.end(); ++e) {
      const int r = rank(*e);
      const int best = rank(*first_out);
      if (r < best || (r == best && e->seen_ms < first_out->seen_ms)) first_out = e;
    }
    entries_.erase(first_out);
  }
  entries_.push_back(Entry{n, ctx_.now.mono_ms, ctx_.now.mono_ms});
  dirty_ = true;
}

void MemberBook::Forget(const NodeRef& n) {
  const auto before = entries_.size();
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&n](const Entry& e) { return e.node == n; }),
                 entries_.end());
  dirty_ = dirty_ || entries_.size() != before;
}

std::optional<NodeRef> MemberBook::PickForgotten() {
  std::vector<const NodeRef*> forgotten;
  for (const Entry& e : entries_) {
    if (!ctx_.ring.PointsTo(e.node)) forgotten.push_back(&e.node);
  }
  if (forgotten.empty()) return std::nullopt;
  return *forgotten[ctx_.rng() % forgotten.size()];
}

std::vector<NodeRef> MemberBook::members() const {
  std::vector<NodeRef> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(e.node);
  return out;
}

}  // namespace chord
