#include "protocol/parse_cost.h"

#include <google/protobuf/message.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace chord {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// The parser's recursion limit (protobuf's default): deeper input is refused by it.
constexpr int kMaxDepth = 100;
// What the allocator adds to a block it hands out, rounding included (glibc's malloc: at most
// 23 bytes; jemalloc's small size classes: at most 15).
constexpr size_t kAllocationBytes = 24;
// A field's slot in a repeated field's array, which grows by doubling: while it grows, the old
// array and the new one, twice its size, are both held.
constexpr size_t kSlotBytes = 3 * sizeof(void*);
// A repeated field's array when it is first allocated: room for four elements of eight bytes
// and its header, whatever the elements; counted with the message that has the field.
constexpr size_t kFirstArrayBytes = 4 * 8 + 8 + kAllocationBytes;
// A string the parser allocates: its object, and its characters beyond the inline ones.
constexpr size_t kStringObjectBytes = sizeof(std::string) + kAllocationBytes;
constexpr size_t kInlineChars = 15;
// An unknown field: its entry in the message's list of them (16 bytes, three times over while
// the list grows), and that list's own allocation, counted for every unknown field rather than
// once per message.
constexpr size_t kUnknownFieldBytes = 3 * 16 + 48;
static_assert(kUnknownFieldBytes + kStringObjectBytes <= kUnknownFieldHeldBytes);
// The fewest wire bytes of a field: a one-byte tag and a one-byte length or value.
constexpr size_t kSmallestFieldBytes = 2;

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

bool ReadVarint(const unsigned char** p, const unsigned char* end, uint64_t* out) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    const unsigned char byte = *(*p)++;
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) {
      *out = value;
      return true;
    }
  }
  return false;
}

// A string the parser fills: its characters beyond the inline ones take a block of their own,
// of at least twice the inline capacity (libstdc++ grows a string to twice its capacity).
size_t StringBytes(size_t length) {
  return kStringObjectBytes +
         (length > kInlineChars ? std::max(length, 2 * kInlineChars) + 1 + kAllocationBytes : 0);
}

// The bytes one element of a repeated scalar field takes in its array (three times its size:
// the old array and the new one, twice as large, while it grows).
size_t ElementBytes(const FieldDescriptor& f) {
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL:
      return 3;
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_ENUM:
      return 3 * 4;
    default:
      return 3 * 8;
  }
}

// The wire type of one value of `f` outside the packed form.
uint32_t WireTypeOf(const FieldDescriptor& f) {
  switch (f.type()) {
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_DOUBLE:
      return kFixed64;
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_FLOAT:
      return kFixed32;
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
    case FieldDescriptor::TYPE_MESSAGE:
      return kLengthDelimited;
    default:
      return kVarint;
  }
}

bool IsLengthDelimited(const FieldDescriptor& f) { return WireTypeOf(f) == kLengthDelimited; }

// The fewest wire bytes of one element of `f` in the packed form.
size_t PackedWireBytes(const FieldDescriptor& f) {
  switch (WireTypeOf(f)) {
    case kFixed64:
      return 8;
    case kFixed32:
      return 4;
    default:
      return 1;  // a varint
  }
}

}  // namespace

ParseCost::ParseCost(const Descriptor& root) : root_(&root) {
  AddType(root_);
  // Unknown fields, empty strings in a repeated field, one-byte packed elements: the most any
  // field that is not a message costs per wire byte.
  max_bytes_per_wire_byte_ = (kUnknownFieldBytes + kStringObjectBytes) / kSmallestFieldBytes;
  for (const auto& [type, bytes] : object_bytes_) {
    max_bytes_per_wire_byte_ =
        std::max(max_bytes_per_wire_byte_, (bytes + kSlotBytes) / kSmallestFieldBytes);
  }
}

void ParseCost::AddType(const Descriptor* type) {
  if (object_bytes_.count(type) != 0) return;
  const google::protobuf::Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
  size_t bytes = (prototype != nullptr ? prototype->SpaceUsedLong() : 1024) + kAllocationBytes;
  for (int i = 0; i < type->field_count(); ++i) {
    if (type->field(i)->is_repeated()) bytes += kFirstArrayBytes;
  }
  object_bytes_[type] = bytes;  // before the types its fields reach: they may reach it again
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    if (f->type() == FieldDescriptor::TYPE_MESSAGE) AddType(f->message_type());
  }
}

ParseEstimate ParseCost::Bound(std::string_view wire, size_t limit) const {
  const auto* p = reinterpret_cast<const unsigned char*>(wire.data());
  ParseEstimate out;
  out.bytes = object_bytes_.at(root_) + Scan(p, p + wire.size(), root_, 0, limit, &out.malformed);
  return out;
}

size_t ParseCost::Scan(const unsigned char* p, const unsigned char* end, const Descriptor* type,
                       int depth, size_t limit, bool* malformed) const {
  const auto broken = [malformed](size_t cost) {
    *malformed = true;
    return cost;
  };
  size_t cost = 0;
  int groups = 0;  // unknown groups the scan is inside: their fields are unknown ones
  while (p < end && cost <= limit) {
    uint64_t tag = 0;
    if (!ReadVarint(&p, end, &tag)) return broken(cost);
    const auto wire_type = static_cast<uint32_t>(tag & 7);
    const uint64_t number = tag >> 3;
    const FieldDescriptor* f =
        groups == 0 && number <= static_cast<uint64_t>(FieldDescriptor::kMaxNumber)
            ? type->FindFieldByNumber(static_cast<int>(number))
            : nullptr;
    switch (wire_type) {
      case kVarint:
      case kFixed64:
      case kFixed32: {
        if (wire_type == kVarint) {
          uint64_t ignored = 0;
          if (!ReadVarint(&p, end, &ignored)) return broken(cost);
        } else {
          const size_t width = wire_type == kFixed64 ? 8 : 4;
          if (static_cast<size_t>(end - p) < width) return broken(cost);
          p += width;
        }
        if (f == nullptr || WireTypeOf(*f) != wire_type) {
          cost += kUnknownFieldBytes;  // the parser keeps a value of another wire type as unknown
        } else if (f->is_repeated()) {
          cost += ElementBytes(*f);
        }
        break;
      }
      case kLengthDelimited: {
        uint64_t length = 0;
        if (!ReadVarint(&p, end, &length) || length > static_cast<uint64_t>(end - p)) {
          return broken(cost);
        }
        const unsigned char* next = p + length;
        if (f != nullptr && f->type() == FieldDescriptor::TYPE_MESSAGE) {
          if (depth + 1 > kMaxDepth) return broken(cost);
          cost += object_bytes_.at(f->message_type()) + (f->is_repeated() ? kSlotBytes : 0);
          cost +=
              Scan(p, next, f->message_type(), depth + 1, limit - std::min(cost, limit), malformed);
          if (*malformed) return cost;
        } else if (f != nullptr && IsLengthDelimited(*f)) {
          cost += StringBytes(length) + (f->is_repeated() ? kSlotBytes : 0);
        } else if (f != nullptr && f->is_repeated()) {  // packed scalars
          cost += length / PackedWireBytes(*f) * ElementBytes(*f);
        } else {
          cost += kUnknownFieldBytes + StringBytes(length);
        }
        p = next;
        break;
      }
      case kStartGroup:
        // Kept as an unknown field holding a set of its own; what it holds is counted as
        // unknown fields as the scan goes on.
        ++groups;
        cost += kUnknownFieldBytes + kStringObjectBytes;
        break;
      case kEndGroup:
        if (groups > 0) --groups;
        break;
      default:
        return broken(cost);  // not a wire type
    }
  }
  return cost;
}

}  // namespace chord
