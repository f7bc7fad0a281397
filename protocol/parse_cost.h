// ParseCost: an upper estimate of the memory that parsing one serialized message takes, read
// from its wire format with the message type's descriptor before anything is parsed. The
// parser allocates an object for every submessage and every element of a repeated field, so a
// frame of empty submessages (two bytes each on the wire) would take some 45 times its size
// while parsed; FrameDecoder asks for this estimate first and refuses such a frame instead.
// Immutable once built; any thread may call Bound.
#ifndef CHORD_PROTOCOL_PARSE_COST_H_
#define CHORD_PROTOCOL_PARSE_COST_H_

#include <google/protobuf/descriptor.h>

#include <cstddef>
#include <string_view>
#include <unordered_map>

namespace chord {

// What the parser holds for one field it does not know, beyond the field's bytes, at most: its
// entry in the message's list of them (with that list's growth and allocation) and, for a
// length-delimited one, the string holding its bytes.
inline constexpr size_t kUnknownFieldHeldBytes = 160;

// What ParseCost::Bound found.
struct ParseEstimate {
  size_t bytes = 0;        // the estimate (above the limit once it passed it)
  bool malformed = false;  // not a valid encoding: the parser is certain to refuse it
};

class ParseCost {
 public:
  // Tables for `root` and every message type its fields reach (generated types only).
  explicit ParseCost(const google::protobuf::Descriptor& root);

  // An estimate from above of the bytes the parser allocates for `wire` as a message of the
  // root type, or, as soon as the estimate passes `limit`, a value above it (the rest is not
  // read). Bytes that cannot be a valid encoding (a length past the end of what holds it, a
  // cut varint or fixed value, a wire type that does not exist, nesting past the parser's
  // depth) are `malformed`: the parser refuses them, but only once it has parsed all before
  // the fault, allocations included, so they must be refused unparsed.
  [[nodiscard]] ParseEstimate Bound(std::string_view wire, size_t limit) const;

  // The most the parser can allocate per byte of wire format, over every field reachable from
  // the root: a message of size S cannot cost more than S times this.
  size_t max_bytes_per_wire_byte() const { return max_bytes_per_wire_byte_; }

 private:
  size_t Scan(const unsigned char* p, const unsigned char* end,
              const google::protobuf::Descriptor* type, int depth, size_t limit,
              bool* malformed) const;
  void AddType(const google::protobuf::Descriptor* type);

  const google::protobuf::Descriptor* root_;
  // The bytes one object of each message type takes (its object and the allocator's share).
  std::unordered_map<const google::protobuf::Descriptor*, size_t> object_bytes_;
  size_t max_bytes_per_wire_byte_ = 0;
};

}  // namespace chord

#endif  // CHORD_PROTOCOL_PARSE_COST_H_
