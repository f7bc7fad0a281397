#include "node/storage/block_arena.h"

#include <sanitizer/asan_interface.h>  // its poisoning macros do nothing without ASan

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace chord {

BlockArena::~BlockArena() {
  // Memory goes back to the heap as it was handed out: unpoisoned.
  for (const Chunk& chunk : chunks_) ASAN_UNPOISON_MEMORY_REGION(chunk.bytes.get(), chunk.size);
}

void* BlockArena::Allocate(size_t size) {
  if (size > kMaxBlockBytes) return ::operator new(size);
  const size_t size_class = SizeClass(size);
  uint8_t* block = free_[size_class];
  if (block != nullptr) {
    ASAN_UNPOISON_MEMORY_REGION(block, sizeof(uint8_t*));
    std::memcpy(&free_[size_class], block, sizeof(uint8_t*));
    free_bytes_ -= size_class * kGrain;
  } else {
    const size_t footprint = Footprint(size_class);
    if (left_ < footprint) NewChunk(footprint);
    block = next_;
    next_ += footprint;
    left_ -= footprint;
  }
  // The slack of the rounding and the redzone stay poisoned.
  ASAN_UNPOISON_MEMORY_REGION(block, size);
  return block;
}

void BlockArena::Free(void* block, size_t size) {
  if (size > kMaxBlockBytes) {
    ::operator delete(block);
    return;
  }
#ifdef CHORD_ARENA_ASAN
  // A live block's first byte is addressable; a free block's is not.
  if (__asan_address_is_poisoned(block)) {
    std::fprintf(stderr, "BlockArena: block %p freed twice (or never allocated)\n", block);
    std::abort();
  }
#endif
  PushFree(static_cast<uint8_t*>(block), SizeClass(size));
}

void BlockArena::PushFree(uint8_t* block, size_t size_class) {
  const size_t bytes = size_class * kGrain;
  ASAN_UNPOISON_MEMORY_REGION(block, sizeof(uint8_t*));
  std::memcpy(block, &free_[size_class], sizeof(uint8_t*));
  free_[size_class] = block;
  free_bytes_ += bytes;
  ASAN_POISON_MEMORY_REGION(block, bytes);
}

void BlockArena::NewChunk(size_t footprint) {
  const size_t size = std::max(next_chunk_bytes_, footprint);
  auto bytes = std::make_unique_for_overwrite<uint8_t[]>(size);
  chunks_.reserve(chunks_.size() + 1);
  // What is left of the last chunk is whole grains (every footprint is); it becomes a free
  // block of its own class if it holds one with its redzone.
  if (left_ >= kGrain + kRedzoneBytes) PushFree(next_, (left_ - kRedzoneBytes) / kGrain);
  next_ = bytes.get();
  left_ = size;
  ASAN_POISON_MEMORY_REGION(next_, size);
  chunks_.push_back(Chunk{std::move(bytes), size});
  next_chunk_bytes_ = std::min(next_chunk_bytes_ * 2, kMaxChunkBytes);
  chunk_bytes_ += size;
}

}  // namespace chord
