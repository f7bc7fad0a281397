// CountingAllocator: a std::allocator that adds every allocation's size to a counter, so the
// memory of a node-based container (std::map) can be reported exactly as requested from the
// heap (malloc's own per-chunk overhead comes on top). One counter per container; the counter
// must outlive the container. Same thread as the container.
#ifndef CHORD_TOOLS_PLACEMENT_COUNTING_ALLOCATOR_H_
#define CHORD_TOOLS_PLACEMENT_COUNTING_ALLOCATOR_H_

#include <cstddef>
#include <memory>

namespace chord::placement {

template <typename T>
class CountingAllocator {
 public:
  using value_type = T;

  explicit CountingAllocator(size_t* bytes) : bytes_(bytes) {}
  template <typename U>
  CountingAllocator(const CountingAllocator<U>& other) : bytes_(other.counter()) {}  // NOLINT

  [[nodiscard]] T* allocate(size_t n) {
    *bytes_ += n * sizeof(T);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    *bytes_ -= n * sizeof(T);
    std::allocator<T>().deallocate(p, n);
  }

  [[nodiscard]] size_t* counter() const { return bytes_; }
  template <typename U>
  bool operator==(const CountingAllocator<U>& other) const {
    return bytes_ == other.counter();
  }

 private:
  size_t* bytes_;
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_COUNTING_ALLOCATOR_H_
