// ReadBacklog: the connections that hold complete frames they have not delivered in this turn of
// the event loop. A TcpConnection with a backlog delivers at most kMaxFramesPerTurn frames in one
// turn (libuv may read a connection several times in one), stops reading and registers here (a
// check handle counts the turns); while any connection is held, an idle handle keeps the loop from
// waiting for I/O, and at each turn every held connection delivers its next frames (and reads again
// once it has none left). So one peer's flood of pipelined requests takes its turn with the other
// connections instead of holding the loop until it is all served. The idle handle does not keep the
// loop alive. Owned by the runtime; the loop thread only.
#ifndef CHORD_NODE_RUNTIME_READ_BACKLOG_H_
#define CHORD_NODE_RUNTIME_READ_BACKLOG_H_

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "node/runtime/uv_handle.h"
#include "protocol/base/status.h"

namespace chord {

class TcpConnection;

class ReadBacklog {
 public:
  // Frames a connection delivers in one turn before the others' turn.
  static constexpr size_t kMaxFramesPerTurn = 128;
  // Bytes of complete frames all held connections keep for later turns, at most (each holds
  // at most what it read in one turn): past it a connection is not held, and delivers its
  // frames at once, as without a backlog. Unfinished frames count in the node's input budget.
  static constexpr size_t kMaxHeldBytes = size_t{16} << 20;

  ReadBacklog() = default;
  ReadBacklog(const ReadBacklog&) = delete;
  ReadBacklog& operator=(const ReadBacklog&) = delete;

  // Sets up the handles on `loop` (the idle one started only while a connection is held).
  [[nodiscard]] Status Start(uv_loop_t* loop);
  // Stops holding connections: Hold refuses from now on.
  void Close();
  // The loop's turn: it changes once per turn of the loop.
  uint64_t turn() const { return turn_; }

  // `conn` holds `bytes` of complete frames for the next turn. False (not held) after Close or
  // past kMaxHeldBytes: the connection then delivers them at once.
  bool Hold(TcpConnection* conn, size_t bytes);
  // The bytes of complete frames the held connections keep.
  size_t held_bytes() const { return held_bytes_; }
  // `conn` is closing: it must not be resumed any more.
  void Remove(TcpConnection* conn);

 private:
  void ResumeAll();

  UvHandle<uv_idle_t> idle_;
  UvHandle<uv_check_t> turns_;
  uint64_t turn_ = 0;
  struct Held {
    TcpConnection* conn = nullptr;
    size_t bytes = 0;
  };
  std::vector<Held> held_;
  std::vector<Held> resuming_;
  size_t held_bytes_ = 0;  // of held_, and of resuming_ not yet resumed
  bool closed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_READ_BACKLOG_H_
