// WriteGather: the connections that have frames waiting to be written in this turn of the
// event loop. A TcpConnection with a gather appends each frame to its own buffer and registers
// here; the gather flushes every registered connection once, with one write each, after the
// loop's I/O callbacks (a uv_check handle) and before the loop waits for I/O again (a
// uv_prepare handle). So the replies to a burst of pipelined requests, or the replication
// messages of several writes to one replica, leave in one system call. Neither handle keeps
// the loop alive. Owned by the runtime; the loop thread only.
#ifndef CHORD_NODE_RUNTIME_WRITE_GATHER_H_
#define CHORD_NODE_RUNTIME_WRITE_GATHER_H_

#include <uv.h>

#include <vector>

#include "node/runtime/uv_handle.h"
#include "protocol/base/status.h"

namespace chord {

class TcpConnection;

class WriteGather {
 public:
  WriteGather() = default;
  WriteGather(const WriteGather&) = delete;
  WriteGather& operator=(const WriteGather&) = delete;

  // Starts the two handles on `loop`.
  [[nodiscard]] Status Start(uv_loop_t* loop);
  // Stops flushing; connections still registered are flushed first.
  void Close();

  // `conn` has bytes to write in this turn (called once per turn by the connection).
  // After Close the connection is flushed at once.
  void Add(TcpConnection* conn);
  // `conn` is closing: it must not be flushed any more.
  void Remove(TcpConnection* conn);
  // Flushes every registered connection, including those registered while flushing.
  void FlushAll();

 private:
  UvHandle<uv_prepare_t> prepare_;
  UvHandle<uv_check_t> check_;
  std::vector<TcpConnection*> dirty_;
  std::vector<TcpConnection*> flushing_;
  bool closed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_WRITE_GATHER_H_
