#include "protocol/frame.h"

#include <algorithm>

#include "protocol/parse_cost.h"

namespace chord {

namespace {
// Buffer capacity a decoder keeps between frames.
constexpr size_t kKeptBufferBytes = 256 << 10;

// The payload length in the frame header at `p`.
uint32_t HeaderLength(const char* p) {
  const auto* b = reinterpret_cast<const uint8_t*>(p);
  return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | uint32_t{b[3]};
}

const ParseCost& EnvelopeParseCost() {
  static const ParseCost* const cost = new ParseCost(*wire::Envelope::descriptor());
  return *cost;
}
}  // namespace

size_t ParseLimitBytes(size_t frame_bytes) {
  return std::max(kParseFloorBytes, kParseBytesPerFrameByte * frame_bytes);
}

bool EncodeFrame(const wire::Envelope& envelope, std::string* out, uint32_t max_frame_bytes) {
  const size_t size = envelope.ByteSizeLong();
  if (size > max_frame_bytes) return false;
  const size_t start = out->size();
  out->resize(start + kFrameHeaderBytes + size);
  auto* p = reinterpret_cast<uint8_t*>(out->data() + start);
  p[0] = static_cast<uint8_t>(size >> 24);
  p[1] = static_cast<uint8_t>(size >> 16);
  p[2] = static_cast<uint8_t>(size >> 8);
  p[3] = static_cast<uint8_t>(size);
  envelope.SerializeWithCachedSizesToArray(p + kFrameHeaderBytes);
  return true;
}

void FrameDecoder::Feed(std::string_view bytes) {
  if (!error_.empty()) return;
  // Drop what has been consumed before growing, so the buffer holds at most one frame plus
  // one read's worth of bytes.
  if (consumed_ > 0 && consumed_ >= buffer_.size() / 2) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

size_t FrameDecoder::complete_bytes() const {
  size_t at = consumed_;
  while (buffer_.size() - at >= kFrameHeaderBytes) {
    const uint32_t size = HeaderLength(buffer_.data() + at);
    if (size > max_frame_bytes_ || buffer_.size() - at - kFrameHeaderBytes < size) break;
    at += kFrameHeaderBytes + size;
  }
  return at - consumed_;
}

FrameDecoder::Result FrameDecoder::Next(wire::Envelope* out) {
  if (!error_.empty()) return Result::kError;
  const size_t available = buffer_.size() - consumed_;
  if (available < kFrameHeaderBytes) return Result::kNeedMore;
  const auto* p = reinterpret_cast<const uint8_t*>(buffer_.data() + consumed_);
  const uint32_t size = HeaderLength(buffer_.data() + consumed_);
  if (size > max_frame_bytes_) {
    error_ = "frame of " + std::to_string(size) + " bytes exceeds the maximum of " +
             std::to_string(max_frame_bytes_);
    return Result::kError;
  }
  if (available < kFrameHeaderBytes + size) return Result::kNeedMore;
  const ParseCost& cost = EnvelopeParseCost();
  if (const size_t limit = ParseLimitBytes(size); size * cost.max_bytes_per_wire_byte() > limit) {
    const ParseEstimate estimate =
        cost.Bound({buffer_.data() + consumed_ + kFrameHeaderBytes, size}, limit);
    if (estimate.malformed) {
      // The parser would refuse it too, but only after allocating for all before the fault.
      error_ = "frame of " + std::to_string(size) +
               " bytes is not a valid Envelope (a length or a value runs past the end of what "
               "holds it, or a wire type does not exist)";
      return Result::kError;
    }
    if (estimate.bytes > limit) {
      error_ = "frame of " + std::to_string(size) + " bytes would take more than " +
               std::to_string(limit) +
               " bytes of memory to parse (it holds too many small or empty items); send them "
               "in smaller frames";
      return Result::kError;
    }
  }
  out->Clear();
  if (!out->ParseFromArray(p + kFrameHeaderBytes, static_cast<int>(size))) {
    error_ = "frame of " + std::to_string(size) + " bytes is not a valid Envelope";
    return Result::kError;
  }
  if (out->body_case() == wire::Envelope::BODY_NOT_SET) {
    error_ = "envelope has no body";
    return Result::kError;
  }
  consumed_ += kFrameHeaderBytes + size;
  const size_t rest = buffer_.size() - consumed_;
  if (buffer_.capacity() > kKeptBufferBytes && rest < buffer_.capacity() / 4) {
    // Give back the memory of a large frame: the input budget counts the bytes still waiting,
    // so a connection must not keep the capacity its largest frame needed, idle or with a
    // byte of the next frame always sent. What stays is about four times what waits at most.
    std::string(buffer_, consumed_).swap(buffer_);
    consumed_ = 0;
  } else if (rest == 0) {
    buffer_.clear();
    consumed_ = 0;
  }
  return Result::kFrame;
}

}  // namespace chord
