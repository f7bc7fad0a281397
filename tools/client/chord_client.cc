#include "tools/client/chord_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "protocol/frame.h"
#include "protocol/id.h"

namespace chord {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kListKeysPageLimit = 1000;
constexpr int kMaxListKeysPages = 1000000;  // bounds a ListKeys walk (10^9 records)
constexpr size_t kReadChunkBytes = 64 * 1024;
constexpr int kMaxFramesPerCall = 100000;  // stale responses skipped while waiting

// Milliseconds left until `deadline`, clamped to [0, INT_MAX] for poll().
int RemainingMs(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  if (left > 1 << 30) return 1 << 30;
  return static_cast<int>(left);
}

std::string ErrnoText(int err) {
  switch (err) {
    case ECONNREFUSED:
      return "connection refused";
    case ECONNRESET:
      return "connection reset by peer";
    case EHOSTUNREACH:
      return "host unreachable";
    case ENETUNREACH:
      return "network unreachable";
    case EPIPE:
      return "connection closed by peer";
    default:
      return std::strerror(err);
  }
}

// Maps a node's ErrorResponse to the client's Status.
Status StatusFromError(const std::string& addr, const wire::ErrorResponse& error) {
  std::string msg = ErrorAnswerSentence(addr, error);
  switch (error.code()) {
    case wire::NOT_FOUND:
      return Status::NotFound(std::move(msg));
    case wire::INVALID:
      return Status::InvalidArgument(std::move(msg));
    default:
      return Status::Unavailable(std::move(msg));
  }
}

// Splits HOST:PORT. False when either part is missing or the port is not 1..65535.
bool SplitHostPort(const std::string& addr, std::string* host, std::string* port) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= addr.size()) return false;
  *host = addr.substr(0, colon);
  *port = addr.substr(colon + 1);
  if (port->size() > 5) return false;
  int value = 0;
  for (char c : *port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return value >= 1 && value <= 65535;
}

// Splits "HOST:PORT#i" into HOST:PORT and i; "HOST:PORT" is vnode 0. False for a suffix that
// is not a decimal number up to 65535.
bool SplitVnodeSuffix(const std::string& addr, std::string* process, uint32_t* vnode) {
  const size_t hash = addr.find('#');
  *process = addr.substr(0, hash);
  *vnode = 0;
  if (hash == std::string::npos) return true;
  const std::string index = addr.substr(hash + 1);
  if (index.empty() || index.size() > 5) return false;
  uint32_t value = 0;
  for (char c : index) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return false;
  *vnode = value;
  return true;
}

// The TLS context new clients use (null: plain TCP), shared by every thread.
std::mutex g_tls_mutex;
std::shared_ptr<const TlsContext> g_tls;

std::string FromEnv(const std::string& value, const char* name) {
  if (!value.empty()) return value;
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

void ChordClient::UseTls(std::shared_ptr<const TlsContext> context) {
  std::lock_guard<std::mutex> lock(g_tls_mutex);
  g_tls = std::move(context);
}

Status ChordClient::ConfigureTls(TlsFiles files) {
  files.cert = FromEnv(files.cert, "CHORD_TLS_CERT");
  files.key = FromEnv(files.key, "CHORD_TLS_KEY");
  files.ca = FromEnv(files.ca, "CHORD_TLS_CA");
  if (files.empty()) {
    UseTls(nullptr);
    return Status::Ok();
  }
  auto context = TlsContext::Create(files);
  if (!context.ok()) return context.status();
  UseTls(std::shared_ptr<const TlsContext>(std::move(context).value()));
  return Status::Ok();
}

ChordClient::ChordClient(std::string addr, uint64_t timeout_ms)
    : addr_(std::move(addr)), timeout_ms_(timeout_ms == 0 ? 1 : timeout_ms) {
  addr_valid_ = SplitVnodeSuffix(addr_, &process_addr_, &vnode_);
  std::lock_guard<std::mutex> lock(g_tls_mutex);
  tls_context_ = g_tls;
}

ChordClient::~ChordClient() { Disconnect(); }

void ChordClient::Disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pipe_decoder_.reset();
  tls_.reset();
}

std::string ChordClient::WriteFrame(std::string_view frame, Clock::time_point deadline,
                                    bool* timed_out) {
  if (!tls_) return WriteAll(frame, deadline, timed_out);
  std::string cipher;
  if (Status s = tls_->Send(frame, &cipher); !s.ok()) return s.message();
  return WriteAll(cipher, deadline, timed_out);
}

std::string ChordClient::WriteAll(std::string_view bytes, Clock::time_point deadline,
                                  bool* timed_out) {
  *timed_out = false;
  size_t sent = 0;
  for (int guard = 0; sent < bytes.size() && guard < 1000000; ++guard) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd_, POLLOUT, 0};
      const int ready = ::poll(&pfd, 1, RemainingMs(deadline));
      if (ready == 0) {
        *timed_out = true;
        return "timed out";
      }
      if (ready < 0 && errno != EINTR) return ErrnoText(errno);
      continue;
    }
    return n < 0 ? ErrnoText(errno) : "connection closed";
  }
  return sent < bytes.size() ? "could not send the request" : "";
}

std::string ChordClient::ReadSome(Clock::time_point deadline, std::string* plain, bool* timed_out) {
  *timed_out = false;
  char buf[kReadChunkBytes];
  for (int guard = 0; guard < 1000000; ++guard) {
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, RemainingMs(deadline));
    if (ready == 0) {
      *timed_out = true;
      return "timed out";
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      return ErrnoText(errno);
    }
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return n == 0 ? "the node closed the connection" : ErrnoText(errno);
    const std::string_view bytes(buf, static_cast<size_t>(n));
    if (!tls_) {
      plain->append(bytes);
      return "";
    }
    std::string out;
    const Status s = tls_->Receive(bytes, plain, &out);
    if (!out.empty()) {
      bool write_timed_out = false;
      if (std::string failure = WriteAll(out, deadline, &write_timed_out); !failure.empty()) {
        *timed_out = write_timed_out;
        return failure;
      }
    }
    if (!s.ok()) return s.message();
    return "";
  }
  return "too many interrupted reads";
}

Status ChordClient::Handshake(const std::string& dialed, Clock::time_point deadline) {
  tls_ = std::make_unique<TlsSession>(*tls_context_, /*server=*/false);
  std::string out;
  Status s = tls_->Start(&out);
  bool timed_out = false;
  std::string failure = s.ok() ? WriteAll(out, deadline, &timed_out) : s.message();
  std::string early;  // plaintext cannot arrive before we have sent a request
  for (int round = 0; failure.empty() && !tls_->established() && round < 1000; ++round) {
    failure = ReadSome(deadline, &early, &timed_out);
  }
  if (failure.empty() && !tls_->established()) failure = "the handshake did not finish";
  if (!failure.empty()) {
    Disconnect();
    return Status::Unavailable("no TLS connection to " + addr_ + ": " + failure +
                               "; check that the node runs with TLS and that --tls-ca is the "
                               "cluster CA that signed its certificate");
  }
  const PeerIdentity& peer = tls_->peer();
  if (peer.role != Sender::Role::kMember || peer.member_addr != dialed) {
    const std::string who = peer.role == Sender::Role::kMember ? "the member " + peer.member_addr
                                                               : std::string("no member");
    Disconnect();
    return Status::Unavailable("the node at " + addr_ + " (" + dialed +
                               ") showed a certificate for " + who +
                               "; it is not the member this address names");
  }
  return Status::Ok();
}

Status ChordClient::EnsureConnected() {
  if (fd_ >= 0) return Status::Ok();
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  std::string host, port;
  if (!addr_valid_ || !SplitHostPort(process_addr_, &host, &port)) {
    return Status::InvalidArgument("\"" + addr_ +
                                   "\" is not a node address; give it as HOST:PORT, e.g. "
                                   "127.0.0.1:4000, or HOST:PORT#i for virtual node i");
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* infos = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &infos);
  if (gai != 0 || infos == nullptr) {
    return Status::Unavailable("could not resolve host \"" + host + "\" of " + addr_ + ": " +
                               ::gai_strerror(gai) + "; check the address");
  }
  std::string last_error = "no IPv4 address";
  std::string dialed;  // A.B.C.D:PORT actually connected to
  for (addrinfo* ai = infos; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = ErrnoText(errno);
      continue;
    }
    const int flags = ::fcntl(fd, F_GETFL, 0);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      int n = -1;
      for (int attempt = 0; attempt < 1000; ++attempt) {  // retries only on EINTR
        n = ::poll(&pfd, 1, RemainingMs(deadline));
        if (n >= 0 || errno != EINTR) break;
      }
      if (n == 0) {
        ::close(fd);
        ::freeaddrinfo(infos);
        return Status::Unavailable("could not reach " + addr_ + ": no connection within " +
                                   std::to_string(timeout_ms_) +
                                   " ms; is chord-node running there?");
      }
      int err = 0;
      socklen_t len = sizeof(err);
      if (n < 0) {
        err = errno;
      } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last_error = ErrnoText(errno);
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fd_ = fd;
    char ip[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
    ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    dialed = std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
    break;
  }
  ::freeaddrinfo(infos);
  if (fd_ < 0) {
    return Status::Unavailable("could not reach " + addr_ + ": " + last_error +
                               "; is chord-node running there?");
  }
  if (tls_context_) return Handshake(dialed, deadline);
  return Status::Ok();
}

Status ChordClient::Frame(uint64_t request_id, wire::Envelope* request, std::string* frame) const {
  request->set_request_id(request_id);
  request->set_vnode(vnode_);
  if (!EncodeFrame(*request, frame)) {
    return Status::InvalidArgument("the request is larger than the " +
                                   std::to_string(kDefaultMaxFrameBytes) +
                                   "-byte frame limit; send a smaller value");
  }
  return Status::Ok();
}

Result<wire::Envelope> ChordClient::Call(wire::Envelope request) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  const std::string timed_out =
      addr_ + " did not answer within " + std::to_string(timeout_ms_) + " ms";
  const uint64_t request_id = next_request_id_++;
  std::string frame;
  if (Status s = Frame(request_id, &request, &frame); !s.ok()) return s;

  // A connection kept from an earlier call may have been closed by the node meanwhile (it
  // restarted, or dropped an idle peer). If that shows before any answer byte arrives, the
  // request is sent once more on a fresh connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = fd_ >= 0;
    if (Status s = EnsureConnected(); !s.ok()) return s;
    if (Clock::now() >= deadline) {
      Disconnect();
      return Status::Unavailable(timed_out);
    }

    // Send the whole frame (encrypted first when TLS is on).
    bool send_timed_out = false;
    std::string failure = WriteFrame(frame, deadline, &send_timed_out);
    if (send_timed_out) {
      Disconnect();
      return Status::Unavailable(timed_out);
    }
    if (!failure.empty()) {
      Disconnect();
      if (reused) continue;
      return Status::Unavailable("lost the connection to " + addr_ + " while sending: " + failure +
                                 "; is chord-node running there?");
    }

    // Read frames until the one answering this request arrives.
    FrameDecoder decoder;
    wire::Envelope response;
    bool received_any = false;
    bool read_timed_out = false;
    int frames = 0;
    for (int guard = 0; guard < 100000000; ++guard) {
      const FrameDecoder::Result r = decoder.Next(&response);
      if (r == FrameDecoder::Result::kError) {
        Disconnect();
        return Status::Unavailable(addr_ + " sent a malformed answer (" + decoder.error() +
                                   "); is it a chord-node of the same version?");
      }
      if (r == FrameDecoder::Result::kFrame) {
        if (response.request_id() == request_id) {
          if (response.has_error()) return StatusFromError(addr_, response.error());
          return response;
        }
        if (++frames > kMaxFramesPerCall) break;
        continue;  // an answer to an earlier, abandoned request
      }
      std::string plain;
      failure = ReadSome(deadline, &plain, &read_timed_out);
      if (read_timed_out) {
        Disconnect();
        return Status::Unavailable(timed_out);
      }
      if (!failure.empty()) break;
      if (!plain.empty()) {
        received_any = true;
        decoder.Feed(plain);
      }
    }
    Disconnect();
    if (failure.empty()) return Status::Unavailable(timed_out);
    if (reused && !received_any) continue;
    return Status::Unavailable("lost the connection to " + addr_ +
                               " before it answered: " + failure + "; check the node's log");
  }
  return Status::Unavailable("could not reach " + addr_ + "; is chord-node running there?");
}

namespace {

// Checks that `response` carries the expected body.
Status ExpectBody(const std::string& addr, const wire::Envelope& response,
                  wire::Envelope::BodyCase expected, const char* what) {
  if (response.body_case() == expected) return Status::Ok();
  return Status::Unavailable(addr + " answered a " + what +
                             " request with an unexpected message (body " +
                             std::to_string(static_cast<int>(response.body_case())) +
                             "); is it a chord-node of the same version?");
}

}  // namespace

Result<wire::DataResponse> ChordClient::Put(const std::string& key, const std::string& value,
                                            const DataOptions& options) {
  return CallData(PutEnvelope(key, value, options), "put");
}

Result<wire::DataResponse> ChordClient::Get(const std::string& key, const DataOptions& options) {
  return CallData(GetEnvelope(key, options), "get");
}

Result<wire::DataResponse> ChordClient::Delete(const std::string& key, const DataOptions& options) {
  return CallData(DeleteEnvelope(key, options), "delete");
}

Result<wire::DataResponse> ChordClient::CallData(wire::Envelope request, const char* what) {
  Result<wire::Envelope> response = Call(std::move(request));
  if (!response.ok()) return response.status();
  if (Status s = ExpectBody(addr_, *response, wire::Envelope::kDataResp, what); !s.ok()) return s;
  return std::move(response).value().data_resp();
}

Result<wire::WatchResponse> ChordClient::Watch(const std::string& key, uint64_t after_version,
                                               uint32_t wait_ms, bool start) {
  wire::Envelope request;
  wire::WatchRequest* w = request.mutable_watch();
  w->set_key(key);
  w->set_after_version(after_version);
  w->set_wait_ms(wait_ms);
  w->set_start(start);
  Result<wire::Envelope> response = Call(std::move(request));
  if (!response.ok()) return response.status();
  if (Status s = ExpectBody(addr_, *response, wire::Envelope::kWatchResp, "watch"); !s.ok()) {
    return s;
  }
  return std::move(response).value().watch_resp();
}

Result<wire::LookupResponse> ChordClient::Lookup(const std::string& key) {
  wire::Envelope request;
  request.mutable_lookup()->set_key(key);
  Result<wire::Envelope> response = Call(std::move(request));
  if (!response.ok()) return response.status();
  if (Status s = ExpectBody(addr_, *response, wire::Envelope::kLookupResp, "lookup"); !s.ok()) {
    return s;
  }
  return std::move(response).value().lookup_resp();
}

Result<wire::StatusResponse> ChordClient::GetStatus() {
  wire::Envelope request;
  request.mutable_status();
  Result<wire::Envelope> response = Call(std::move(request));
  if (!response.ok()) return response.status();
  if (Status s = ExpectBody(addr_, *response, wire::Envelope::kStatusResp, "status"); !s.ok()) {
    return s;
  }
  return std::move(response).value().status_resp();
}

Result<std::vector<wire::Record>> ChordClient::ListKeys(bool with_values) {
  std::vector<wire::Record> records;
  std::string after;
  for (int page = 0; page < kMaxListKeysPages; ++page) {
    wire::Envelope request;
    request.mutable_list_keys()->set_after_key_id(after);
    request.mutable_list_keys()->set_limit(kListKeysPageLimit);
    request.mutable_list_keys()->set_with_values(with_values);
    Result<wire::Envelope> response = Call(std::move(request));
    if (!response.ok()) return response.status();
    if (Status s = ExpectBody(addr_, *response, wire::Envelope::kListKeysResp, "list-keys");
        !s.ok()) {
      return s;
    }
    wire::ListKeysResponse& list = *response.value().mutable_list_keys_resp();
    if (list.records().empty()) {
      if (list.more()) {
        return Status::Unavailable(addr_ +
                                   " answered an empty key page that claims more follow; "
                                   "is it a chord-node of the same version?");
      }
      return records;
    }
    const std::string next_after = Id::Sha1(list.records().rbegin()->key()).ToBytes();
    for (wire::Record& record : *list.mutable_records()) records.push_back(std::move(record));
    if (!list.more()) return records;
    if (!after.empty() && next_after <= after) {
      return Status::Unavailable(addr_ +
                                 " paged its keys out of order; is it a chord-node of the same "
                                 "version?");
    }
    after = next_after;
  }
  return Status::Unavailable(addr_ + " kept paging keys past the client's limit of " +
                             std::to_string(kMaxListKeysPages) + " pages");
}

Result<uint64_t> ChordClient::Send(wire::Envelope request) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  const uint64_t request_id = next_request_id_++;
  std::string frame;
  if (Status s = Frame(request_id, &request, &frame); !s.ok()) return s;
  if (Status s = EnsureConnected(); !s.ok()) return s;
  if (!pipe_decoder_) pipe_decoder_ = std::make_unique<FrameDecoder>();
  bool timed_out = false;
  const std::string failure = WriteFrame(frame, deadline, &timed_out);
  if (timed_out || !failure.empty()) {
    Disconnect();
    return Status::Unavailable(
        timed_out ? addr_ + " did not take a request within " + std::to_string(timeout_ms_) + " ms"
                  : "lost the connection to " + addr_ + " while sending: " + failure);
  }
  return request_id;
}

Result<wire::Envelope> ChordClient::Receive() {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  if (fd_ < 0 || !pipe_decoder_) {
    return Status::Unavailable("no request is in flight to " + addr_ + "; Send one first");
  }
  for (;;) {
    wire::Envelope response;
    const FrameDecoder::Result r = pipe_decoder_->Next(&response);
    if (r == FrameDecoder::Result::kError) {
      const std::string why = pipe_decoder_->error();
      Disconnect();
      return Status::Unavailable(addr_ + " sent a malformed answer (" + why +
                                 "); is it a chord-node of the same version?");
    }
    if (r == FrameDecoder::Result::kFrame) return response;
    std::string plain;
    bool timed_out = false;
    const std::string failure = ReadSome(deadline, &plain, &timed_out);
    if (timed_out || !failure.empty()) {
      Disconnect();
      return Status::Unavailable(timed_out ? addr_ + " did not answer within " +
                                                 std::to_string(timeout_ms_) + " ms"
                                           : "lost the connection to " + addr_ + ": " + failure);
    }
    pipe_decoder_->Feed(plain);
  }
}

}  // namespace chord
