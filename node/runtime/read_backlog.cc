#include "node/runtime/read_backlog.h"

#include <algorithm>
#include <string>
#include <utility>

#include "node/runtime/tcp_connection.h"

namespace chord {

Status ReadBacklog::Start(uv_loop_t* loop) {
  int rc = idle_.Init([loop](uv_idle_t* h) { return uv_idle_init(loop, h); });
  if (rc == 0) rc = turns_.Init([loop](uv_check_t* h) { return uv_check_init(loop, h); });
  if (rc < 0) {
    return Status::IoError(std::string("cannot set up the read backlog: ") + uv_strerror(rc));
  }
  idle_.get()->data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(idle_.get()));
  turns_.get()->data = this;
  uv_check_start(turns_.get(), [](uv_check_t* h) {
    if (h->data != nullptr) ++static_cast<ReadBacklog*>(h->data)->turn_;
  });
  uv_unref(reinterpret_cast<uv_handle_t*>(turns_.get()));
  return Status::Ok();
}

void ReadBacklog::Close() {
  closed_ = true;
  held_.clear();
  held_bytes_ = 0;
  std::fill(resuming_.begin(), resuming_.end(), Held{});
  idle_.Close();
  turns_.Close();
}

bool ReadBacklog::Hold(TcpConnection* conn, size_t bytes) {
  if (closed_ || idle_.get() == nullptr || bytes > kMaxHeldBytes - held_bytes_) return false;
  if (held_.empty()) {
    uv_idle_start(idle_.get(), [](uv_idle_t* h) {
      if (h->data != nullptr) static_cast<ReadBacklog*>(h->data)->ResumeAll();
    });
  }
  held_.push_back({conn, bytes});
  held_bytes_ += bytes;
  return true;
}

void ReadBacklog::Remove(TcpConnection* conn) {
  const auto gone = std::remove_if(held_.begin(), held_.end(), [&](const Held& h) {
    if (h.conn != conn) return false;
    held_bytes_ -= h.bytes;
    return true;
  });
  held_.erase(gone, held_.end());
  for (Held& h : resuming_) {
    if (h.conn != conn) continue;
    held_bytes_ -= h.bytes;
    h = Held{};
  }
}

void ReadBacklog::ResumeAll() {
  // A connection resumed may be held again (it still has more than a turn's frames): it
  // registers in held_ for the next turn. Connections are only deleted in the loop's close
  // phase, never while this runs; one that closes meanwhile is removed from resuming_.
  // What each held is counted until it resumes, so that those resumed first and held again
  // cannot add to it past the bound.
  resuming_.swap(held_);
  for (size_t i = 0; i < resuming_.size(); ++i) {
    TcpConnection* conn = std::exchange(resuming_[i].conn, nullptr);
    held_bytes_ -= std::exchange(resuming_[i].bytes, 0);
    if (conn != nullptr) conn->DeliverHeldBack();
  }
  resuming_.clear();
  if (held_.empty() && idle_.get() != nullptr) uv_idle_stop(idle_.get());
}

}  // namespace chord
