#include "protocol/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <charconv>
#include <string_view>

#include "protocol/ring_address.h"

namespace chord {
namespace {

constexpr std::string_view kMemberScheme = "chord-member://";
constexpr std::string_view kClientScheme = "chord-client://";

// The value of `name` in a "?a=b&c=d" query, or "".
std::string_view QueryValue(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  return {};
}

PeerIdentity FromUri(std::string_view uri) {
  PeerIdentity id;
  const bool member = uri.substr(0, kMemberScheme.size()) == kMemberScheme;
  const bool client = uri.substr(0, kClientScheme.size()) == kClientScheme;
  if (!member && !client) return id;
  uri.remove_prefix(member ? kMemberScheme.size() : kClientScheme.size());
  const size_t q = uri.find('?');
  const std::string_view name = uri.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? "" : uri.substr(q + 1);
  if (member) {
    // The address must be canonical and name a process (no "#i").
    if (!IsCanonicalRingAddress(name) || name.find('#') != std::string_view::npos) return id;
    unsigned vnodes = 1;
    const std::string_view v = QueryValue(query, "vnodes");
    if (!v.empty()) {
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), vnodes);
      if (ec != std::errc() || end != v.data() + v.size() || vnodes < 1 ||
          vnodes > static_cast<unsigned>(kMaxVnodesPerProcess)) {
        return id;
      }
    }
    id.role = Sender::Role::kMember;
    id.member_addr = std::string(name);
    id.vnodes = vnodes;
    id.name = id.member_addr;
    return id;
  }
  const std::string_view role = QueryValue(query, "role");
  if (role == "read") id.role = Sender::Role::kReader;
  if (role == "write") id.role = Sender::Role::kWriter;
  if (role == "admin") id.role = Sender::Role::kAdmin;
  id.name = std::string(name);
  return id;
}

// The first error on this thread's OpenSSL error queue, which it empties: a stale error would
// make SSL_get_error misreport the next TLS operation on this thread.
std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no further detail";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

}  // namespace

PeerIdentity IdentityOf(X509* cert) {
  PeerIdentity best;
  if (cert == nullptr) return best;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return best;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type != GEN_URI) continue;
    const auto* s = n->d.uniformResourceIdentifier;
    const PeerIdentity id = FromUri(std::string_view(
        reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), ASN1_STRING_length(s)));
    if (id.role != Sender::Role::kNobody) {
      best = id;
      if (id.role == Sender::Role::kMember) break;  // a member URI wins
    }
  }
  GENERAL_NAMES_free(names);
  return best;
}

Result<std::unique_ptr<TlsContext>> TlsContext::Create(const TlsFiles& files) {
  if (files.cert.empty() || files.key.empty() || files.ca.empty()) {
    return Status::InvalidArgument(
        "TLS needs all three of a certificate, its key and the cluster CA; give --tls-cert, "
        "--tls-key and --tls-ca (or CHORD_TLS_CERT, CHORD_TLS_KEY and CHORD_TLS_CA)");
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (ctx == nullptr) return Status::IoError("cannot create a TLS context: " + OpenSslError());
  auto fail = [ctx](const std::string& sentence) -> Status {
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return Status::InvalidArgument(sentence);
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  // Connections are long-lived and never resumed: no session tickets.
  SSL_CTX_set_num_tickets(ctx, 0);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return fail("cannot load the certificate " + files.cert + " (" + OpenSslError() +
                "); give a PEM certificate made with scripts/certs.sh");
  }
  const std::string mismatch = "the key " + files.key + " does not belong to the certificate " +
                               files.cert + "; give the pair scripts/certs.sh made together";
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    // A key of the certificate's type is checked against it here already.
    const unsigned long e = ERR_peek_last_error();
    if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
      return fail(mismatch);
    }
    return fail("cannot load the private key " + files.key + " (" + OpenSslError() +
                "); give the PEM key that goes with the certificate");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) return fail(mismatch);
  if (SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr) != 1) {
    return fail("cannot load the CA certificate " + files.ca + " (" + OpenSslError() +
                "); give the cluster CA's ca.pem");
  }
  // Mutual TLS: every peer must show a certificate of the cluster CA.
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
  PeerIdentity own = IdentityOf(SSL_CTX_get0_certificate(ctx));
  return std::unique_ptr<TlsContext>(new TlsContext(ctx, std::move(own)));
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace chord
