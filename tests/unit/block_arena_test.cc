// BlockArena: blocks keep what is written to them and do not overlap, a freed block serves the
// next block of its size, blocks over the bound come from the heap, and the chunks hold little
// more than the blocks need (the point of the arena).
#include "node/storage/block_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace chord {
namespace {

struct Block {
  uint8_t* p;
  size_t size;
  uint8_t fill;
};

TEST(BlockArenaTest, BlocksKeepTheirBytesAndDoNotOverlap) {
  BlockArena arena;
  std::vector<Block> blocks;
  // Sizes across many classes and past the bound, enough to need several chunks.
  for (size_t i = 0; i < 20'000; ++i) {
    const size_t size = 1 + (i * 37) % 600 + (i % 1000 == 0 ? BlockArena::kMaxBlockBytes : 0);
    auto* p = static_cast<uint8_t*>(arena.Allocate(size));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % BlockArena::kGrain, 0u);
    const auto fill = static_cast<uint8_t>(i * 131 + i / 256);
    std::memset(p, fill, size);
    blocks.push_back(Block{p, size, fill});
  }
  // Free every third block and allocate again: the survivors are untouched.
  for (size_t i = 0; i < blocks.size(); i += 3) arena.Free(blocks[i].p, blocks[i].size);
  for (size_t i = 0; i < blocks.size(); i += 3) {
    blocks[i].p = static_cast<uint8_t*>(arena.Allocate(blocks[i].size));
    blocks[i].fill = static_cast<uint8_t>(~blocks[i].fill);
    std::memset(blocks[i].p, blocks[i].fill, blocks[i].size);
  }
  for (const Block& b : blocks) {
    for (size_t j = 0; j < b.size; ++j) ASSERT_EQ(b.p[j], b.fill);
  }
  for (const Block& b : blocks) arena.Free(b.p, b.size);
}

TEST(BlockArenaTest, AFreedBlockServesTheNextBlockOfItsSize) {
  BlockArena arena;
  void* a = arena.Allocate(135);
  void* b = arena.Allocate(135);
  arena.Free(a, 135);
  EXPECT_EQ(arena.free_bytes(), 136u);
  // 130 rounds to the same 136 bytes; 150 does not and takes fresh space.
  void* c = arena.Allocate(150);
  EXPECT_NE(c, a);
  EXPECT_EQ(arena.Allocate(130), a);
  EXPECT_EQ(arena.free_bytes(), 0u);
  arena.Free(b, 135);
  arena.Free(c, 150);
  arena.Free(a, 130);
  EXPECT_EQ(arena.free_bytes(), 136u + 152u + 136u);
}

TEST(BlockArenaTest, ChunksHoldLittleMoreThanTheBlocks) {
  BlockArena arena;
  constexpr size_t kBlocks = 100'000;
  std::vector<void*> blocks;
  for (size_t i = 0; i < kBlocks; ++i) blocks.push_back(arena.Allocate(135));
  const size_t needed = kBlocks * (136 + BlockArena::kRedzoneBytes);
  EXPECT_GE(arena.chunk_bytes(), needed);
  // At most the part of the last chunk not used yet, and a block's worth per chunk.
  EXPECT_LE(arena.chunk_bytes(), needed + BlockArena::kMaxChunkBytes);
  for (void* b : blocks) arena.Free(b, 135);
  EXPECT_GE(arena.free_bytes(), kBlocks * 136);
  // Freed memory is reused: the same blocks again take no new chunk.
  const size_t chunks = arena.chunk_bytes();
  for (size_t i = 0; i < kBlocks; ++i) blocks[i] = arena.Allocate(135);
  EXPECT_EQ(arena.chunk_bytes(), chunks);
  for (void* b : blocks) arena.Free(b, 135);
}

TEST(BlockArenaTest, BlocksUpToTheBoundComeFromChunksAndLargerOnesFromTheHeap) {
  BlockArena arena;
  auto* at_bound = static_cast<uint8_t*>(arena.Allocate(BlockArena::kMaxBlockBytes));
  const size_t chunks = arena.chunk_bytes();
  EXPECT_GE(chunks, BlockArena::kMaxBlockBytes);
  auto* past = static_cast<uint8_t*>(arena.Allocate(BlockArena::kMaxBlockBytes + 1));
  EXPECT_EQ(arena.chunk_bytes(), chunks);  // no chunk for it
  std::memset(at_bound, 1, BlockArena::kMaxBlockBytes);
  std::memset(past, 2, BlockArena::kMaxBlockBytes + 1);
  arena.Free(past, BlockArena::kMaxBlockBytes + 1);
  EXPECT_EQ(arena.free_bytes(), 0u);
  arena.Free(at_bound, BlockArena::kMaxBlockBytes);
  EXPECT_EQ(arena.free_bytes(), BlockArena::kMaxBlockBytes);
  EXPECT_EQ(arena.Allocate(BlockArena::kMaxBlockBytes), at_bound);
}

#ifdef CHORD_ARENA_ASAN
TEST(BlockArenaDeathTest, AFreeOfAFreeBlockIsReported) {
  BlockArena arena;
  void* block = arena.Allocate(100);
  arena.Free(block, 100);
  EXPECT_DEATH(arena.Free(block, 100), "freed twice");
}
#endif

}  // namespace
}  // namespace chord
