// BlockArena: hands out blocks of exact sizes (rounded up to 8 bytes) carved from large
// chunks, and keeps each freed block on a free list of its size for the next block of that
// size. It exists for MemoryStore's record blocks: a general allocator rounds a block up to
// its size class (jemalloc's classes are a quarter apart, so a 135-byte record takes 160
// bytes), which for millions of small records is a tenth of the memory. Blocks larger than
// kMaxBlockBytes come from operator new.
//
// Memory on the free lists is kept for blocks of the same size class and is not returned to
// the heap until the arena is destroyed: a store whose records change size or are erased for
// good holds on to it (free_bytes() tells how much). Blocks over kMaxBlockBytes are the heap's.
//
// Under AddressSanitizer each block is followed by a poisoned grain and the unused parts of
// chunks and the free blocks are poisoned, so a read or write past a block, a use of a freed
// block (until it is handed out again: there is no quarantine) and a double Free are reported.
// Not thread-safe: one owner's thread.
#ifndef CHORD_NODE_STORAGE_BLOCK_ARENA_H_
#define CHORD_NODE_STORAGE_BLOCK_ARENA_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define CHORD_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHORD_ARENA_ASAN 1
#endif
#endif

namespace chord {

class BlockArena {
 public:
  static constexpr size_t kGrain = 8;
  static constexpr size_t kMaxBlockBytes = 4096;
  // Chunks start at kFirstChunkBytes (a store of a few records stays small: the simulator has
  // hundreds) and double up to kMaxChunkBytes.
  static constexpr size_t kFirstChunkBytes = 4096;
  static constexpr size_t kMaxChunkBytes = size_t{1} << 20;
  // The poisoned grain after each block under AddressSanitizer; none otherwise.
#ifdef CHORD_ARENA_ASAN
  static constexpr size_t kRedzoneBytes = kGrain;
#else
  static constexpr size_t kRedzoneBytes = 0;
#endif

  BlockArena() = default;
  ~BlockArena();
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;

  // A block of at least `size` bytes (size > 0), 8-byte aligned.
  void* Allocate(size_t size);
  // Gives back a block from Allocate; `size` must be the size it was allocated with.
  void Free(void* block, size_t size);

  // Bytes taken from the heap as chunks, and the part of them on the free lists (blocks'
  // rounded sizes, redzones not counted).
  size_t chunk_bytes() const { return chunk_bytes_; }
  size_t free_bytes() const { return free_bytes_; }

 private:
  // A size of 0 takes the smallest class.
  static size_t SizeClass(size_t size) { return (std::max<size_t>(size, 1) + kGrain - 1) / kGrain; }
  // What a block of `size_class` takes of a chunk.
  static size_t Footprint(size_t size_class) { return size_class * kGrain + kRedzoneBytes; }
  // Starts a new chunk with room for `bytes`; what was left of the last one goes on its list.
  void NewChunk(size_t bytes);
  void PushFree(uint8_t* block, size_t size_class);

  struct Chunk {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size;
  };

  std::vector<Chunk> chunks_;
  uint8_t* next_ = nullptr;  // the unused end of the current chunk
  size_t left_ = 0;
  size_t next_chunk_bytes_ = kFirstChunkBytes;
  size_t chunk_bytes_ = 0;
  size_t free_bytes_ = 0;
  // Per size class (blocks of class * kGrain bytes), the first free block; each free block
  // holds the address of the next in its first 8 bytes. Class 0 is unused.
  std::array<uint8_t*, kMaxBlockBytes / kGrain + 1> free_{};
};

}  // namespace chord

#endif  // CHORD_NODE_STORAGE_BLOCK_ARENA_H_
