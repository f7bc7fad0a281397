#include "protocol/tls_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace chord {

TlsSession::TlsSession(const TlsContext& context, bool server) {
  ssl_ = SSL_new(context.ctx());
  if (ssl_ == nullptr) return;  // every call then fails (NotReady)
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl_, in_, out_);  // ssl_ owns both now
  if (server) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
  }
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::Drain(std::string* out) {
  char buf[16 << 10];
  int n;
  while ((n = BIO_read(out_, buf, sizeof(buf))) > 0) out->append(buf, static_cast<size_t>(n));
}

std::string TlsSession::ErrorSentence(int rc, const char* what) {
  const int err = SSL_get_error(ssl_, rc);
  std::string detail;
  if (const unsigned long e = ERR_get_error(); e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    detail = buf;
  }
  ERR_clear_error();
  const long verify = SSL_get_verify_result(ssl_);
  if (!established_ && verify != X509_V_OK) {
    std::string sentence = std::string("the peer's certificate was refused (") +
                           X509_verify_cert_error_string(verify) + ")";
    switch (verify) {
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
      case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
      case X509_V_ERR_CERT_SIGNATURE_FAILURE:
        return sentence + ": it is not signed by the cluster CA";
      default:  // e.g. expired, or a client's certificate offered by a server
        return sentence + "; the peer needs a current certificate for its role, made with " +
               "scripts/certs.sh";
    }
  }
  return std::string(what) + " failed (" + (detail.empty() ? std::to_string(err) : detail) +
         "); is the peer using TLS with a certificate of the same cluster CA?";
}

Status TlsSession::NotReady() const {
  return Status::IoError("cannot create a TLS session (out of memory?)");
}

Status TlsSession::Start(std::string* out) {
  if (ssl_ == nullptr) return NotReady();
  return Handshake(out);
}

Status TlsSession::Handshake(std::string* out) {
  ERR_clear_error();  // SSL_get_error reads this thread's error queue
  const int rc = SSL_do_handshake(ssl_);
  Drain(out);
  if (rc == 1) {
    established_ = true;
    X509* cert = SSL_get1_peer_certificate(ssl_);
    peer_ = IdentityOf(cert);
    X509_free(cert);
    if (!waiting_.empty()) {
      std::string plain = std::move(waiting_);
      waiting_.clear();
      return Encrypt(plain, out);
    }
    return Status::Ok();
  }
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return Status::Ok();
  return Status::InvalidArgument(ErrorSentence(rc, "the TLS handshake"));
}

Status TlsSession::Receive(std::string_view cipher, std::string* plain, std::string* out) {
  if (ssl_ == nullptr) return NotReady();
  if (!cipher.empty() && BIO_write(in_, cipher.data(), static_cast<int>(cipher.size())) <= 0) {
    return Status::IoError("cannot buffer TLS input");
  }
  if (!established_) {
    Status s = Handshake(out);
    if (!s.ok() || !established_) return s;
  }
  char buf[16 << 10];
  for (;;) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n > 0) {
      plain->append(buf, static_cast<size_t>(n));
      continue;
    }
    Drain(out);  // e.g. session tickets, key updates
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_WANT_READ) return Status::Ok();
    if (err == SSL_ERROR_ZERO_RETURN) return Status::Aborted("the peer closed the TLS session");
    return Status::InvalidArgument(ErrorSentence(n, "reading a TLS record"));
  }
}

Status TlsSession::Send(std::string_view plain, std::string* out) {
  if (ssl_ == nullptr) return NotReady();
  if (!established_) {
    waiting_.append(plain);
    return Status::Ok();
  }
  return Encrypt(plain, out);
}

Status TlsSession::Encrypt(std::string_view plain, std::string* out) {
  while (!plain.empty()) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, plain.data(), static_cast<int>(plain.size()));
    if (n <= 0) return Status::IoError(ErrorSentence(n, "writing a TLS record"));
    plain.remove_prefix(static_cast<size_t>(n));
    Drain(out);
  }
  return Status::Ok();
}

}  // namespace chord
