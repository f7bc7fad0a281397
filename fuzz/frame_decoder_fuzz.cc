// libFuzzer target: FrameDecoder (protocol/frame.h) fed arbitrary bytes in arbitrary chunk
// sizes. The same stream is decoded whole and in chunks, and both must give the same frames and
// end the same way (need more with the same bytes buffered, or the same error); after an error
// the decoder stays failed; no frame over the limit is taken, and one of exactly the limit is
// (the stream is decoded again under limits of its first frame's length and one less); every
// frame it returns has a body and survives EncodeFrame and a fresh decoder unchanged.
//
// Input: byte 0 picks the frame limit (bit 7 set: the default 16 MiB; else 1 + 61 * (byte & 0x7f)
// bytes, so that oversized frames are reachable), byte 1 seeds the chunk sizes, the rest is the
// stream. Seeds: fuzz/corpus/frame_decoder_fuzz/.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "protocol/frame.h"

namespace chord {
namespace {

struct Decoded {
  std::vector<std::string> frames;  // each frame's envelope, serialized again
  FrameDecoder::Result last = FrameDecoder::Result::kNeedMore;
  std::string error;
  size_t buffered = 0;
};

// Takes every complete frame out of `decoder`; false once it has failed.
bool Drain(FrameDecoder* decoder, uint32_t max_frame_bytes, Decoded* out) {
  while (true) {
    wire::Envelope envelope;
    const size_t before = decoder->buffered();
    const FrameDecoder::Result r = decoder->Next(&envelope);
    out->last = r;
    if (r == FrameDecoder::Result::kNeedMore) {
      FUZZ_CHECK(decoder->buffered() == before, "kNeedMore consumed bytes");
      return true;
    }
    if (r == FrameDecoder::Result::kError) {
      FUZZ_CHECK(!decoder->error().empty(), "kError without a reason");
      out->error = decoder->error();
      return false;
    }
    FUZZ_CHECK(envelope.body_case() != wire::Envelope::BODY_NOT_SET, "a frame without a body");
    FUZZ_CHECK(decoder->buffered() + kFrameHeaderBytes <= before, "a frame consumed too little");
    FUZZ_CHECK(before - decoder->buffered() - kFrameHeaderBytes <= max_frame_bytes,
               "a frame over the limit was taken");
    out->frames.push_back(envelope.SerializeAsString());
  }
}

// Decodes `stream` fed in the chunks `sizes` gives (cycled; 0 means everything at once).
Decoded Decode(std::string_view stream, uint32_t max_frame_bytes,
               const std::vector<size_t>& sizes) {
  FrameDecoder decoder(max_frame_bytes);
  Decoded out;
  size_t pos = 0;
  size_t turn = 0;
  bool failed = false;
  do {
    size_t n = sizes.empty() ? stream.size() : sizes[turn++ % sizes.size()];
    n = std::min(n, stream.size() - pos);
    decoder.Feed(stream.substr(pos, n));
    pos += n;
    failed = !Drain(&decoder, max_frame_bytes, &out);
  } while (!failed && pos < stream.size());
  if (failed) {
    // Failed for good: more bytes change nothing.
    decoder.Feed(stream.substr(pos));
    wire::Envelope envelope;
    FUZZ_CHECK(decoder.Next(&envelope) == FrameDecoder::Result::kError, "recovered from kError");
    FUZZ_CHECK(decoder.error() == out.error, "the error changed");
  }
  out.buffered = decoder.buffered();
  return out;
}

}  // namespace
}  // namespace chord

// Protobuf logs every string field that is not UTF-8; the fuzzer makes many.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using chord::FrameDecoder;
  if (size < 2) return 0;
  const uint32_t max_frame_bytes =
      (data[0] & 0x80) != 0 ? chord::kDefaultMaxFrameBytes : 1 + 61u * (data[0] & 0x7f);
  uint32_t seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);

  // Chunk sizes from 1 to 16 (mostly small), from a tiny LCG so that they cost no input bytes.
  std::vector<size_t> sizes;
  for (int i = 0; i < 16; ++i) {
    seed = seed * 1103515245u + 12345u;
    sizes.push_back(1 + ((seed >> 16) % 16));
  }
  const chord::Decoded whole = chord::Decode(stream, max_frame_bytes, {});
  const chord::Decoded chunked = chord::Decode(stream, max_frame_bytes, sizes);
  const chord::Decoded bytewise = chord::Decode(stream, max_frame_bytes, {1});
  for (const chord::Decoded* other : {&chunked, &bytewise}) {
    FUZZ_CHECK(other->frames == whole.frames, "chunking changed the frames");
    FUZZ_CHECK(other->last == whole.last, "chunking changed how decoding ended");
    FUZZ_CHECK(other->error == whole.error, "chunking changed the error");
    if (whole.last == FrameDecoder::Result::kNeedMore) {
      FUZZ_CHECK(other->buffered == whole.buffered, "chunking changed the bytes buffered");
    }
  }

  // At the edge of the limit: a first frame of exactly the limit is not refused for its size,
  // one byte over it is.
  if (stream.size() >= chord::kFrameHeaderBytes) {
    const uint32_t first = uint32_t{data[2]} << 24 | uint32_t{data[3]} << 16 |
                           uint32_t{data[4]} << 8 | uint32_t{data[5]};
    const chord::Decoded at = chord::Decode(stream, first, {});
    FUZZ_CHECK(!at.frames.empty() || at.error.find("exceeds") == std::string::npos,
               "a frame of exactly the limit was refused for its size");
    if (first > 0) {
      const chord::Decoded over = chord::Decode(stream, first - 1, {});
      FUZZ_CHECK(over.frames.empty() && over.last == FrameDecoder::Result::kError,
                 "a frame one byte over the limit was not refused");
    }
  }

  // Every frame decoded is encoded again within the default limit and decodes to itself.
  for (const std::string& bytes : whole.frames) {
    chord::wire::Envelope envelope;
    FUZZ_CHECK(envelope.ParseFromString(bytes), "a decoded envelope does not parse again");
    std::string frame;
    FUZZ_CHECK(chord::EncodeFrame(envelope, &frame), "a decoded envelope cannot be encoded");
    FrameDecoder again;
    again.Feed(frame);
    chord::wire::Envelope back;
    FUZZ_CHECK(again.Next(&back) == FrameDecoder::Result::kFrame, "a re-encoded frame fails");
    FUZZ_CHECK(back.SerializeAsString() == bytes, "a re-encoded frame decodes differently");
    FUZZ_CHECK(again.buffered() == 0, "a re-encoded frame leaves bytes behind");
  }
  return 0;
}
