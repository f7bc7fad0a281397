#include "protocol/limits.h"

namespace chord {

std::string KeyProblem(std::string_view key) {
  if (key.empty()) {
    return "the key is empty; give a key of 1 to " + std::to_string(kMaxKeyBytes) + " bytes";
  }
  if (key.size() > kMaxKeyBytes) {
    return "the key is " + std::to_string(key.size()) + " bytes, over the limit of " +
           std::to_string(kMaxKeyBytes) + "; use a shorter key";
  }
  return "";
}

std::string ValueProblem(size_t size, size_t max_bytes) {
  if (size <= max_bytes) return "";
  return "the value is " + std::to_string(size) + " bytes, over the limit of " +
         std::to_string(max_bytes) + "; store a smaller value";
}

}  // namespace chord
