// ChordClient: a small blocking client for one chord-node ring position, used by chordctl,
// the tests and the bench tool. The position is a process (HOST:PORT) or one virtual node of
// it (HOST:PORT#i: the client connects to HOST:PORT and marks every request for vnode i).
// One TCP connection (opened lazily, reopened after an error), one request at a time, every
// call bounded by the timeout. With TLS configured (UseTls / ConfigureTls) the connection is
// mutual TLS 1.3 and the node must show a member certificate naming the address dialed. Not
// thread-safe: one client per thread.
#ifndef CHORD_TOOLS_CLIENT_CHORD_CLIENT_H_
#define CHORD_TOOLS_CLIENT_CHORD_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/frame.h"
#include "protocol/tls_context.h"
#include "protocol/tls_session.h"
#include "tools/client/data_requests.h"

namespace chord {

class ChordClient {
 public:
  // `addr` is HOST:PORT or HOST:PORT#i (IPv4 literal or resolvable name).
  explicit ChordClient(std::string addr, uint64_t timeout_ms = 15000);
  ~ChordClient();
  ChordClient(const ChordClient&) = delete;
  ChordClient& operator=(const ChordClient&) = delete;

  const std::string& addr() const { return addr_; }

  // Clients made after this speak mutual TLS with `context`; null: plain TCP. Call before
  // starting threads that make clients.
  static void UseTls(std::shared_ptr<const TlsContext> context);
  // UseTls with the given files, each falling back to CHORD_TLS_CERT, CHORD_TLS_KEY and
  // CHORD_TLS_CA; plain TCP when none is set anywhere. One sentence when they cannot be loaded.
  [[nodiscard]] static Status ConfigureTls(TlsFiles files);

  // Sends `request` (its request_id is assigned here) and waits for the matching response.
  // Unavailable when the node cannot be reached or does not answer in time.
  Result<wire::Envelope> Call(wire::Envelope request);

  // Pipelining (chord-bench --pipeline): Send writes `request` without waiting and returns
  // the request id it was given; Receive waits (up to the timeout) for the next answer to any
  // request sent so, in whatever order the node answers. Unavailable when the connection
  // fails; the requests in flight on it are then lost. Do not mix with Call on one client.
  Result<uint64_t> Send(wire::Envelope request);
  Result<wire::Envelope> Receive();

  Result<wire::DataResponse> Put(const std::string& key, const std::string& value,
                                 const DataOptions& options = {});
  Result<wire::DataResponse> Get(const std::string& key, const DataOptions& options = {});
  Result<wire::DataResponse> Delete(const std::string& key, const DataOptions& options = {});
  Result<wire::LookupResponse> Lookup(const std::string& key);
  // One long poll of a key's changes after `after_version` (`start`: its current state
  // first), waiting at most `wait_ms` at the node; send it to the key's owner (Lookup).
  Result<wire::WatchResponse> Watch(const std::string& key, uint64_t after_version,
                                    uint32_t wait_ms, bool start);
  Result<wire::StatusResponse> GetStatus();
  // Every record the node holds (any role), in ring-id order, paging through ListKeys.
  Result<std::vector<wire::Record>> ListKeys(bool with_values);

 private:
  // Call for a get, put or delete: the DataResponse, or why there is none.
  Result<wire::DataResponse> CallData(wire::Envelope request, const char* what);
  Status EnsureConnected();
  // Completes the TLS handshake on the fresh connection and checks who answered.
  Status Handshake(const std::string& dialed, std::chrono::steady_clock::time_point deadline);
  void Disconnect();
  // Numbers `request` and addresses it to this client's vnode, then encodes it into *frame;
  // InvalidArgument when it is over the frame limit.
  Status Frame(uint64_t request_id, wire::Envelope* request, std::string* frame) const;
  // Writes the whole frame, encrypted first when TLS is on. "" or why it failed.
  std::string WriteFrame(std::string_view frame, std::chrono::steady_clock::time_point deadline,
                         bool* timed_out);
  // Writes all of `bytes` (already encrypted when TLS is on). "" or why it failed; *timed_out
  // when the deadline passed.
  std::string WriteAll(std::string_view bytes, std::chrono::steady_clock::time_point deadline,
                       bool* timed_out);
  // Reads what has arrived (waiting until the deadline) and appends the plaintext to *plain.
  // "" or why it failed.
  std::string ReadSome(std::chrono::steady_clock::time_point deadline, std::string* plain,
                       bool* timed_out);

  std::string addr_;
  std::string process_addr_;  // addr_ without the "#i" suffix: where to connect
  uint32_t vnode_ = 0;        // i of the suffix; 0 without one
  bool addr_valid_ = true;    // false: the suffix is malformed
  uint64_t timeout_ms_;
  int fd_ = -1;
  std::shared_ptr<const TlsContext> tls_context_;  // null: plain TCP
  std::unique_ptr<TlsSession> tls_;                // the session on fd_
  uint64_t next_request_id_ = 1;
  std::unique_ptr<FrameDecoder> pipe_decoder_;  // Receive's bytes not yet decoded
};

}  // namespace chord

#endif  // CHORD_TOOLS_CLIENT_CHORD_CLIENT_H_
