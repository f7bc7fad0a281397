#include "tools/sim/ideal_ring.h"

#include <algorithm>
#include <unordered_map>

namespace chord::sim {

std::string SimAddress(uint64_t i) {
  return "10." + std::to_string((i >> 16) & 0xff) + "." + std::to_string((i >> 8) & 0xff) + "." +
         std::to_string(i & 0xff) + ":" + std::to_string(4000 + (i >> 24));
}

RingOrder::RingOrder(std::vector<Id> ids) : ids_(std::move(ids)) {
  std::sort(ids_.begin(), ids_.end());
}

size_t RingOrder::SuccessorIndex(const Id& x) const {
  auto it = std::lower_bound(ids_.begin(), ids_.end(), x);
  return it == ids_.end() ? 0 : static_cast<size_t>(it - ids_.begin());
}

std::vector<std::string> BuildIdealRing(SimNetwork* net, int n, const NodeConfig& config,
                                        uint64_t first_index) {
  std::vector<std::string> addrs;
  std::vector<NodeRef> refs;
  for (int i = 0; i < n; ++i) {
    addrs.push_back(SimAddress(first_index + static_cast<uint64_t>(i)));
    refs.push_back(NodeRef::ForAddress(addrs.back()));
  }
  std::sort(refs.begin(), refs.end(),
            [](const NodeRef& a, const NodeRef& b) { return a.id < b.id; });
  std::vector<Id> ids;
  for (const auto& r : refs) ids.push_back(r.id);
  const RingOrder order(ids);
  const size_t size = refs.size();
  for (size_t k = 0; k < size; ++k) {
    const NodeRef& self = refs[k];
    net->AddNode(self.addr, config);
    std::vector<NodeRef> succ;
    const size_t want = std::min<size_t>(static_cast<size_t>(config.successors), size - 1);
    for (size_t j = 1; j <= want; ++j) succ.push_back(refs[(k + j) % size]);
    std::optional<NodeRef> pred;
    if (size > 1) pred = refs[(k + size - 1) % size];
    std::vector<std::optional<NodeRef>> fingers(Id::kBits);
    for (int i = 0; i < Id::kBits; ++i) {
      const size_t f = order.SuccessorIndex(self.id + Id::PowerOfTwo(i));
      if (f != k) fingers[i] = refs[f];
    }
    net->InstallRoutingState(self.addr, std::move(succ), std::move(pred), fingers);
  }
  return addrs;
}

bool IsIdealRing(const SimNetwork& net, int successors, std::string* why) {
  std::vector<const ChordNode*> nodes;
  for (const ChordNode* n : net.LiveNodes()) {
    if (n->joined()) nodes.push_back(n);
  }
  const size_t n = nodes.size();
  if (n != net.LiveNodes().size()) {
    if (why) {
      for (const ChordNode* x : net.LiveNodes()) {
        if (!x->joined()) *why = x->self().addr + " has not joined";
      }
    }
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    const ChordNode* x = nodes[i];
    const size_t want = std::min<size_t>(static_cast<size_t>(successors), n - 1);
    const auto& list = x->successors();
    if (list.size() != want) {
      if (why) {
        *why = x->self().addr + " has " + std::to_string(list.size()) + " successors, want " +
               std::to_string(want);
      }
      return false;
    }
    for (size_t k = 0; k < want; ++k) {
      if (!(list[k].id == nodes[(i + 1 + k) % n]->self().id)) {
        if (why) *why = x->self().addr + ": successor " + std::to_string(k) + " is wrong";
        return false;
      }
    }
    if (n > 1 &&
        (!x->predecessor() || !(x->predecessor()->id == nodes[(i + n - 1) % n]->self().id))) {
      if (why) *why = x->self().addr + ": predecessor is wrong";
      return false;
    }
  }
  return true;
}

}  // namespace chord::sim
