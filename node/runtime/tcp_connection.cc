#include "node/runtime/tcp_connection.h"

#include <memory>
#include <string_view>
#include <utility>

#include "node/runtime/net_address.h"
#include "node/runtime/read_backlog.h"
#include "node/runtime/write_gather.h"

namespace chord {

namespace {

// Size of the buffer one read lands in. Reads are handled synchronously, so one buffer per
// thread serves every connection.
constexpr size_t kReadBufferBytes = 64 << 10;
// A connection's gathered frames are written at once past this size, so that one loop turn
// cannot pile up more per connection; and a buffer larger than kKeptGatherCapacity is not
// kept for the next turn (an idle connection would hold it).
constexpr size_t kMaxGatheredBytes = 256 << 10;
constexpr size_t kKeptGatherCapacity = 64 << 10;

std::string UvError(std::string_view what, int rc) {
  return std::string(what) + ": " + uv_strerror(rc);
}

}  // namespace

struct TcpConnection::WriteRequest {
  uv_write_t req;
  TcpConnection* conn;
  std::string data;  // kept alive until the write callback
};

struct TcpConnection::ConnectRequest {
  uv_connect_t req;
  TcpConnection* conn;
};

TcpConnection::TcpConnection(uv_loop_t* loop, uint64_t id, Options options)
    : loop_(loop),
      tcp_{},
      id_(id),
      options_(options),
      decoder_(options.max_frame_bytes),
      input_budget_(options.input_budget),
      output_budget_(options.output_budget) {
  tcp_.data = this;
  last_read_ms_ = last_frame_ms_ = uv_now(loop);
}

TcpConnection* TcpConnection::Accept(uv_stream_t* server, uint64_t id, Options options,
                                     std::string* error) {
  auto* conn = new TcpConnection(server->loop, id, options);
  int rc = uv_tcp_init(server->loop, &conn->tcp_);
  if (rc < 0) {
    delete conn;  // never registered with the loop
    *error = UvError("cannot create a socket", rc);
    return nullptr;
  }
  rc = uv_accept(server, reinterpret_cast<uv_stream_t*>(&conn->tcp_));
  if (rc < 0) {
    *error = UvError("cannot accept a connection", rc);
    conn->Discard();
    return nullptr;
  }
  sockaddr_storage peer{};
  int len = sizeof(peer);
  if (uv_tcp_getpeername(&conn->tcp_, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
    conn->peer_ = FormatSocketAddress(peer);
  } else {
    conn->peer_ = "?";
  }
  conn->connected_ = true;
  uv_tcp_nodelay(&conn->tcp_, 1);
  if (options.tls != nullptr) conn->tls_ = std::make_unique<TlsSession>(*options.tls, true);
  if (!conn->StartReading(error)) {
    conn->Discard();
    return nullptr;
  }
  return conn;
}

TcpConnection* TcpConnection::Connect(uv_loop_t* loop, const sockaddr_in& addr, std::string peer,
                                      uint64_t id, Options options, std::string* error) {
  auto* conn = new TcpConnection(loop, id, options);
  conn->peer_ = std::move(peer);
  if (options.tls != nullptr) conn->tls_ = std::make_unique<TlsSession>(*options.tls, false);
  conn->dialed_ = true;
  int rc = uv_tcp_init(loop, &conn->tcp_);
  if (rc < 0) {
    delete conn;
    *error = UvError("cannot create a socket", rc);
    return nullptr;
  }
  auto* req = new ConnectRequest{{}, conn};
  req->req.data = req;
  rc = uv_tcp_connect(&req->req, &conn->tcp_, reinterpret_cast<const sockaddr*>(&addr),
                      &TcpConnection::OnConnect);
  if (rc < 0) {
    delete req;
    *error = UvError("cannot connect", rc);
    conn->Discard();
    return nullptr;
  }
  return conn;
}

void TcpConnection::SetCallbacks(FrameFn on_frame, CloseFn on_close) {
  on_frame_ = std::move(on_frame);
  on_close_ = std::move(on_close);
}

bool TcpConnection::Overfull(size_t adding) {
  if (queued_bytes() + adding <= options_.max_queued_bytes) return false;
  Close(Status::Aborted("more than " + std::to_string(options_.max_queued_bytes) +
                        " bytes are waiting to be written; the peer is not reading"));
  return true;
}

bool TcpConnection::WriteEnvelope(const wire::Envelope& envelope, uint32_t max_frame_bytes,
                                  bool* too_large) {
  *too_large = false;
  if (closing_) return false;
  if (!connected_ || options_.gather == nullptr) {
    std::string frame;
    if (!EncodeFrame(envelope, &frame, max_frame_bytes)) {
      *too_large = true;
      return false;
    }
    return Write(std::move(frame));
  }
  // Encoded in place first, then checked against the queue bound (as large a buffer for a
  // moment as the frame string Write takes would be).
  const size_t before = gathered_.size();
  if (!EncodeFrame(envelope, &gathered_, max_frame_bytes)) {
    *too_large = true;
    return false;
  }
  if (queued_bytes() > options_.max_queued_bytes) {
    // As Write: the frame that does not fit is not sent, and the connection closes.
    const size_t frame_bytes = gathered_.size() - before;
    gathered_.resize(before);
    return !Overfull(frame_bytes);
  }
  Gathered();
  return !closing_;
}

bool TcpConnection::Write(std::string frame) {
  if (closing_) return false;
  if (Overfull(frame.size())) return false;
  if (!connected_) {
    pending_bytes_ += frame.size();
    pending_.push_back(std::move(frame));
    return true;
  }
  Send(std::move(frame));
  return !closing_;
}

void TcpConnection::Send(std::string frame) {
  if (options_.gather != nullptr) {
    if (gathered_.empty() && gathered_.capacity() < frame.size()) {
      gathered_ = std::move(frame);
    } else {
      gathered_.append(frame);
    }
    return Gathered();
  }
  if (!tls_) return StartWrite(frame);
  std::string cipher;
  Status s = tls_->Send(frame, &cipher);
  if (!s.ok()) return Close(s);
  if (!cipher.empty()) StartWrite(cipher);
}

void TcpConnection::Gathered() {
  if (gathered_.size() >= kMaxGatheredBytes) return Flush();  // no unbounded buffer per turn
  if (!in_gather_) {
    in_gather_ = true;
    options_.gather->Add(this);
  }
}

void TcpConnection::CloseWhenWritten() {
  close_when_written_ = true;
  CloseIfWritten();
}

void TcpConnection::CloseIfWritten() {
  if (close_when_written_ && !closing_ && !in_gather_ && queued_bytes() == 0) Close(Status::Ok());
}

void TcpConnection::Flush() {
  in_gather_ = false;
  if (closing_ || gathered_.empty()) return CloseIfWritten();
  // Taken out first: a failing write closes the connection, and Close flushes what is left.
  std::string data = std::move(gathered_);
  gathered_.clear();
  if (!tls_) {
    StartWrite(data);
  } else {
    std::string cipher;
    Status s = tls_->Send(data, &cipher);
    if (!s.ok()) return Close(s);
    if (!cipher.empty()) StartWrite(cipher);
  }
  if (!closing_ && gathered_.empty() && data.capacity() <= kKeptGatherCapacity) {
    data.clear();
    gathered_ = std::move(data);  // its capacity serves the next turn
  }
  CloseIfWritten();
}

void TcpConnection::TryWriteNow() {
  std::string cipher;
  std::string_view data = gathered_;
  if (tls_) {
    if (!tls_->Send(gathered_, &cipher).ok()) return;
    data = cipher;
  }
  if (data.empty()) return;
  const uv_buf_t buf =
      uv_buf_init(const_cast<char*>(data.data()), static_cast<unsigned>(data.size()));
  (void)uv_try_write(reinterpret_cast<uv_stream_t*>(&tcp_), &buf, 1);  // best effort
}

void TcpConnection::LeaveGather() {
  if (options_.gather != nullptr) options_.gather->Remove(this);
  in_gather_ = false;
}

void TcpConnection::UseMemberBudgets() {
  if (options_.member_input_budget == nullptr || options_.member_output_budget == nullptr) return;
  if (input_budget_ != nullptr) input_budget_->Release(input_charged_);
  if (output_budget_ != nullptr) output_budget_->Release(queued_bytes_);
  input_budget_ = options_.member_input_budget;
  output_budget_ = options_.member_output_budget;
  input_budget_->Take(input_charged_);
  output_budget_->Take(queued_bytes_);
}

void TcpConnection::ReleaseBudgets() {
  if (output_budget_ != nullptr) output_budget_->Release(queued_bytes_);
  queued_bytes_ = 0;
  if (input_budget_ != nullptr) input_budget_->Release(input_charged_);
  input_charged_ = 0;
}

void TcpConnection::Close(const Status& why) {
  if (closing_) return;
  LeaveGather();
  LeaveBacklog();
  closing_ = true;
  // What this turn gathered goes out as it would have without gathering: as far as the socket
  // takes it at once (a reply followed by a close, say); the rest is dropped with the socket.
  if (connected_ && !gathered_.empty()) TryWriteNow();
  pending_.clear();
  gathered_.clear();
  ReleaseBudgets();
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &TcpConnection::OnClosed);
  // on_frame_ is left in place (it may be the caller) but is never called again.
  if (on_close_) on_close_(this, why);
}

void TcpConnection::Abort(const Status& why) {
  if (closing_) return;
  if (connected_) {
    LeaveGather();
    LeaveBacklog();
    closing_ = true;
    pending_.clear();
    gathered_.clear();
    ReleaseBudgets();
    // A reset instead of a FIN: unsent bytes go with it. Falls back to a plain close where
    // the socket cannot be reset (it is already closing).
    if (uv_tcp_close_reset(&tcp_, &TcpConnection::OnClosed) != 0) {
      uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &TcpConnection::OnClosed);
    }
    if (on_close_) on_close_(this, why);
    return;
  }
  Close(why);
}

void TcpConnection::Discard() {
  LeaveGather();
  LeaveBacklog();
  closing_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &TcpConnection::OnClosed);
}

bool TcpConnection::StartReading(std::string* error) {
  const int rc = uv_read_start(reinterpret_cast<uv_stream_t*>(&tcp_), &TcpConnection::OnAlloc,
                               &TcpConnection::OnRead);
  if (rc < 0) {
    *error = UvError("cannot read from the connection", rc);
    return false;
  }
  return true;
}

void TcpConnection::StartWrite(std::string_view data) {
  if (queued_bytes_ == 0) {
    // Nothing of ours is queued in libuv: write what the socket takes now, without a request.
    const uv_buf_t now =
        uv_buf_init(const_cast<char*>(data.data()), static_cast<unsigned>(data.size()));
    const int rc = uv_try_write(reinterpret_cast<uv_stream_t*>(&tcp_), &now, 1);
    if (rc >= 0) {
      data.remove_prefix(static_cast<size_t>(rc));
      if (data.empty()) return;
    } else if (rc != UV_EAGAIN) {
      return Close(Status::IoError(UvError("cannot write", rc)));
    }
  }
  if (output_budget_ != nullptr && !output_budget_->Charge(data.size())) {
    return Close(Status::Aborted("the node already holds " +
                                 std::to_string(output_budget_->used()) +
                                 " bytes of unsent output for slow readers; dropping this one"));
  }
  queued_bytes_ += data.size();
  auto* write = new WriteRequest{{}, this, std::string(data)};
  write->req.data = write;
  uv_buf_t buf = uv_buf_init(write->data.data(), static_cast<unsigned>(write->data.size()));
  const int rc = uv_write(&write->req, reinterpret_cast<uv_stream_t*>(&tcp_), &buf, 1,
                          &TcpConnection::OnWrite);
  if (rc < 0) {
    queued_bytes_ -= write->data.size();
    if (output_budget_ != nullptr) output_budget_->Release(write->data.size());
    delete write;
    Close(Status::IoError(UvError("cannot write", rc)));
  }
}

void TcpConnection::OnAlloc(uv_handle_t* /*handle*/, size_t /*suggested*/, uv_buf_t* buf) {
  thread_local char storage[kReadBufferBytes];
  *buf = uv_buf_init(storage, sizeof(storage));
}

void TcpConnection::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  static_cast<TcpConnection*>(stream->data)->HandleRead(nread, buf);
}

void TcpConnection::HandleRead(ssize_t nread, const uv_buf_t* buf) {
  if (closing_) return;
  if (nread == UV_EOF) return EndOfInput();
  if (nread < 0) return Close(Status::IoError(UvError("read failed", static_cast<int>(nread))));
  if (nread == 0) return;  // EAGAIN
  last_read_ms_ = uv_now(loop_);
  const std::string_view bytes(buf->base, static_cast<size_t>(nread));
  if (!tls_) return Deliver(bytes);
  const bool was_established = tls_->established();
  std::string plain;
  std::string out;
  Status s = tls_->Receive(bytes, &plain, &out);
  // An orderly TLS close (close_notify) may come in the read that completes the handshake.
  const bool orderly_end = s.code() == Status::Code::kAborted;
  if ((s.ok() || orderly_end) && !was_established && tls_->established()) {
    // Who the peer is is checked before anything queued for it leaves (the session encrypts
    // what waited for the handshake into `out`).
    OnEstablished();
    if (closing_) return;
  }
  if (!out.empty()) StartWrite(out);
  if (!s.ok() && !orderly_end) return Close(s);
  // What came before an orderly TLS close (close_notify) is delivered first.
  if (!closing_ && !plain.empty()) Deliver(plain);
  if (!s.ok() && !closing_) EndOfInput();
}

void TcpConnection::EndOfInput() {
  input_ended_ = true;
  // Frames held for a later turn are delivered first; DeliverHeldBack comes back here.
  if (held_back_) return;
  // Without a callback, or in the middle of a frame, end of input closes the connection.
  if (!on_end_of_input_ || decoder_.buffered() != 0) return Close(Status::Ok());
  // The peer is done sending; answers still under way may follow.
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
  on_end_of_input_(this);
}

void TcpConnection::OnEstablished() {
  const PeerIdentity& peer = tls_->peer();
  if (dialed_ && (peer.role != Sender::Role::kMember || peer.member_addr != peer_)) {
    // Only the member we dialed may answer for that address.
    return Close(Status::InvalidArgument(
        "the node at " + peer_ + " presented a certificate for " +
        (peer.role == Sender::Role::kMember ? "the member " + peer.member_addr
                                            : std::string("a client, not a member")) +
        "; each member needs its own certificate naming its --listen address"));
  }
  if (peer.role == Sender::Role::kMember) {
    UseMemberBudgets();
  } else {
    // Clients (and certificates that name no role) send single requests, never hand-overs.
    decoder_.set_max_frame_bytes(
        std::min(options_.max_frame_bytes, options_.client_max_frame_bytes));
  }
  if (on_established_) on_established_(this);
}

void TcpConnection::Deliver(std::string_view plain) {
  decoder_.Feed(plain);
  wire::Envelope envelope;
  bool more = true;
  bool completed = false;
  size_t held_bytes = 0;  // complete frames left for a later turn, when held
  bool hold_refused = false;
  if (options_.backlog != nullptr && options_.backlog->turn() != frames_turn_) {
    frames_turn_ = options_.backlog->turn();
    frames_in_turn_ = 0;
  }
  while (more && !closing_) {
    if (frames_in_turn_ >= ReadBacklog::kMaxFramesPerTurn && options_.backlog != nullptr &&
        !hold_refused) {
      held_bytes = decoder_.complete_bytes();
      if (options_.backlog->Hold(this, held_bytes)) {
        // The rest waits for the next turn, and reading with it: the other connections first.
        uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
        held_back_ = true;
        break;
      }
      hold_refused = true;  // the backlog is full: the rest is delivered now, asked once
    }
    switch (decoder_.Next(&envelope)) {
      case FrameDecoder::Result::kNeedMore:
        more = false;
        break;
      case FrameDecoder::Result::kError:
        return Close(Status::InvalidArgument(decoder_.error()));
      case FrameDecoder::Result::kFrame:
        last_frame_ms_ = uv_now(loop_);
        completed = true;
        ++frames_in_turn_;
        if (on_frame_) on_frame_(this, std::move(envelope));  // Next parses into it afresh
        break;
    }
  }
  if (closing_) return;
  // What waits for the rest of its frame counts against the node-wide input budget; complete
  // frames held for a later turn count in the backlog's bound instead, so that a pipelining
  // client is not closed for them while others' unfinished frames fill the budget.
  const size_t buffered = decoder_.buffered();
  const size_t unfinished = buffered - (held_back_ ? held_bytes : 0);
  // The frame deadline runs from the first byte of the frame still incomplete: a read that
  // completed a frame and began the next starts the clock again.
  if (buffered == 0) {
    partial_since_ms_ = 0;
  } else if (partial_since_ms_ == 0 || completed) {
    partial_since_ms_ = uv_now(loop_);
  }
  if (input_budget_ == nullptr) return;
  if (unfinished > input_charged_ && !input_budget_->Charge(unfinished - input_charged_)) {
    return Close(Status::Aborted("the node already holds " + std::to_string(input_budget_->used()) +
                                 " bytes of unfinished frames; this connection's is dropped"));
  }
  if (unfinished < input_charged_) input_budget_->Release(input_charged_ - unfinished);
  input_charged_ = unfinished;
}

void TcpConnection::DeliverHeldBack() {
  held_back_ = false;
  if (closing_) return;
  Deliver({});
  if (closing_ || held_back_) return;
  if (input_ended_) return EndOfInput();
  std::string error;
  if (!StartReading(&error)) Close(Status::IoError(error));
}

void TcpConnection::LeaveBacklog() {
  if (held_back_ && options_.backlog != nullptr) options_.backlog->Remove(this);
  held_back_ = false;
}

void TcpConnection::OnWrite(uv_write_t* req, int status) {
  std::unique_ptr<WriteRequest> write(static_cast<WriteRequest*>(req->data));
  TcpConnection* conn = write->conn;  // alive: deletion waits for the close callback
  if (status == UV_ECANCELED || conn->closing_) return;  // Close released the budget
  conn->queued_bytes_ -= write->data.size();
  if (conn->output_budget_ != nullptr) {
    conn->output_budget_->Release(write->data.size());
  }
  if (status < 0) return conn->Close(Status::IoError(UvError("write failed", status)));
  conn->CloseIfWritten();
}

void TcpConnection::OnConnect(uv_connect_t* req, int status) {
  std::unique_ptr<ConnectRequest> connect(static_cast<ConnectRequest*>(req->data));
  TcpConnection* conn = connect->conn;
  if (status == UV_ECANCELED || conn->closing_) return;
  conn->HandleConnect(status);
}

void TcpConnection::HandleConnect(int status) {
  if (status < 0) {
    Close(Status::IoError(UvError("cannot connect", status)));
    return;
  }
  connected_ = true;
  last_read_ms_ = uv_now(loop_);
  uv_tcp_nodelay(&tcp_, 1);
  std::string error;
  if (!StartReading(&error)) {
    Close(Status::IoError(error));
    return;
  }
  if (tls_) {
    std::string hello;
    Status s = tls_->Start(&hello);
    if (!hello.empty()) StartWrite(hello);
    if (!s.ok()) return Close(s);
  }
  std::deque<std::string> pending = std::move(pending_);
  pending_.clear();
  pending_bytes_ = 0;
  for (std::string& frame : pending) {
    if (closing_) return;
    Send(std::move(frame));
  }
}

void TcpConnection::OnClosed(uv_handle_t* handle) {
  delete static_cast<TcpConnection*>(handle->data);
}

}  // namespace chord
