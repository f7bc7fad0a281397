// Tests for the length-prefixed framing (protocol/frame.h): EncodeFrame and FrameDecoder over
// arbitrary splits of the byte stream, and the error cases that must close a connection.
#include "protocol/frame.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/hostile_payloads.h"

namespace chord {
namespace {

using google::protobuf::util::MessageDifferencer;
using Result = FrameDecoder::Result;

wire::Envelope PutEnvelope(uint64_t request_id, const std::string& key, const std::string& value) {
  wire::Envelope env;
  env.set_request_id(request_id);
  env.mutable_put()->set_key(key);
  env.mutable_put()->set_value(value);
  env.mutable_put()->set_version(request_id * 3);
  return env;
}

wire::Envelope StatusEnvelope(uint64_t request_id) {
  wire::Envelope env;
  env.set_request_id(request_id);
  auto* s = env.mutable_status_resp();
  s->mutable_self()->set_id(std::string(20, '\x01'));
  s->mutable_self()->set_addr("127.0.0.1:4000");
  s->set_keys(17);
  for (int i = 0; i < 3; ++i) {
    auto* succ = s->add_successors();
    succ->set_id(std::string(20, static_cast<char>(i)));
    succ->set_addr("127.0.0.1:" + std::to_string(4001 + i));
  }
  return env;
}

std::string Encode(const wire::Envelope& env) {
  std::string out;
  EXPECT_TRUE(EncodeFrame(env, &out));
  return out;
}

std::string Header(uint32_t size) {
  std::string h(4, '\0');
  h[0] = static_cast<char>(size >> 24);
  h[1] = static_cast<char>(size >> 16);
  h[2] = static_cast<char>(size >> 8);
  h[3] = static_cast<char>(size);
  return h;
}

// Drains every complete frame from the decoder; fails the test on kError.
std::vector<wire::Envelope> Drain(FrameDecoder* dec) {
  std::vector<wire::Envelope> out;
  for (;;) {
    wire::Envelope env;
    const Result r = dec->Next(&env);
    if (r == Result::kNeedMore) break;
    EXPECT_EQ(r, Result::kFrame) << dec->error();
    if (r != Result::kFrame) break;
    out.push_back(env);
  }
  return out;
}

void ExpectSame(const wire::Envelope& a, const wire::Envelope& b) {
  EXPECT_TRUE(MessageDifferencer::Equals(a, b)) << "got:\n"
                                                << a.DebugString() << "want:\n"
                                                << b.DebugString();
}

TEST(FrameTest, EncodeWritesBigEndianLengthThenPayload) {
  const wire::Envelope env = PutEnvelope(7, "key", "value");
  std::string out = "prefix";
  ASSERT_TRUE(EncodeFrame(env, &out));
  const std::string payload = env.SerializeAsString();
  ASSERT_GT(payload.size(), 0u);
  EXPECT_EQ(out, "prefix" + Header(static_cast<uint32_t>(payload.size())) + payload);
}

TEST(FrameTest, LengthUsesAllFourBytes) {
  // A payload over 64 KiB exercises the third header byte.
  const wire::Envelope env = PutEnvelope(1, "k", std::string(70000, 'v'));
  const std::string frame = Encode(env);
  const uint32_t size = static_cast<uint32_t>(env.ByteSizeLong());
  ASSERT_GT(size, 65536u);
  EXPECT_EQ(frame.substr(0, 4), Header(size));
  FrameDecoder dec;
  dec.Feed(frame);
  auto frames = Drain(&dec);
  ASSERT_EQ(frames.size(), 1u);
  ExpectSame(frames[0], env);
}

TEST(FrameTest, RoundTrip) {
  for (const wire::Envelope& env :
       {PutEnvelope(1, "a", "b"), PutEnvelope(2, std::string("\0k\xff", 3), ""),
        StatusEnvelope(99)}) {
    FrameDecoder dec;
    dec.Feed(Encode(env));
    wire::Envelope got;
    ASSERT_EQ(dec.Next(&got), Result::kFrame) << dec.error();
    ExpectSame(got, env);
    EXPECT_EQ(dec.buffered(), 0u);
    EXPECT_EQ(dec.Next(&got), Result::kNeedMore);
  }
}

TEST(FrameTest, NothingFedNeedsMore) {
  FrameDecoder dec;
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kNeedMore);
  dec.Feed("");
  EXPECT_EQ(dec.Next(&got), Result::kNeedMore);
}

TEST(FrameTest, OneByteAtATime) {
  const wire::Envelope a = PutEnvelope(1, "alpha", "one");
  const wire::Envelope b = StatusEnvelope(2);
  const std::string stream = Encode(a) + Encode(b);
  FrameDecoder dec;
  std::vector<wire::Envelope> got;
  for (size_t i = 0; i < stream.size(); ++i) {
    dec.Feed(stream.substr(i, 1));
    auto frames = Drain(&dec);
    got.insert(got.end(), frames.begin(), frames.end());
    if (i + 1 < Encode(a).size()) {
      EXPECT_TRUE(got.empty()) << "frame decoded early at byte " << i;
    }
  }
  ASSERT_EQ(got.size(), 2u);
  ExpectSame(got[0], a);
  ExpectSame(got[1], b);
  EXPECT_EQ(dec.buffered(), 0u);
}

TEST(FrameTest, SeveralFramesInOneFeed) {
  std::vector<wire::Envelope> sent;
  std::string stream;
  for (int i = 0; i < 10; ++i) {
    sent.push_back(i % 2 ? StatusEnvelope(i) : PutEnvelope(i, "k" + std::to_string(i), "v"));
    stream += Encode(sent.back());
  }
  FrameDecoder dec;
  dec.Feed(stream);
  auto got = Drain(&dec);
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) ExpectSame(got[i], sent[i]);
  EXPECT_EQ(dec.buffered(), 0u);
}

TEST(FrameTest, SplitAtEveryOffset) {
  const wire::Envelope a = PutEnvelope(5, "split", "me");
  const wire::Envelope b = PutEnvelope(6, "second", std::string(300, 'x'));
  const std::string stream = Encode(a) + Encode(b);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameDecoder dec;
    dec.Feed(stream.substr(0, cut));
    auto got = Drain(&dec);
    dec.Feed(stream.substr(cut));
    auto rest = Drain(&dec);
    got.insert(got.end(), rest.begin(), rest.end());
    ASSERT_EQ(got.size(), 2u) << "cut at " << cut;
    ExpectSame(got[0], a);
    ExpectSame(got[1], b);
    EXPECT_EQ(dec.buffered(), 0u) << "cut at " << cut;
  }
}

TEST(FrameTest, SplitInThreeAtEveryPairOfOffsets) {
  const wire::Envelope a = PutEnvelope(8, "k", "v");
  const std::string stream = Encode(a) + Encode(a);
  for (size_t i = 0; i <= stream.size(); ++i) {
    for (size_t j = i; j <= stream.size(); ++j) {
      FrameDecoder dec;
      std::vector<wire::Envelope> got;
      for (const std::string& part :
           {stream.substr(0, i), stream.substr(i, j - i), stream.substr(j)}) {
        dec.Feed(part);
        auto frames = Drain(&dec);
        got.insert(got.end(), frames.begin(), frames.end());
      }
      ASSERT_EQ(got.size(), 2u) << i << " " << j;
    }
  }
}

TEST(FrameTest, PartialFrameIsBuffered) {
  const std::string frame = Encode(PutEnvelope(1, "key", "value"));
  FrameDecoder dec;
  dec.Feed(frame.substr(0, frame.size() - 1));
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kNeedMore);
  EXPECT_EQ(dec.buffered(), frame.size() - 1);
  EXPECT_TRUE(dec.error().empty());
}

TEST(FrameTest, FrameAtTheMaximumIsAccepted) {
  const wire::Envelope env = PutEnvelope(1, "key", std::string(100, 'v'));
  const uint32_t size = static_cast<uint32_t>(env.ByteSizeLong());
  std::string frame;
  ASSERT_TRUE(EncodeFrame(env, &frame, size));
  FrameDecoder dec(size);
  dec.Feed(frame);
  auto got = Drain(&dec);
  ASSERT_EQ(got.size(), 1u);
  ExpectSame(got[0], env);
}

TEST(FrameTest, OversizedHeaderIsAnErrorAndStaysOne) {
  const wire::Envelope env = PutEnvelope(1, "key", std::string(100, 'v'));
  const uint32_t size = static_cast<uint32_t>(env.ByteSizeLong());
  FrameDecoder dec(size - 1);
  dec.Feed(Encode(env));
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kError);
  EXPECT_FALSE(dec.error().empty());
  // Valid frames afterwards do not revive the stream.
  dec.Feed(Encode(PutEnvelope(2, "k", "v")));
  EXPECT_EQ(dec.Next(&got), Result::kError);
  EXPECT_EQ(dec.Next(&got), Result::kError);
  EXPECT_FALSE(dec.error().empty());
}

TEST(FrameTest, DefaultMaximumIs16MiB) {
  FrameDecoder dec;
  dec.Feed(Header(kDefaultMaxFrameBytes + 1));
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kError);

  // Exactly the maximum is not an error; the decoder waits for the payload.
  FrameDecoder at_max;
  at_max.Feed(Header(kDefaultMaxFrameBytes));
  EXPECT_EQ(at_max.Next(&got), Result::kNeedMore);
}

TEST(FrameTest, HeaderClaimingFourGiBFailsWithoutWaitingForData) {
  FrameDecoder dec;
  dec.Feed(Header(0xFFFFFFFFu));
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kError);
  EXPECT_FALSE(dec.error().empty());
  dec.Feed(std::string(1000, 'x'));
  EXPECT_EQ(dec.Next(&got), Result::kError);
}

TEST(FrameTest, OversizedFrameAfterAGoodOneIsAnError) {
  const wire::Envelope env = PutEnvelope(1, "ok", "fine");
  FrameDecoder dec;
  dec.Feed(Encode(env) + Header(0xFFFFFFFFu));
  wire::Envelope got;
  ASSERT_EQ(dec.Next(&got), Result::kFrame);
  ExpectSame(got, env);
  EXPECT_EQ(dec.Next(&got), Result::kError);
}

TEST(FrameTest, GarbagePayloadIsAnError) {
  // Tag 0 and an over-long varint are both invalid protobuf.
  for (const std::string& garbage :
       {std::string(8, '\0'), std::string(12, '\xff'), std::string("\x0a\x7f", 2)}) {
    FrameDecoder dec;
    dec.Feed(Header(static_cast<uint32_t>(garbage.size())) + garbage);
    wire::Envelope got;
    EXPECT_EQ(dec.Next(&got), Result::kError) << "payload size " << garbage.size();
    EXPECT_FALSE(dec.error().empty());
    dec.Feed(Encode(PutEnvelope(2, "k", "v")));
    EXPECT_EQ(dec.Next(&got), Result::kError);
  }
}

TEST(FrameTest, EnvelopeWithoutBodyIsAnError) {
  wire::Envelope empty;
  empty.set_request_id(42);
  std::string frame;
  ASSERT_TRUE(EncodeFrame(empty, &frame));
  FrameDecoder dec;
  dec.Feed(frame);
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kError);
  EXPECT_FALSE(dec.error().empty());
}

// A frame of nearly 16 MiB of empty records (EmptyRecordsPayload) would make the parser
// allocate some 45 times its size: refused before it is parsed, with the reason.
TEST(FrameTest, AFrameThatWouldTakeTooMuchMemoryToParseIsAnError) {
  const std::string payload = testing::EmptyRecordsPayload(kDefaultMaxFrameBytes, 0);
  ASSERT_LE(payload.size(), kDefaultMaxFrameBytes);
  FrameDecoder dec;
  dec.Feed(Header(static_cast<uint32_t>(payload.size())) + payload);
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kError);
  EXPECT_NE(dec.error().find("memory to parse"), std::string::npos) << dec.error();
}

// The same frame with its records' length one byte past its end: the parser would refuse it
// only after allocating every record; it is refused unparsed as not an Envelope.
TEST(FrameTest, AFrameTheParserWouldRefuseLateIsRefusedUnparsed) {
  const std::string payload = testing::EmptyRecordsPayload(kDefaultMaxFrameBytes, 1);
  FrameDecoder dec;
  dec.Feed(Header(static_cast<uint32_t>(payload.size())) + payload);
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kError);
  EXPECT_NE(dec.error().find("runs past the end"), std::string::npos) << dec.error();
}

// A hand-over batch of 4 MiB (as a node counts it) of the smallest records a node sends is
// accepted.
TEST(FrameTest, AHandOverBatchOfTheSmallestRecordsIsAccepted) {
  wire::Envelope transfer;
  transfer.set_request_id(7);
  size_t bytes = 0;
  for (uint32_t i = 0; bytes < (4u << 20); ++i) {
    wire::Record* r = transfer.mutable_transfer()->add_records();
    r->set_key(std::to_string(i));
    r->set_version((uint64_t{1800000000000} << 16) + i);
    r->set_writer(std::string(20, 'w'));
    r->set_deleted(true);
    bytes += r->key().size() + 32;  // as a node counts a batch (Store::RecordBytes)
  }
  std::string frame;
  ASSERT_TRUE(EncodeFrame(transfer, &frame));
  FrameDecoder dec;
  dec.Feed(frame);
  wire::Envelope got;
  ASSERT_EQ(dec.Next(&got), Result::kFrame) << dec.error();
  EXPECT_EQ(got.transfer().records_size(), transfer.transfer().records_size());
}

// complete_bytes: the complete frames at the front of the buffer, headers included; not the
// frame still arriving, nor anything from a header over the limit on.
TEST(FrameTest, CompleteBytesCountsTheWholeFramesAtTheFront) {
  const std::string a = Encode(PutEnvelope(1, "a", "first"));
  const std::string b = Encode(PutEnvelope(2, "b", std::string(300, 'v')));
  FrameDecoder dec;
  EXPECT_EQ(dec.complete_bytes(), 0u);
  dec.Feed(a + b + b.substr(0, 10));
  EXPECT_EQ(dec.complete_bytes(), a.size() + b.size());
  wire::Envelope got;
  ASSERT_EQ(dec.Next(&got), Result::kFrame);
  EXPECT_EQ(dec.complete_bytes(), b.size());
  dec.Feed(b.substr(10));
  EXPECT_EQ(dec.complete_bytes(), 2 * b.size());
  ASSERT_EQ(dec.Next(&got), Result::kFrame);
  ASSERT_EQ(dec.Next(&got), Result::kFrame);
  EXPECT_EQ(dec.complete_bytes(), 0u);
  FrameDecoder small(static_cast<uint32_t>(a.size() - kFrameHeaderBytes));
  small.Feed(a + b + a);
  EXPECT_EQ(small.complete_bytes(), a.size()) << "counted past a frame over the limit";
}

TEST(FrameTest, ZeroLengthFrameIsAnError) {
  FrameDecoder dec;
  dec.Feed(Header(0));
  wire::Envelope got;
  EXPECT_EQ(dec.Next(&got), Result::kError);
}

TEST(FrameTest, EncodeRefusesEnvelopeAboveTheMaximum) {
  const wire::Envelope env = PutEnvelope(1, "key", std::string(1000, 'v'));
  const uint32_t size = static_cast<uint32_t>(env.ByteSizeLong());
  std::string out = "untouched";
  EXPECT_FALSE(EncodeFrame(env, &out, size - 1));
  EXPECT_EQ(out, "untouched");
  EXPECT_FALSE(EncodeFrame(env, &out, 10));
  EXPECT_EQ(out, "untouched");
  EXPECT_TRUE(EncodeFrame(env, &out, size));
  EXPECT_EQ(out.size(), std::string("untouched").size() + kFrameHeaderBytes + size);
}

TEST(FrameTest, EncodeRefusesAboveTheDefaultMaximum) {
  const wire::Envelope env = PutEnvelope(1, "key", std::string(kDefaultMaxFrameBytes, 'v'));
  std::string out;
  EXPECT_FALSE(EncodeFrame(env, &out));
  EXPECT_TRUE(out.empty());
}

TEST(FrameTest, LongStreamKeepsBufferBounded) {
  // Many frames fed in odd-sized chunks all come out, and nothing is left behind.
  std::string stream;
  std::vector<wire::Envelope> sent;
  for (int i = 0; i < 500; ++i) {
    sent.push_back(PutEnvelope(i, "key" + std::to_string(i), std::string(i % 37, 'v')));
    stream += Encode(sent.back());
  }
  FrameDecoder dec;
  std::vector<wire::Envelope> got;
  size_t max_buffered = 0;
  for (size_t pos = 0; pos < stream.size(); pos += 97) {
    dec.Feed(stream.substr(pos, 97));
    max_buffered = std::max(max_buffered, dec.buffered());
    auto frames = Drain(&dec);
    got.insert(got.end(), frames.begin(), frames.end());
  }
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) ExpectSame(got[i], sent[i]);
  EXPECT_EQ(dec.buffered(), 0u);
  EXPECT_LT(max_buffered, 97u + 200u);
}

TEST(FrameTest, FramesAfterALargeOneComeOutIntactWhenItsBufferIsGivenBack) {
  // A frame larger than the buffer a decoder keeps, then small frames and the start of
  // another, all in one read: handing the large one out gives its buffer back and keeps the
  // bytes after it, which must decode unchanged.
  const wire::Envelope big = PutEnvelope(1, "big", std::string(300 << 10, 'b'));
  std::vector<wire::Envelope> small;
  std::string stream = Encode(big);
  for (int i = 2; i < 6; ++i) {
    small.push_back(PutEnvelope(static_cast<uint64_t>(i), "k" + std::to_string(i), "v"));
    stream += Encode(small.back());
  }
  const wire::Envelope last = StatusEnvelope(9);
  const std::string last_frame = Encode(last);
  stream += last_frame.substr(0, 7);
  FrameDecoder dec;
  dec.Feed(stream);
  auto got = Drain(&dec);
  ASSERT_EQ(got.size(), 5u);
  ExpectSame(got[0], big);
  for (size_t i = 0; i < small.size(); ++i) ExpectSame(got[i + 1], small[i]);
  EXPECT_EQ(dec.buffered(), 7u);
  dec.Feed(last_frame.substr(7));
  got = Drain(&dec);
  ASSERT_EQ(got.size(), 1u);
  ExpectSame(got[0], last);
  EXPECT_EQ(dec.buffered(), 0u);
}

}  // namespace
}  // namespace chord
