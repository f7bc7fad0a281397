// A wire::Record that a core service keeps from one request to the next and fills anew for
// each, so that the strings of its key, writer and value reuse their buffers instead of being
// allocated and freed per request (the owner's local read of a get, the header of the record
// a write replaces). Core only, single-threaded: a caller takes the record for the length of
// one call (a Use) and keeps no reference past it; no Use may be taken while another is open.
#ifndef CHORD_NODE_CORE_KEPT_RECORD_H_
#define CHORD_NODE_CORE_KEPT_RECORD_H_

#include <cstddef>
#include <string>

#include "protocol/chord.pb.h"

namespace chord {

class KeptRecord {
 public:
  // A value buffer larger than this is released when a Use ends: the record holds at most
  // this much of a value between requests, however large the last value was.
  static constexpr size_t kKeptValueBytes = 4096;

  // The record for one call. It starts cleared (every field unset, unknown fields dropped,
  // its string buffers kept), so that nothing of the record before can show through a store
  // that leaves a field alone.
  class Use {
   public:
    explicit Use(KeptRecord* kept) : record_(&kept->record_) { record_->Clear(); }
    ~Use() {
      if (record_->value().capacity() > kKeptValueBytes) {
        std::string().swap(*record_->mutable_value());
      }
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

    wire::Record& operator*() const { return *record_; }
    wire::Record* get() const { return record_; }

   private:
    wire::Record* record_;
  };

 private:
  wire::Record record_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_KEPT_RECORD_H_
