// ByteBudget: a node-wide cap on bytes of one kind held for all connections together (input
// buffered before its frame is complete, output queued for peers that read slowly), so that no
// set of connections can make the process hold more than the cap. Connections charge what they
// hold and release it when it is consumed or they close. Loop thread only.
#ifndef CHORD_NODE_RUNTIME_BYTE_BUDGET_H_
#define CHORD_NODE_RUNTIME_BYTE_BUDGET_H_

#include <cstddef>

namespace chord {

class ByteBudget {
 public:
  explicit ByteBudget(size_t limit) : limit_(limit) {}

  // Takes `n` more bytes; false (and nothing taken) when that would pass the limit, or when a
  // Take has already passed it.
  bool Charge(size_t n) {
    if (used_ > limit_ || n > limit_ - used_) return false;
    used_ += n;
    return true;
  }
  // Takes `n` bytes even past the limit: for moving a charge from another budget.
  void Take(size_t n) { used_ += n; }
  void Release(size_t n) { used_ -= n < used_ ? n : used_; }
  size_t used() const { return used_; }
  size_t limit() const { return limit_; }

 private:
  size_t limit_;
  size_t used_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_BYTE_BUDGET_H_
