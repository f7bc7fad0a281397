// Length-prefixed framing for chord.wire.Envelope: every frame is a 4-byte big-endian payload
// length followed by that many bytes of serialized Envelope. FrameDecoder reassembles frames
// from an arbitrary split of the byte stream. Not thread-safe; one decoder per connection.
#ifndef CHORD_PROTOCOL_FRAME_H_
#define CHORD_PROTOCOL_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/chord.pb.h"

namespace chord {

inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr uint32_t kDefaultMaxFrameBytes = 16u << 20;  // 16 MiB
// The memory a frame may take while parsed (ParseCost's estimate, checked before parsing):
// the floor, or so many times its size if that is more. The largest frames of many small items
// the nodes send (hand-over batches of 4 MiB, lists of 8 MiB) stay well below the floor.
inline constexpr size_t kParseFloorBytes = size_t{64} << 20;
inline constexpr size_t kParseBytesPerFrameByte = 4;
[[nodiscard]] size_t ParseLimitBytes(size_t frame_bytes);

// Serializes `envelope` behind its length prefix. Returns false (and leaves `out` unchanged)
// if the encoded payload would exceed `max_frame_bytes`.
[[nodiscard]] bool EncodeFrame(const wire::Envelope& envelope, std::string* out,
                               uint32_t max_frame_bytes = kDefaultMaxFrameBytes);

class FrameDecoder {
 public:
  enum class Result {
    kNeedMore,  // no complete frame buffered yet
    kFrame,     // *out holds the next envelope
    kError,     // the stream is unusable (oversized or malformed frame): close it
  };

  explicit FrameDecoder(uint32_t max_frame_bytes = kDefaultMaxFrameBytes)
      : max_frame_bytes_(max_frame_bytes) {}

  // Appends bytes read from the connection.
  void Feed(std::string_view bytes);
  // Extracts the next complete frame. A frame whose parsing would take more memory than
  // ParseLimitBytes of its size is an error, found before it is parsed. After kError, error()
  // says why and the decoder stays in the error state.
  [[nodiscard]] Result Next(wire::Envelope* out);

  const std::string& error() const { return error_; }
  size_t buffered() const { return buffer_.size() - consumed_; }
  // The bytes of the complete frames at the front of what is buffered (headers included): what
  // Next would take without more input, short of an error.
  size_t complete_bytes() const;
  // A new bound for the frames still to come (e.g. once the peer is known to be a client).
  void set_max_frame_bytes(uint32_t max_frame_bytes) { max_frame_bytes_ = max_frame_bytes; }

 private:
  uint32_t max_frame_bytes_;
  std::string buffer_;
  size_t consumed_ = 0;
  std::string error_;
};

}  // namespace chord

#endif  // CHORD_PROTOCOL_FRAME_H_
