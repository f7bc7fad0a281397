// TlsSession: one TLS connection's state (OpenSSL with memory BIOs), independent of how the
// bytes travel: the owner feeds it the ciphertext it read and sends on the ciphertext it gets
// back; plaintext comes out of Receive and goes in through Send. Plaintext sent before the
// handshake has finished waits inside. Once established, peer() is who the peer's verified
// certificate says it is. One connection, one thread.
#ifndef CHORD_PROTOCOL_TLS_SESSION_H_
#define CHORD_PROTOCOL_TLS_SESSION_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "protocol/tls_context.h"
#include "protocol/base/status.h"

typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace chord {

class TlsSession {
 public:
  // `server`: this side accepted the connection; otherwise it dialed and speaks first (Start).
  TlsSession(const TlsContext& context, bool server);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // The client's first flight (ClientHello), appended to *out.
  [[nodiscard]] Status Start(std::string* out);
  // Ciphertext read from the peer: plaintext for us is appended to *plain, ciphertext to send
  // to *out. An error (handshake failure, a bad record) is one sentence; the connection must
  // then be closed.
  [[nodiscard]] Status Receive(std::string_view cipher, std::string* plain, std::string* out);
  // Plaintext to send: its ciphertext is appended to *out (or kept until the handshake is done).
  [[nodiscard]] Status Send(std::string_view plain, std::string* out);

  bool established() const { return established_; }
  const PeerIdentity& peer() const { return peer_; }
  size_t waiting_bytes() const { return waiting_.size(); }

 private:
  // Moves what OpenSSL wrote into the outgoing BIO to *out.
  void Drain(std::string* out);
  Status Handshake(std::string* out);
  Status Encrypt(std::string_view plain, std::string* out);
  std::string ErrorSentence(int rc, const char* what);
  Status NotReady() const;

  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // ciphertext from the peer (owned by ssl_)
  BIO* out_ = nullptr;  // ciphertext for the peer (owned by ssl_)
  bool established_ = false;
  std::string waiting_;  // plaintext sent before the handshake finished
  PeerIdentity peer_;
};

}  // namespace chord

#endif  // CHORD_PROTOCOL_TLS_SESSION_H_
