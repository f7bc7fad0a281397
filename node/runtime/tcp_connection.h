// TcpConnection: one TCP connection carrying length-prefixed Envelope frames, either accepted
// by the listener or dialed to a peer, in the clear or inside TLS (a TlsSession: mutual TLS
// 1.3; a dialed connection must find the member it dialed behind the certificate). Incoming
// bytes go through a FrameDecoder and every decoded envelope is handed to the frame callback;
// outgoing frames are queued until the connection is up; then, with a WriteGather, they are
// appended to one buffer that the gather flushes once per loop turn (without one, each is
// written at once). A flush writes what the socket takes at once (uv_try_write) and hands only
// the rest to uv_write, its bytes kept alive until libuv is done with them. A malformed or
// oversized frame, a socket or TLS error, end of stream (unless the owner takes it: see
// EndOfInputFn), more than `max_queued_bytes` waiting to be written, or a node-wide budget of
// buffered input or queued output running out closes the connection.
//
// Lifetime: created on the heap by Accept/Connect and deleted by itself in its uv close
// callback after Close(); the owner keeps a raw pointer and forgets it when the close
// callback fires (synchronously inside Close()). The object therefore stays valid until the
// current loop callback returns. Loop thread only.
#ifndef CHORD_NODE_RUNTIME_TCP_CONNECTION_H_
#define CHORD_NODE_RUNTIME_TCP_CONNECTION_H_

#include <netinet/in.h>
#include <uv.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "node/runtime/byte_budget.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/frame.h"
#include "protocol/tls_session.h"

namespace chord {

class ReadBacklog;
class WriteGather;

class TcpConnection {
 public:
  struct Options {
    uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
    uint32_t client_max_frame_bytes = kDefaultMaxFrameBytes;  // once the peer is a client
    size_t max_queued_bytes = size_t{64} << 20;
    const TlsContext* tls = nullptr;      // null: in the clear
    ByteBudget* input_budget = nullptr;   // node-wide: input of frames not yet complete
    ByteBudget* output_budget = nullptr;  // node-wide: output not yet written
    // The budgets of connections whose peer proved itself a member (TLS): clients that fill
    // theirs cannot close the ring's own connections. Null: members share the ones above.
    ByteBudget* member_input_budget = nullptr;
    ByteBudget* member_output_budget = nullptr;
    WriteGather* gather = nullptr;  // null: every frame is written at once
    // Null: every complete frame a read brings is delivered at once (ReadBacklog).
    ReadBacklog* backlog = nullptr;
  };
  // Called once the TLS handshake has told who the peer is (never in the clear).
  using EstablishedFn = std::function<void(TcpConnection* conn)>;
  // Called for every decoded frame while the connection is open; the frame is the callee's to
  // move from.
  using FrameFn = std::function<void(TcpConnection* conn, wire::Envelope&& envelope)>;
  // Called once, from Close(). `why` is OK for an orderly close (local Close, CloseWhenWritten
  // or end of stream), InvalidArgument for a protocol violation, Aborted for a peer that does not
  // read and IoError for socket errors.
  using CloseFn = std::function<void(TcpConnection* conn, const Status& why)>;
  // Called once when the peer has shut down its sending side between frames (end of stream,
  // or a TLS close_notify, with no partial frame), if set: the connection stops reading but stays
  // open for what is still to be written, and the callee decides when to close (CloseWhenWritten).
  // Unset, end of stream closes the connection.
  using EndOfInputFn = std::function<void(TcpConnection* conn)>;

  // Accepts a pending connection from `server`. Returns nullptr (and cleans up) on failure,
  // with the reason in *error.
  static TcpConnection* Accept(uv_stream_t* server, uint64_t id, Options options,
                               std::string* error);
  // Starts connecting to `addr`; `peer` names it in logs. Frames written before the
  // connection is established are queued. Returns nullptr (and cleans up) if the attempt
  // could not even be started, with the reason in *error; later failures close the
  // connection through the close callback.
  // With TLS the peer's certificate must name `peer` as a member.
  static TcpConnection* Connect(uv_loop_t* loop, const sockaddr_in& addr, std::string peer,
                                uint64_t id, Options options, std::string* error);

  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  // Set once, right after creation.
  void SetCallbacks(FrameFn on_frame, CloseFn on_close);
  void SetEstablishedCallback(EstablishedFn on_established) {
    on_established_ = std::move(on_established);
  }
  void SetEndOfInputCallback(EndOfInputFn on_end_of_input) {
    on_end_of_input_ = std::move(on_end_of_input);
  }

  // Queues one encoded frame. Returns false if the connection is closing, or if the frame
  // would take the write queue past max_queued_bytes (the connection is then closed).
  bool Write(std::string frame);
  // Queues `envelope` as one frame, like Write(EncodeFrame(envelope)) but, when the connection
  // gathers, encoded straight into this turn's gathered bytes (no string per frame). A frame
  // larger than `max_frame_bytes` is not queued: false with *too_large set.
  bool WriteEnvelope(const wire::Envelope& envelope, uint32_t max_frame_bytes, bool* too_large);
  // Closes the connection (idempotent). Queued writes are dropped; the close callback runs
  // before Close() returns; the object is deleted on a later loop iteration.
  void Close(const Status& why = Status::Ok());
  // Closes once everything queued so far has been handed to the socket (at once if nothing
  // is); what is written in the meantime goes out with it.
  void CloseWhenWritten();
  // Closes with a reset: what the kernel still holds to send is discarded, not delivered
  // after we have given up on it. Otherwise like Close.
  void Abort(const Status& why);

  // Delivers the next frames held back for this turn (the ReadBacklog calls it), and reads
  // again once none is left.
  void DeliverHeldBack();
  // Writes the frames gathered in this turn (the WriteGather calls it).
  void Flush();

  uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }
  bool closing() const { return closing_; }
  bool connected() const { return connected_; }
  size_t queued_bytes() const {
    return queued_bytes_ + pending_bytes_ + gathered_.size() + (tls_ ? tls_->waiting_bytes() : 0);
  }
  // Loop time (ms) of the last byte read.
  uint64_t last_read_ms() const { return last_read_ms_; }
  // Loop time of the last complete frame received (or of the connection's start), and since
  // when a frame has been arriving without completing (0: none is).
  uint64_t last_frame_ms() const { return last_frame_ms_; }
  uint64_t partial_since_ms() const { return partial_since_ms_; }
  // Who the peer's certificate says it is; null in the clear or before the handshake is done.
  const PeerIdentity* peer_identity() const {
    return tls_ && tls_->established() ? &tls_->peer() : nullptr;
  }

 private:
  struct WriteRequest;
  struct ConnectRequest;

  // Closes if CloseWhenWritten asked for it and nothing is left to write.
  void CloseIfWritten();
  // The peer sends nothing more (end of stream, or a TLS close_notify): see EndOfInputFn.
  void EndOfInput();

  TcpConnection(uv_loop_t* loop, uint64_t id, Options options);
  ~TcpConnection() = default;

  // Closes the handle without running callbacks; for connections that never got out.
  void Discard();
  bool StartReading(std::string* error);
  // Writes bytes as they go on the wire (ciphertext with TLS).
  void StartWrite(std::string_view data);
  // Stops taking part in the gather (closing).
  void LeaveGather();
  // Leaves the read backlog, if held there (closing).
  void LeaveBacklog();
  // Closing: writes what the socket takes of the gathered frames now, without a request.
  void TryWriteNow();
  // Sends one frame on a connected connection (through TLS when on).
  void Send(std::string frame);
  // Closes the connection because `adding` more bytes would take its queue past
  // max_queued_bytes; false when they fit.
  bool Overfull(size_t adding);
  // After frames were appended to gathered_: flushes at kMaxGatheredBytes, else makes sure
  // the WriteGather flushes this connection at the end of the turn.
  void Gathered();
  // Feeds plaintext to the decoder and hands out the complete frames.
  void Deliver(std::string_view plain);
  // The TLS handshake has just finished: check who the peer is.
  void OnEstablished();
  // Gives back every byte this connection holds of the node-wide budgets.
  void ReleaseBudgets();
  // Moves what this connection holds to the members' budgets.
  void UseMemberBudgets();

  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void OnWrite(uv_write_t* req, int status);
  static void OnConnect(uv_connect_t* req, int status);
  static void OnClosed(uv_handle_t* handle);
  void HandleRead(ssize_t nread, const uv_buf_t* buf);
  void HandleConnect(int status);

  uv_loop_t* loop_;
  uv_tcp_t tcp_;
  const uint64_t id_;
  const Options options_;
  std::string peer_;
  FrameDecoder decoder_;
  FrameFn on_frame_;
  CloseFn on_close_;
  EstablishedFn on_established_;
  EndOfInputFn on_end_of_input_;
  ByteBudget* input_budget_;  // options_'s, or the members' once the peer proved a member
  ByteBudget* output_budget_;
  std::unique_ptr<TlsSession> tls_;
  std::deque<std::string> pending_;  // frames written before the connection was up
  std::string gathered_;             // frames of this turn, not yet flushed (in the clear)
  bool in_gather_ = false;           // registered with options_.gather for this turn
  bool held_back_ = false;           // not reading: held in options_.backlog with frames
  uint64_t frames_turn_ = 0;         // the backlog's turn frames_in_turn_ counts in
  size_t frames_in_turn_ = 0;        // frames delivered in that turn
  size_t pending_bytes_ = 0;         // their size
  size_t queued_bytes_ = 0;          // bytes handed to uv_write, not yet written
  size_t input_charged_ = 0;         // of options_.input_budget, for the decoder's buffer
  uint64_t last_read_ms_ = 0;
  uint64_t last_frame_ms_ = 0;
  uint64_t partial_since_ms_ = 0;
  bool connected_ = false;
  bool dialed_ = false;
  bool closing_ = false;
  bool close_when_written_ = false;  // CloseWhenWritten: close once queued_bytes() is 0
  bool input_ended_ = false;         // the peer sends nothing more
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_TCP_CONNECTION_H_
