#include "node/runtime/write_gather.h"

#include <algorithm>
#include <string>
#include <utility>

#include "node/runtime/tcp_connection.h"

namespace chord {

Status WriteGather::Start(uv_loop_t* loop) {
  int rc = prepare_.Init([loop](uv_prepare_t* h) { return uv_prepare_init(loop, h); });
  if (rc == 0) rc = check_.Init([loop](uv_check_t* h) { return uv_check_init(loop, h); });
  if (rc < 0)
    return Status::IoError(std::string("cannot set up write gathering: ") + uv_strerror(rc));
  prepare_.get()->data = this;
  check_.get()->data = this;
  uv_prepare_start(prepare_.get(), [](uv_prepare_t* h) {
    if (h->data != nullptr) static_cast<WriteGather*>(h->data)->FlushAll();
  });
  uv_check_start(check_.get(), [](uv_check_t* h) {
    if (h->data != nullptr) static_cast<WriteGather*>(h->data)->FlushAll();
  });
  uv_unref(reinterpret_cast<uv_handle_t*>(prepare_.get()));
  uv_unref(reinterpret_cast<uv_handle_t*>(check_.get()));
  return Status::Ok();
}

void WriteGather::Add(TcpConnection* conn) {
  if (closed_) return conn->Flush();
  dirty_.push_back(conn);
}

void WriteGather::Close() {
  closed_ = true;
  FlushAll();
  prepare_.Close();
  check_.Close();
}

void WriteGather::Remove(TcpConnection* conn) {
  dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), conn), dirty_.end());
  std::replace(flushing_.begin(), flushing_.end(), conn, static_cast<TcpConnection*>(nullptr));
}

void WriteGather::FlushAll() {
  // A flush may close a connection (a write error), whose owner may write to others: those
  // register again in dirty_, which the loop takes in turn. Connections are only deleted in
  // the loop's close phase, never while this runs.
  for (int round = 0; round < 16 && !dirty_.empty(); ++round) {
    flushing_.swap(dirty_);
    for (TcpConnection* conn : flushing_) {
      if (conn != nullptr) conn->Flush();
    }
    flushing_.clear();
  }
}

}  // namespace chord
