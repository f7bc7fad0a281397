// TlsContext: the TLS 1.3 configuration of a node or client (OpenSSL): its own certificate and
// key, and the cluster CA every peer's certificate must chain to; peers must present one
// (mutual TLS). PeerIdentity reads who a verified certificate says its holder is, from its URI
// subject alternative names: "chord-member://A.B.C.D:PORT?vnodes=V" for a ring member (V
// ring positions, 1 when absent) and "chord-client://NAME?role=read|write|admin" for a client
// (scripts/certs.sh makes both). Create on any thread; use one context from one thread.
#ifndef CHORD_PROTOCOL_TLS_CONTEXT_H_
#define CHORD_PROTOCOL_TLS_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "protocol/sender.h"
#include "protocol/base/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_st X509;

namespace chord {

struct TlsFiles {
  std::string cert;  // PEM certificate (chain) of this node or client
  std::string key;   // PEM private key
  std::string ca;    // PEM certificate of the cluster CA
  bool empty() const { return cert.empty() && key.empty() && ca.empty(); }
};

// Who a certificate says its holder is.
struct PeerIdentity {
  Sender::Role role = Sender::Role::kNobody;
  std::string member_addr;  // kMember: HOST:PORT
  uint32_t vnodes = 1;      // kMember
  std::string name;         // clients: the NAME of their URI; members: their address

  Sender ToSender() const {
    return role == Sender::Role::kMember ? Sender::Member(member_addr, vnodes)
                                         : Sender::Client(role);
  }
};

// The identity in `cert` (kNobody when it carries no chord URI).
PeerIdentity IdentityOf(X509* cert);

class TlsContext {
 public:
  // Loads the files; InvalidArgument (one sentence naming the file) when one is missing,
  // unreadable, or the key does not match the certificate.
  static Result<std::unique_ptr<TlsContext>> Create(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* ctx() const { return ctx_; }
  // Who this context's own certificate says we are.
  const PeerIdentity& own() const { return own_; }

 private:
  TlsContext(SSL_CTX* ctx, PeerIdentity own) : ctx_(ctx), own_(std::move(own)) {}
  SSL_CTX* ctx_;
  PeerIdentity own_;
};

}  // namespace chord

#endif  // CHORD_PROTOCOL_TLS_CONTEXT_H_
