#include "node/storage/block_arena.h"

#include <algorithm>
#include <cstring>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define CHORD_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHORD_ARENA_ASAN 1
#endif
#endif

#ifdef CHORD_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace chord {
namespace {

void Poison(const void* p, size_t n) {
#ifdef CHORD_ARENA_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p;
  (void)n;
#endif
}

void Unpoison(const void* p, size_t n) {
#ifdef CHORD_ARENA_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
  (void)p;
  (void)n;
#endif
}

}  // namespace

BlockArena::~BlockArena() {
  // Memory goes back to the heap as it was handed out: unpoisoned.
  for (const Chunk& chunk : chunks_) Unpoison(chunk.bytes.get(), chunk.size);
}

void* BlockArena::Allocate(size_t size) {
  if (size > kMaxBlockBytes) return ::operator new(size);
  const size_t size_class = SizeClass(std::max<size_t>(size, 1));
  const size_t bytes = size_class * kGrain;
  uint8_t* block = free_[size_class];
  if (block != nullptr) {
    Unpoison(block, sizeof(uint8_t*));
    std::memcpy(&free_[size_class], block, sizeof(uint8_t*));
    free_bytes_ -= bytes;
  } else {
    if (left_ < bytes) NewChunk(bytes);
    block = next_;
    next_ += bytes;
    left_ -= bytes;
  }
  Unpoison(block, size);
  Poison(block + size, bytes - size);
  return block;
}

void BlockArena::Free(void* block, size_t size) {
  if (size > kMaxBlockBytes) {
    ::operator delete(block);
    return;
  }
  PushFree(static_cast<uint8_t*>(block), SizeClass(std::max<size_t>(size, 1)));
}

void BlockArena::PushFree(uint8_t* block, size_t size_class) {
  const size_t bytes = size_class * kGrain;
  Unpoison(block, bytes);
  std::memcpy(block, &free_[size_class], sizeof(uint8_t*));
  free_[size_class] = block;
  free_bytes_ += bytes;
  Poison(block, bytes);
}

void BlockArena::NewChunk(size_t bytes) {
  // Whole grains are left over (every block is), so the rest fits a class of its own.
  if (left_ >= kGrain) PushFree(next_, left_ / kGrain);
  const size_t chunk = std::max(next_chunk_bytes_, bytes);
  next_chunk_bytes_ = std::min(next_chunk_bytes_ * 2, kMaxChunkBytes);
  chunks_.push_back(Chunk{std::make_unique_for_overwrite<uint8_t[]>(chunk), chunk});
  next_ = chunks_.back().bytes.get();
  left_ = chunk;
  chunk_bytes_ += chunk;
  Poison(next_, chunk);
}

}  // namespace chord
