// Tests for mutual TLS (protocol/tls_context.h, protocol/tls_session.h) with certificates that
// scripts/certs.sh makes in a temporary directory: a cluster CA with members and clients, a
// second, unrelated CA, and hand-made certificates whose URIs must not be believed. Contexts
// fail with one sentence; identities come from the URI names; two sessions complete a
// handshake in memory and carry plaintext both ways, and refuse a peer of the other CA.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "protocol/tls_context.h"
#include "protocol/tls_session.h"

namespace chord {
namespace {

using Role = Sender::Role;

struct CommandRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command; its exit code and everything it printed.
CommandRun Shell(const std::string& command) {
  CommandRun run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) run.output.append(buf.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string CertsScript() { return std::string(CHORD_SOURCE_DIR) + "/scripts/certs.sh"; }

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The certificates every test uses, made once per test binary in a temporary directory
// (removed at exit):
//   ca/     ca.pem; member-127.0.0.1_4000 (4 vnodes), member-127.0.0.1_4001; client-alice
//           (read), client-bob (write), client-carol (admin); and on request hand-made
//           certificates of this CA that carry no acceptable identity (BadCerts)
//   other/  ca.pem of a second CA; member-127.0.0.1_4000 signed by it
class Certs {
 public:
  static const Certs& Get() {
    static const Certs certs;
    return certs;
  }
  ~Certs() {
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }

  const std::string& skip_reason() const { return skip_reason_; }
  const std::string& error() const { return error_; }
  const std::string& root() const { return root_; }
  // DIR/BASE.pem, DIR/BASE.key and DIR/ca.pem.
  TlsFiles Files(const std::string& dir, const std::string& base) const {
    const std::string d = root_ + "/" + dir + "/";
    return TlsFiles{d + base + ".pem", d + base + ".key", d + "ca.pem"};
  }

  // The hand-made certificates of ca/ and the subjectAltName each carries.
  static std::vector<std::pair<std::string, std::string>> BadCerts() {
    return {
        {"leading-zero-port", "URI:chord-member://127.0.0.1:04001"},
        {"leading-zero-octet", "URI:chord-member://127.0.0.01:4001"},
        {"host-name", "URI:chord-member://localhost:4001"},
        {"vnode-suffix", "URI:chord-member://127.0.0.1:4001#1"},
        {"zero-vnodes", "URI:chord-member://127.0.0.1:4001?vnodes=0"},
        {"too-many-vnodes", "URI:chord-member://127.0.0.1:4001?vnodes=65"},
        {"vnodes-not-a-number", "URI:chord-member://127.0.0.1:4001?vnodes=4x"},
        {"unknown-role", "URI:chord-client://mallory?role=root"},
        {"no-role", "URI:chord-client://mallory"},
        {"other-scheme", "URI:https://127.0.0.1:4001"},
        {"ip-only", "IP:127.0.0.1"},
    };
  }

  // Makes the BadCerts, signed by ca/ with the openssl CLI directly (certs.sh refuses such
  // names); what went wrong, or "". Only the test of them calls this.
  std::string MakeBadCerts() const {
    const std::string d = root_ + "/ca/";
    std::string script = "set -e";
    for (auto [base, san] : BadCerts()) {
      // '#' starts a comment in an OpenSSL configuration file.
      for (size_t i = san.find('#'); i != std::string::npos; i = san.find('#', i + 2)) {
        san.insert(i, 1, '\\');
      }
      const std::string p = Quote(d + base);
      if (!WriteFile(d + base + ".cnf",
                     "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n[leaf]\n"
                     "basicConstraints = critical, CA:FALSE\n"
                     "extendedKeyUsage = serverAuth, clientAuth\n"
                     "subjectAltName = " +
                         san + "\n")) {
        return "cannot write " + d + base + ".cnf";
      }
      script += "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -noenc -keyout " +
                p + ".key -out " + p + ".pem -subj /CN=" + base + " -CA " + Quote(d + "ca.pem") +
                " -CAkey " + Quote(d + "ca.key") + " -config " + p +
                ".cnf -extensions leaf -days 30";
    }
    const CommandRun run = Shell(script);
    if (run.exit_code != 0) return "openssl could not sign a hand-made certificate: " + run.output;
    return "";
  }

 private:
  Certs() {
    if (access(CertsScript().c_str(), R_OK) != 0) {
      skip_reason_ = CertsScript() + " is missing";
      return;
    }
    if (Shell("command -v openssl").exit_code != 0) {
      skip_reason_ = "the openssl command is missing (Debian package openssl)";
      return;
    }
    std::string pattern =
        (std::filesystem::temp_directory_path() / "chord_tls_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      error_ = "cannot make a temporary directory like " + pattern;
      return;
    }
    root_ = pattern;
    const std::string script = "bash " + Quote(CertsScript()) + " ";
    const std::string ca = Quote(root_ + "/ca");
    const std::string other = Quote(root_ + "/other");
    for (const std::string& args : {
             "ca " + ca,
             "member " + ca + " 127.0.0.1:4000 --vnodes 4",
             "member " + ca + " 127.0.0.1:4001",
             "client " + ca + " alice --role read",
             "client " + ca + " bob --role write",
             "client " + ca + " carol --role admin",
             "ca " + other,
             "member " + other + " 127.0.0.1:4000",
         }) {
      const CommandRun run = Shell(script + args);
      if (run.exit_code != 0) {
        error_ = "certs.sh " + args + " failed (exit " + std::to_string(run.exit_code) +
                 "): " + run.output;
        return;
      }
    }
  }

  std::string skip_reason_;
  std::string error_;
  std::string root_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Certs::Get().skip_reason().empty()) GTEST_SKIP() << Certs::Get().skip_reason();
    ASSERT_EQ(Certs::Get().error(), "");
  }

  static TlsFiles Files(const std::string& dir, const std::string& base) {
    return Certs::Get().Files(dir, base);
  }
  static const std::string& Root() { return Certs::Get().root(); }

  static std::unique_ptr<TlsContext> Context(const TlsFiles& files) {
    Result<std::unique_ptr<TlsContext>> ctx = TlsContext::Create(files);
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    return ctx.ok() ? std::move(ctx).value() : nullptr;
  }
};

// Exactly one sentence: no line breaks, no sentence boundary inside, no closing period.
void ExpectOneSentence(const std::string& message) {
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find(". "), std::string::npos) << message;
  EXPECT_NE(message.back(), '.') << message;
}

struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};

std::unique_ptr<X509, X509Free> ReadCert(const std::string& path) {
  std::unique_ptr<X509, X509Free> cert;
  if (FILE* f = fopen(path.c_str(), "r")) {
    cert.reset(PEM_read_X509(f, nullptr, nullptr, nullptr));
    fclose(f);
  }
  return cert;
}

// ---- scripts/certs.sh ----

class TlsCertsScriptTest : public TlsTest {};

TEST_F(TlsCertsScriptTest, KeysArePrivateAndCertificatesVerify) {
  for (const char* base : {"ca", "member-127.0.0.1_4000", "client-alice"}) {
    SCOPED_TRACE(base);
    struct stat st;
    ASSERT_EQ(stat((Root() + "/ca/" + base + ".key").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  const CommandRun run = Shell("openssl verify -CAfile " + Quote(Root() + "/ca/ca.pem") + " " +
                               Quote(Root() + "/ca/member-127.0.0.1_4001.pem") + " " +
                               Quote(Root() + "/ca/client-bob.pem"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const CommandRun foreign = Shell("openssl verify -CAfile " + Quote(Root() + "/ca/ca.pem") + " " +
                                   Quote(Root() + "/other/member-127.0.0.1_4000.pem"));
  EXPECT_NE(foreign.exit_code, 0) << foreign.output;
}

TEST_F(TlsCertsScriptTest, RefusesToReplaceTheCa) {
  const std::string before = ReadFile(Root() + "/ca/ca.pem");
  const CommandRun run = Shell("bash " + Quote(CertsScript()) + " ca " + Quote(Root() + "/ca"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("--force"), std::string::npos) << run.output;
  EXPECT_EQ(ReadFile(Root() + "/ca/ca.pem"), before);
}

TEST_F(TlsCertsScriptTest, RefusesAddressesThatAreNotCanonical) {
  for (const char* addr : {"127.0.0.1:04001", "127.0.0.01:4001", "localhost:4001", "127.0.0.1",
                           "127.0.0.1:0", "127.0.0.1:65536", "1.2.3.256:4001", "1.2.3:4001"}) {
    SCOPED_TRACE(addr);
    const CommandRun run = Shell("bash " + Quote(CertsScript()) + " member " +
                                 Quote(Root() + "/ca") + " " + Quote(addr));
    EXPECT_EQ(run.exit_code, 2) << run.output;
    ASSERT_FALSE(run.output.empty());
    EXPECT_EQ(run.output.find('\n'), run.output.size() - 1) << "one line: " << run.output;
  }
  for (const char* args : {"127.0.0.1:4001 --vnodes 0", "127.0.0.1:4001 --vnodes 65",
                           "127.0.0.1:4001 --vnodes 04", "127.0.0.1:4001 --name ../x"}) {
    SCOPED_TRACE(args);
    const CommandRun run =
        Shell("bash " + Quote(CertsScript()) + " member " + Quote(Root() + "/ca") + " " + args);
    EXPECT_EQ(run.exit_code, 2) << run.output;
  }
  const CommandRun role = Shell("bash " + Quote(CertsScript()) + " client " +
                                Quote(Root() + "/ca") + " eve --role root");
  EXPECT_EQ(role.exit_code, 2) << role.output;
}

// ---- TlsContext ----

class TlsContextTest : public TlsTest {};

TEST_F(TlsContextTest, LoadsAMemberAndReadsItsIdentity) {
  const auto ctx = Context(Files("ca", "member-127.0.0.1_4000"));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->own().role, Role::kMember);
  EXPECT_EQ(ctx->own().member_addr, "127.0.0.1:4000");
  EXPECT_EQ(ctx->own().vnodes, 4u);
  EXPECT_EQ(ctx->own().name, "127.0.0.1:4000");
  const Sender sender = ctx->own().ToSender();
  EXPECT_EQ(sender.role, Role::kMember);
  EXPECT_EQ(sender.member_addr, "127.0.0.1:4000");
  EXPECT_EQ(sender.member_vnodes, 4u);

  const auto one = Context(Files("ca", "member-127.0.0.1_4001"));
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->own().role, Role::kMember);
  EXPECT_EQ(one->own().member_addr, "127.0.0.1:4001");
  EXPECT_EQ(one->own().vnodes, 1u);
}

TEST_F(TlsContextTest, ReadsClientRoles) {
  for (const auto& [name, role] : std::vector<std::pair<std::string, Role>>{
           {"alice", Role::kReader}, {"bob", Role::kWriter}, {"carol", Role::kAdmin}}) {
    SCOPED_TRACE(name);
    const auto ctx = Context(Files("ca", "client-" + name));
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ctx->own().role, role);
    EXPECT_EQ(ctx->own().name, name);
    EXPECT_EQ(ctx->own().member_addr, "");
    EXPECT_EQ(ctx->own().ToSender().role, role);
  }
}

TEST_F(TlsContextTest, MissingFilesAreOneSentenceNamingTheFile) {
  const TlsFiles good = Files("ca", "member-127.0.0.1_4001");
  const std::string missing = Root() + "/ca/no-such-file.pem";
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    TlsFiles files = good;
    (which == 0 ? files.cert : which == 1 ? files.key : files.ca) = missing;
    const auto ctx = TlsContext::Create(files);
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(ctx.status().message().find(missing), std::string::npos) << ctx.status().message();
    ExpectOneSentence(ctx.status().message());
  }
  TlsFiles partial = good;
  partial.ca.clear();
  const auto ctx = TlsContext::Create(partial);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.status().message().find("--tls-ca"), std::string::npos);
  ExpectOneSentence(ctx.status().message());
}

TEST_F(TlsContextTest, AKeyOfAnotherCertificateIsOneSentenceNamingBoth) {
  TlsFiles files = Files("ca", "member-127.0.0.1_4000");
  files.key = Files("ca", "member-127.0.0.1_4001").key;
  const auto ctx = TlsContext::Create(files);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), Status::Code::kInvalidArgument);
  const std::string& message = ctx.status().message();
  EXPECT_NE(message.find("does not belong to the certificate"), std::string::npos) << message;
  EXPECT_NE(message.find(files.key), std::string::npos) << message;
  EXPECT_NE(message.find(files.cert), std::string::npos) << message;
  ExpectOneSentence(message);
}

TEST_F(TlsContextTest, FilesOfTheWrongKindAreOneSentence) {
  const TlsFiles good = Files("ca", "member-127.0.0.1_4001");
  for (TlsFiles files : {TlsFiles{good.key, good.key, good.ca},    // a key as the certificate
                         TlsFiles{good.cert, good.cert, good.ca},  // a certificate as the key
                         TlsFiles{good.cert, good.key, good.key}}) {
    SCOPED_TRACE(files.cert + " " + files.key + " " + files.ca);
    const auto ctx = TlsContext::Create(files);
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().code(), Status::Code::kInvalidArgument);
    ExpectOneSentence(ctx.status().message());
  }
}

TEST_F(TlsContextTest, FailuresLeaveNoOpenSslErrorBehind) {
  TlsFiles files = Files("ca", "member-127.0.0.1_4000");
  files.key = Files("ca", "member-127.0.0.1_4001").key;
  EXPECT_FALSE(TlsContext::Create(files).ok());
  files = Files("ca", "member-127.0.0.1_4000");
  files.ca = Root() + "/ca/no-such-file.pem";
  EXPECT_FALSE(TlsContext::Create(files).ok());
  // A stale error would make SSL_get_error misreport the next session's I/O on this thread.
  EXPECT_EQ(ERR_peek_error(), 0u);
}

// ---- IdentityOf ----

class TlsIdentityTest : public TlsTest {};

TEST_F(TlsIdentityTest, UncheckedNamesAreNobody) {
  EXPECT_EQ(IdentityOf(nullptr).role, Role::kNobody);
  ASSERT_EQ(Certs::Get().MakeBadCerts(), "");
  const auto ca = ReadCert(Root() + "/ca/ca.pem");  // no subject alternative names at all
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(IdentityOf(ca.get()).role, Role::kNobody);
  for (const auto& [base, san] : Certs::BadCerts()) {
    SCOPED_TRACE(base + ": " + san);
    const auto cert = ReadCert(Root() + "/ca/" + base + ".pem");
    ASSERT_NE(cert, nullptr);
    const PeerIdentity id = IdentityOf(cert.get());
    EXPECT_EQ(id.role, Role::kNobody);
    EXPECT_EQ(id.member_addr, "");
    // A context can still be made from it: being nobody is for the peer to judge.
    const auto ctx = Context(Files("ca", base));
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ctx->own().role, Role::kNobody);
  }
}

TEST_F(TlsIdentityTest, MatchesWhatCertsShMade) {
  const auto cert = ReadCert(Root() + "/other/member-127.0.0.1_4000.pem");
  ASSERT_NE(cert, nullptr);
  const PeerIdentity id = IdentityOf(cert.get());
  // IdentityOf reads names; whether the certificate is to be believed is the handshake's job.
  EXPECT_EQ(id.role, Role::kMember);
  EXPECT_EQ(id.member_addr, "127.0.0.1:4000");
  EXPECT_EQ(id.vnodes, 1u);
}

// ---- TlsSession ----

// One end of an in-memory connection.
struct End {
  End(const TlsContext& ctx, bool server) : session(ctx, server) {}
  TlsSession session;
  std::string inbox;  // ciphertext on its way to this end
  std::string plain;  // plaintext this end received
  Status status;      // the first error of Receive
};

// Carries ciphertext between the ends until neither has anything more to say (an end that
// failed takes nothing more, but what it said last, such as an alert, is delivered).
void Exchange(End* a, End* b) {
  for (int round = 0; round < 50 && (!a->inbox.empty() || !b->inbox.empty()); ++round) {
    for (auto [self, other] : {std::pair{a, b}, std::pair{b, a}}) {
      if (self->inbox.empty()) continue;
      std::string cipher = std::move(self->inbox);
      self->inbox.clear();
      if (!self->status.ok()) continue;
      self->status = self->session.Receive(cipher, &self->plain, &other->inbox);
    }
  }
  EXPECT_TRUE(a->inbox.empty() && b->inbox.empty()) << "the ends kept talking";
}

class TlsSessionTest : public TlsTest {
 protected:
  // Handshakes a client of `client_files` with a server of `server_files`; the client sends
  // `early` before the handshake is done.
  void Connect(const TlsFiles& client_files, const TlsFiles& server_files,
               const std::string& early = "") {
    client_ctx_ = Context(client_files);
    server_ctx_ = Context(server_files);
    ASSERT_NE(client_ctx_, nullptr);
    ASSERT_NE(server_ctx_, nullptr);
    client_ = std::make_unique<End>(*client_ctx_, false);
    server_ = std::make_unique<End>(*server_ctx_, true);
    ASSERT_TRUE(client_->session.Send(early, &server_->inbox).ok());
    EXPECT_EQ(server_->inbox, "") << "nothing is sent before the handshake";
    EXPECT_EQ(client_->session.waiting_bytes(), early.size());
    ASSERT_TRUE(client_->session.Start(&server_->inbox).ok());
    EXPECT_FALSE(server_->inbox.empty()) << "the ClientHello";
    Exchange(client_.get(), server_.get());
  }

  // Expects the handshake to have failed on both ends with one sentence each.
  void ExpectRefusedBothWays() {
    EXPECT_FALSE(client_->status.ok());
    EXPECT_FALSE(server_->status.ok());
    EXPECT_FALSE(server_->session.established());
    EXPECT_EQ(server_->plain, "");
    EXPECT_EQ(client_->plain, "");
    for (const End* end : {client_.get(), server_.get()}) {
      ExpectOneSentence(end->status.message());
      EXPECT_NE(end->status.message().find("certificate"), std::string::npos)
          << end->status.message();
    }
  }

  std::unique_ptr<TlsContext> client_ctx_, server_ctx_;
  std::unique_ptr<End> client_, server_;
};

TEST_F(TlsSessionTest, MembersShakeHandsAndTalkBothWays) {
  Connect(Files("ca", "member-127.0.0.1_4000"), Files("ca", "member-127.0.0.1_4001"),
          "sent before the handshake");
  ASSERT_TRUE(client_->status.ok()) << client_->status.ToString();
  ASSERT_TRUE(server_->status.ok()) << server_->status.ToString();
  ASSERT_TRUE(client_->session.established());
  ASSERT_TRUE(server_->session.established());
  EXPECT_EQ(client_->session.waiting_bytes(), 0u);
  EXPECT_EQ(server_->plain, "sent before the handshake");

  EXPECT_EQ(server_->session.peer().role, Role::kMember);
  EXPECT_EQ(server_->session.peer().member_addr, "127.0.0.1:4000");
  EXPECT_EQ(server_->session.peer().vnodes, 4u);
  EXPECT_EQ(client_->session.peer().role, Role::kMember);
  EXPECT_EQ(client_->session.peer().member_addr, "127.0.0.1:4001");
  EXPECT_EQ(client_->session.peer().vnodes, 1u);

  // Both ways, and more than one TLS record (16 KiB each) at a time.
  std::string big(100000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 251);
  ASSERT_TRUE(server_->session.Send("reply", &client_->inbox).ok());
  ASSERT_TRUE(client_->session.Send(big, &server_->inbox).ok());
  ASSERT_TRUE(client_->session.Send("tail", &server_->inbox).ok());
  Exchange(client_.get(), server_.get());
  ASSERT_TRUE(client_->status.ok()) << client_->status.ToString();
  ASSERT_TRUE(server_->status.ok()) << server_->status.ToString();
  EXPECT_EQ(client_->plain, "reply");
  EXPECT_EQ(server_->plain, "sent before the handshake" + big + "tail");
}

TEST_F(TlsSessionTest, ByteByByteDeliveryWorksToo) {
  client_ctx_ = Context(Files("ca", "client-alice"));
  server_ctx_ = Context(Files("ca", "member-127.0.0.1_4001"));
  ASSERT_NE(client_ctx_, nullptr);
  ASSERT_NE(server_ctx_, nullptr);
  TlsSession client(*client_ctx_, false);
  TlsSession server(*server_ctx_, true);
  std::string to_server, to_client, client_plain, server_plain;
  ASSERT_TRUE(client.Send("get k", &to_server).ok());
  ASSERT_TRUE(client.Start(&to_server).ok());
  for (int round = 0; round < 20 && (!to_server.empty() || !to_client.empty()); ++round) {
    const std::string for_server = std::move(to_server), for_client = std::move(to_client);
    to_server.clear();
    to_client.clear();
    for (char c : for_server) {
      ASSERT_TRUE(server.Receive(std::string_view(&c, 1), &server_plain, &to_client).ok());
    }
    for (char c : for_client) {
      ASSERT_TRUE(client.Receive(std::string_view(&c, 1), &client_plain, &to_server).ok());
    }
  }
  ASSERT_TRUE(server.established());
  ASSERT_TRUE(client.established());
  EXPECT_EQ(server_plain, "get k");
  EXPECT_EQ(server.peer().role, Role::kReader);
  EXPECT_EQ(server.peer().name, "alice");
  EXPECT_EQ(client.peer().role, Role::kMember);
  EXPECT_EQ(client.peer().member_addr, "127.0.0.1:4001");
}

TEST_F(TlsSessionTest, AStaleOpenSslErrorOnTheThreadIsNotTheSessions) {
  Connect(Files("ca", "member-127.0.0.1_4000"), Files("ca", "member-127.0.0.1_4001"));
  ASSERT_TRUE(server_->session.established());
  ASSERT_TRUE(client_->session.established());
  // Some other OpenSSL call on this thread failed and left its error behind.
  ERR_raise(ERR_LIB_SSL, SSL_R_BAD_LENGTH);
  ASSERT_TRUE(client_->session.Send("after", &server_->inbox).ok());
  ERR_raise(ERR_LIB_SSL, SSL_R_BAD_LENGTH);
  Exchange(client_.get(), server_.get());
  EXPECT_TRUE(server_->status.ok()) << server_->status.ToString();
  EXPECT_EQ(server_->plain, "after");
}

TEST_F(TlsSessionTest, AClientCertificateNamesItsRole) {
  Connect(Files("ca", "client-carol"), Files("ca", "member-127.0.0.1_4000"), "dump");
  ASSERT_TRUE(server_->status.ok()) << server_->status.ToString();
  ASSERT_TRUE(server_->session.established());
  EXPECT_EQ(server_->session.peer().role, Role::kAdmin);
  EXPECT_EQ(server_->session.peer().name, "carol");
  EXPECT_EQ(server_->plain, "dump");
}

TEST_F(TlsSessionTest, AClientOfAnotherCaIsRefused) {
  Connect(Files("other", "member-127.0.0.1_4000"), Files("ca", "member-127.0.0.1_4001"), "x");
  ExpectRefusedBothWays();
}

TEST_F(TlsSessionTest, AServerOfAnotherCaIsRefused) {
  Connect(Files("ca", "member-127.0.0.1_4000"), Files("other", "member-127.0.0.1_4000"), "x");
  ExpectRefusedBothWays();
}

TEST_F(TlsSessionTest, TheServerRefusesAClientOfAnotherCaThatTrustsIt) {
  // The client trusts the server's CA, so only the server's check stands in the way.
  TlsFiles intruder = Files("other", "member-127.0.0.1_4000");
  intruder.ca = Files("ca", "member-127.0.0.1_4001").ca;
  Connect(intruder, Files("ca", "member-127.0.0.1_4001"), "put k v");
  ExpectRefusedBothWays();
  EXPECT_NE(server_->status.message().find("not signed by the cluster CA"), std::string::npos)
      << server_->status.message();
  EXPECT_EQ(server_->session.peer().role, Role::kNobody);
}

TEST_F(TlsSessionTest, TheClientRefusesAServerOfAnotherCaThatTrustsIt) {
  TlsFiles impostor = Files("other", "member-127.0.0.1_4000");
  impostor.ca = Files("ca", "member-127.0.0.1_4001").ca;
  Connect(Files("ca", "member-127.0.0.1_4001"), impostor, "put k v");
  ExpectRefusedBothWays();
  EXPECT_FALSE(client_->session.established());
  EXPECT_NE(client_->status.message().find("not signed by the cluster CA"), std::string::npos)
      << client_->status.message();
  EXPECT_EQ(client_->session.peer().role, Role::kNobody);
}

TEST_F(TlsSessionTest, AClientCertificateCannotServe) {
  // Its extended key usage is clientAuth only: signed by the right CA, but not for a server.
  Connect(Files("ca", "member-127.0.0.1_4000"), Files("ca", "client-bob"), "x");
  ExpectRefusedBothWays();
  EXPECT_NE(client_->status.message().find("unsuitable certificate purpose"), std::string::npos)
      << client_->status.message();
  EXPECT_EQ(client_->status.message().find("not signed by the cluster CA"), std::string::npos)
      << client_->status.message();
}

}  // namespace
}  // namespace chord
