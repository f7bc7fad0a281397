// Multi-process tests of who may say what on a ring that runs mutual TLS: clients need a
// certificate of the cluster CA and can do only what its role allows; a process that is not a
// member cannot make any ring or replication message take effect; a member speaks only for
// itself, under its one canonical address; a node with another CA's certificate cannot join;
// and a node on a non-loopback address will not start in the clear unless told --insecure.
// Certificates are made with scripts/certs.sh in each test's own directory.

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "protocol/frame.h"
#include "protocol/messages.h"
#include "protocol/node_ref.h"
#include "protocol/tls_context.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/dribbling_peer.h"
#include "tests/integration/raw_connection.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

bool IsForbidden(const Result<wire::Envelope>& r) {
  return !r.ok() && r.status().message().find("FORBIDDEN") != std::string::npos;
}
std::string Explain(const Result<wire::Envelope>& r) {
  return r.ok() ? "answered " + r->ShortDebugString() : r.status().message();
}

wire::Record Rec(const std::string& key, const std::string& value, uint64_t version) {
  wire::Record r;
  r.set_key(key);
  r.set_value(value);
  r.set_version(version);
  r.set_writer(std::string(20, 'w'));
  return r;
}

class SecurityTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    certs_ = cluster().dir() + "/certs";
    other_ = cluster().dir() + "/other-ca";
    ASSERT_TRUE(Certs({"ca", certs_}));
    ASSERT_TRUE(Certs({"ca", other_}));
    for (const char* role : {"read", "write", "admin"}) {
      ASSERT_TRUE(Certs({"client", certs_, role, "--role", role}));
    }
    ASSERT_TRUE(Certs({"client", other_, "admin", "--role", "admin"}));
    admin_ = Context(certs_, "client-admin");
    ASSERT_NE(admin_, nullptr);
    // The test's clients, and the chordctl the fixture runs, are admins.
    ASSERT_TRUE(UseClientTls(certs_, "client-admin"));
  }
  void TearDown() override {
    ClearClientTls();
    ClusterTest::TearDown();
  }

  bool Certs(std::vector<std::string> args) {
    return RunCertsScript(std::move(args), cluster().dir());
  }
  // The TLS context of DIR/BASE.pem and .key with DIR's CA.
  static std::shared_ptr<const TlsContext> Context(const std::string& dir,
                                                   const std::string& base) {
    auto ctx = TlsContext::Create(
        TlsFiles{dir + "/" + base + ".pem", dir + "/" + base + ".key", dir + "/ca.pem"});
    EXPECT_TRUE(ctx.ok()) << ctx.status().message();
    if (!ctx.ok()) return nullptr;
    return std::shared_ptr<const TlsContext>(std::move(ctx).value());
  }
  static std::string MemberBase(int port) { return "member-127.0.0.1_" + std::to_string(port); }
  std::shared_ptr<const TlsContext> MemberContext(int port, const std::string& dir = "") {
    const std::string d = dir.empty() ? certs_ : dir;
    if (!Certs({"member", d, LocalAddr(port)})) return nullptr;
    return Context(d, MemberBase(port));
  }
  NodeOptions TlsNode(int port, const std::string& dir = "") {
    const std::string d = dir.empty() ? certs_ : dir;
    EXPECT_TRUE(Certs({"member", d, LocalAddr(port)}));
    NodeOptions o = WithReplicas(FastNodes(), 3);
    o.extra_args = {"--tls-cert", d + "/" + MemberBase(port) + ".pem",
                    "--tls-key",  d + "/" + MemberBase(port) + ".key",
                    "--tls-ca",   d + "/ca.pem"};
    return o;
  }
  // n TLS nodes, the first alone, the others joining through it; their addresses.
  std::vector<std::string> StartTlsRing(int n) {
    std::vector<std::string> addrs;
    for (int i = 0; i < n; ++i) {
      const int port = PickFreePort();
      NodeProcess* node =
          cluster().StartNodeOnPort(port, TlsNode(port), addrs.empty() ? "" : addrs.front());
      if (node == nullptr) return {};
      addrs.push_back(node->addr());
    }
    EXPECT_TRUE(WaitForRing(cluster(), addrs));
    return addrs;
  }
  // `request` sent to `addr` over a connection made with `ctx` (null: plain TCP).
  Result<wire::Envelope> CallAs(const std::shared_ptr<const TlsContext>& ctx,
                                const std::string& addr, wire::Envelope request) {
    ChordClient::UseTls(ctx);
    ChordClient client(addr, 3000);
    ChordClient::UseTls(admin_);
    return client.Call(std::move(request));
  }
  // Every node answers `value` for `key`.
  void ExpectEveryNodeReads(const std::vector<std::string>& addrs, const std::string& key,
                            const std::string& value) {
    for (const std::string& addr : addrs) {
      ChordClient client(addr);
      auto got = client.Get(key);
      ASSERT_TRUE(IsOk(got)) << addr << ": " << Describe(got);
      EXPECT_EQ(got->value(), value) << "read through " << addr;
    }
  }

  std::string certs_;
  std::string other_;
  std::shared_ptr<const TlsContext> admin_;
};

TEST_F(SecurityTest, ClientsNeedACertificateOfTheClusterAndTheirRoleLimitsThem) {
  const auto addrs = StartTlsRing(3);
  ASSERT_EQ(addrs.size(), 3u);
  ASSERT_TRUE(IsOk(ChordClient(addrs[0]).Put("k", "v")));

  // No certificate: the node closes the plain connection; nothing is read or written.
  {
    ChordClient::UseTls(nullptr);
    ChordClient plain(addrs[1], 3000);
    auto put = plain.Put("k", "plain");
    auto get = plain.Get("k");
    ChordClient::UseTls(admin_);
    EXPECT_FALSE(put.ok()) << Describe(put);
    EXPECT_FALSE(get.ok()) << Describe(get);
  }
  // A client certificate of another CA: the handshake fails.
  {
    auto foreign = Context(other_, "client-admin");
    auto r = CallAs(foreign, addrs[1], msg::Put("k", "foreign"));
    EXPECT_FALSE(r.ok()) << Explain(r);
  }
  // A reader reads, and nothing else.
  auto reader = Context(certs_, "client-read");
  {
    auto got = CallAs(reader, addrs[2], msg::Get("k"));
    ASSERT_TRUE(got.ok()) << Explain(got);
    EXPECT_EQ(got->data_resp().value(), "v");
    EXPECT_TRUE(IsForbidden(CallAs(reader, addrs[2], msg::Put("k", "reader"))));
    EXPECT_TRUE(IsForbidden(CallAs(reader, addrs[2], msg::Delete("k"))));
    wire::Envelope list;
    list.mutable_list_keys()->set_limit(10);
    EXPECT_TRUE(IsForbidden(CallAs(reader, addrs[2], list)));
  }
  // A writer writes but cannot list every key; an admin can.
  auto writer = Context(certs_, "client-write");
  {
    auto put = CallAs(writer, addrs[2], msg::Put("w", "by writer"));
    ASSERT_TRUE(put.ok()) << Explain(put);
    EXPECT_EQ(put->data_resp().code(), wire::OK);
    wire::Envelope list;
    list.mutable_list_keys()->set_limit(10);
    EXPECT_TRUE(IsForbidden(CallAs(writer, addrs[2], list)));
    EXPECT_TRUE(CallAs(admin_, addrs[2], list).ok());
  }
  ExpectEveryNodeReads(addrs, "k", "v");
  ExpectEveryNodeReads(addrs, "w", "by writer");

  // chordctl carries credentials from the environment and says what was refused.
  ::setenv("CHORD_TLS_CERT", (certs_ + "/client-read.pem").c_str(), 1);
  ::setenv("CHORD_TLS_KEY", (certs_ + "/client-read.key").c_str(), 1);
  const CommandResult put = cluster().Chordctl({"--node", addrs[0], "put", "k", "cli"});
  const CommandResult get = cluster().Chordctl({"--node", addrs[0], "get", "k"});
  EXPECT_NE(put.exit_code, 0);
  EXPECT_NE(put.err.find("may only read"), std::string::npos) << put.err;
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out, "v\n");
}

TEST_F(SecurityTest, AClientIsNotAMember) {
  const auto addrs = StartTlsRing(3);
  ASSERT_EQ(addrs.size(), 3u);
  ASSERT_TRUE(IsOk(ChordClient(addrs[0]).Put("k", "v")));
  const auto ring = SortedRing(addrs);
  const NodeRef x = NodeRef::ForAddress(ring[0].addr);
  const NodeRef y = NodeRef::ForAddress(ring[1].addr);  // x's successor
  const NodeRef fake = NodeRef::ForAddress("127.0.0.1:1");

  // Every ring and replication message from an authenticated client (an admin, even) is
  // refused; each of these took effect before there were roles.
  std::vector<std::pair<std::string, wire::Envelope>> attacks = {
      {"transfer", msg::Transfer(fake, {Rec("k", "PWNED", uint64_t{1} << 63)}, true)},
      {"replicate",
       msg::Replicate(fake, {Rec("k", "PWNED", std::numeric_limits<uint64_t>::max())})},
      {"leave", msg::Leave(x, fake, {y})},
      {"notify", msg::Notify(fake, true)},
      {"sync pull", msg::SyncPull(Id(), Id(), 1, {0}, 1 << 20, std::nullopt)},
      {"purge", msg::Purge({Rec("k", "", 1)})},
      {"get state", msg::GetState()},
      {"ping", msg::Ping()},
      {"stabilize now", msg::StabilizeNow()},
      {"find next hop", msg::FindNextHop(Id::Sha1("k"))},
      {"replica set", msg::ReplicaSet()},
  };
  for (const auto& [name, request] : attacks) {
    for (const std::string& addr : addrs) {
      auto r = CallAs(admin_, addr, request);
      EXPECT_TRUE(IsForbidden(r)) << name << " to " << addr << ": " << Explain(r);
    }
  }
  // A client may send a write straight to the owner it computed (chord-bench --direct), but
  // the owner versions it: a version the client chose is ignored.
  {
    wire::Envelope put = msg::AsDirect(msg::Put("k", "direct"));
    put.mutable_put()->set_version(uint64_t{1} << 62);
    const std::string owner = OwnerOf(Sha1Hex("k"), ring).addr;
    auto r = CallAs(admin_, owner, put);
    ASSERT_TRUE(r.ok()) << Explain(r);
    EXPECT_EQ(r->data_resp().code(), wire::OK);
    EXPECT_LT(r->data_resp().version(), uint64_t{1} << 62);
    ASSERT_TRUE(IsOk(ChordClient(addrs[2]).Put("k", "v")));  // a later write still wins
  }
  // In the clear it does not even get a hearing: the connection is closed.
  {
    RawConnection raw;
    std::string error;
    ASSERT_TRUE(raw.Connect(std::stoi(y.addr.substr(y.addr.rfind(':') + 1)), &error)) << error;
    std::string payload;
    wire::Envelope leave = msg::Leave(x, fake, {y});
    leave.set_request_id(1);
    ASSERT_TRUE(leave.SerializeToString(&payload));
    raw.Send(FrameHeader(static_cast<uint32_t>(payload.size())) + payload);
    EXPECT_TRUE(raw.WaitClosedByPeer(milliseconds(5000)));
  }
  std::this_thread::sleep_for(milliseconds(1500));  // rounds of stabilization and repair
  ExpectEveryNodeReads(addrs, "k", "v");
  std::string why;
  EXPECT_TRUE(ChordctlRingMatches(cluster(), addrs[0], addrs, &why)) << why;
  EXPECT_TRUE(PointersMatch(addrs, &why)) << why;
}

TEST_F(SecurityTest, AMemberSpeaksOnlyForItselfAndOnlyWithinTheDataLimits) {
  const auto addrs = StartTlsRing(3);
  ASSERT_EQ(addrs.size(), 3u);
  ASSERT_TRUE(IsOk(ChordClient(addrs[0]).Put("k", "v")));
  const auto ring = SortedRing(addrs);
  const NodeRef a = NodeRef::ForAddress(ring[0].addr);
  const NodeRef b = NodeRef::ForAddress(ring[1].addr);
  const NodeRef c = NodeRef::ForAddress(ring[2].addr);
  const int a_port = std::stoi(a.addr.substr(a.addr.rfind(':') + 1));
  // The test holds a's member certificate (as a's own process does).
  auto as_a = Context(certs_, MemberBase(a_port));
  ASSERT_NE(as_a, nullptr);

  // Naming another member, another spelling of itself, or a ring position it does not have.
  const NodeRef zeros = NodeRef::ForAddress("127.0.0.1:0" + std::to_string(a_port));
  const NodeRef extra_vnode = NodeRef::ForAddress(a.addr + "#3");
  const std::vector<std::pair<std::string, wire::Envelope>> claims = {
      {"notify naming c", msg::Notify(c, false)},
      {"leave naming c", msg::Leave(c, a, {b})},
      {"transfer from c", msg::Transfer(c, {Rec("k", "PWNED", 1)}, true)},
      {"replicate from c", msg::Replicate(c, {Rec("k", "PWNED", 1)})},
      {"notify with leading zeros", msg::Notify(zeros, false)},
      {"notify as vnode #3", msg::Notify(extra_vnode, false)},
  };
  for (const auto& [name, request] : claims) {
    auto r = CallAs(as_a, b.addr, request);
    EXPECT_TRUE(IsForbidden(r)) << name << ": " << Explain(r);
  }

  // Speaking for itself, a member still cannot store what breaks the data limits: a version
  // far in the future (which would make the next version wrap), a value over 1 MiB.
  for (const std::string& addr : addrs) {
    (void)CallAs(as_a, addr, msg::Replicate(a, {Rec("k", "FUTURE", ~uint64_t{0})}));
    (void)CallAs(as_a, addr, msg::Transfer(a, {Rec("k", "FUTURE", uint64_t{1} << 63)}, true));
    (void)CallAs(as_a, addr,
                 msg::Replicate(a, {Rec("big", std::string(3 << 20, 'x'), uint64_t{1} << 40)}));
  }
  ExpectEveryNodeReads(addrs, "k", "v");
  ASSERT_TRUE(IsOk(ChordClient(addrs[1]).Put("k", "after")));  // versions still move on
  ExpectEveryNodeReads(addrs, "k", "after");
  EXPECT_TRUE(IsNotFound(ChordClient(addrs[2]).Get("big")));

  // A member certificate for an address that is not running: it may notify about itself,
  // but is adopted only once it answers, so the ring stays as it is.
  const int f_port = PickFreePort();
  auto as_f = MemberContext(f_port);
  ASSERT_NE(as_f, nullptr);
  const NodeRef f = NodeRef::ForAddress(LocalAddr(f_port));
  for (int round = 0; round < 5; ++round) {
    for (const std::string& addr : addrs) (void)CallAs(as_f, addr, msg::Notify(f, true));
    std::this_thread::sleep_for(milliseconds(200));
  }
  std::this_thread::sleep_for(milliseconds(1500));
  std::string why;
  EXPECT_TRUE(PointersMatch(addrs, &why)) << why;
  EXPECT_TRUE(ChordctlRingMatches(cluster(), addrs[0], addrs, &why)) << why;
  ExpectEveryNodeReads(addrs, "k", "after");
}

TEST_F(SecurityTest, ANodeWithAnotherClustersCertificateCannotJoin) {
  const auto addrs = StartTlsRing(2);
  ASSERT_EQ(addrs.size(), 2u);
  const int port = PickFreePort();
  NodeProcess stranger(port, cluster().dir() + "/stranger.log");
  NodeOptions o = TlsNode(port, other_);
  std::vector<std::string> args = {"--listen", LocalAddr(port),  "--join", addrs[0],
                                   "--memory", "--stabilize-ms", "200"};
  args.insert(args.end(), o.extra_args.begin(), o.extra_args.end());
  ASSERT_TRUE(stranger.Start(args));
  std::this_thread::sleep_for(milliseconds(3000));
  std::string why;
  EXPECT_TRUE(ChordctlRingMatches(cluster(), addrs[0], addrs, &why)) << why;
  EXPECT_TRUE(PointersMatch(addrs, &why)) << why;
  stranger.Kill();
}

TEST_F(SecurityTest, AJoinAddressThatNeverFinishesItsHandshakeIsDropped) {
  // The first join address answers the node's ClientHello with the head of a 16 KiB
  // handshake record and then a byte every 100 ms: the node joins through the second and
  // closes the first once no handshake has completed within the frame deadline.
  auto peer = std::make_unique<DribblingPeer>(std::string("\x16\x03\x03\x40\x00", 5));
  ASSERT_GT(peer->port(), 0) << "could not listen on 127.0.0.1";
  const auto addrs = StartTlsRing(1);
  ASSERT_EQ(addrs.size(), 1u);
  const int port = PickFreePort();
  NodeOptions o = TlsNode(port);
  o.extra_args.insert(o.extra_args.end(), {"--frame-deadline-ms", "1000"});
  NodeProcess* node = cluster().StartNodeOnPort(port, o, LocalAddr(peer->port()) + "," + addrs[0]);
  ASSERT_NE(node, nullptr);
  EXPECT_GE(peer->accepted(), 1);
  EXPECT_TRUE(PollUntil([&] { return peer->closed_by_node() >= 1; }, milliseconds(8000)))
      << "the node kept a dialed connection whose handshake had dribbled in for 8 s";
  peer.reset();  // the node keeps probing the address it was given; now nothing listens there
  EXPECT_TRUE(WaitForRing(cluster(), {addrs[0], node->addr()}));
}

TEST_F(SecurityTest, StrangersCannotHoldThePlacesKeptForMembers) {
  // A node takes 24 connections, 16 of them kept for members. A stranger at 127.0.0.2 opens
  // 24 connections and stays silent (the handshake deadline is 2 min): it gets the 8 places
  // open to all and at most 4 of those kept for members, so a member at 127.0.0.1 still
  // reaches the node and joins the ring through it.
  const int port = PickFreePort();
  NodeOptions o = TlsNode(port);
  o.extra_args.insert(o.extra_args.end(),
                      {"--max-inbound-connections", "24", "--member-reserved-connections", "16",
                       "--frame-deadline-ms", "120000"});
  NodeProcess* target = cluster().StartNodeOnPort(port, o, "");
  ASSERT_NE(target, nullptr);
  std::vector<RawConnection> stranger(24);
  for (RawConnection& c : stranger) {
    std::string error;
    ASSERT_TRUE(c.Connect(port, &error, "127.0.0.2")) << error;
  }
  std::vector<bool> closed(stranger.size(), false);
  const auto count_closed = [&] {
    for (size_t i = 0; i < stranger.size(); ++i) {
      if (!closed[i] && stranger[i].WaitClosedByPeer(milliseconds(10))) closed[i] = true;
    }
    return static_cast<size_t>(std::count(closed.begin(), closed.end(), true));
  };
  EXPECT_TRUE(PollUntil([&] { return count_closed() >= 24u - 8u - 4u; }, milliseconds(5000)))
      << "the stranger's silent connections held " << 24 - count_closed() << " places";
  const int member_port = PickFreePort();
  NodeProcess* member =
      cluster().StartNodeOnPort(member_port, TlsNode(member_port), target->addr());
  ASSERT_NE(member, nullptr) << "a member could not join while a stranger held connections";
  // Clients, the test's included, find only places kept for members at the target; the member
  // says where it stands.
  EXPECT_TRUE(PollUntil(
      [&] {
        const auto s = StatusOf(cluster(), member->addr());
        return s && (*s)["successors"].is_array() && !(*s)["successors"].empty() &&
               (*s)["successors"][0].value("addr", "") == target->addr() &&
               (*s)["predecessor"].is_object() &&
               (*s)["predecessor"].value("addr", "") == target->addr();
      },
      milliseconds(10000)))
      << "the member did not settle next to the target";
}

TEST_F(SecurityTest, PlacesKeptForMembersCannotOutnumberAllPlaces) {
  const CommandResult r =
      RunCommand({CHORD_NODE_BIN, "--listen", LocalAddr(PickFreePort()), "--memory",
                  "--max-inbound-connections", "20", "--member-reserved-connections", "30"},
                 cluster().dir(), milliseconds(10000));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--member-reserved-connections must be between 0 and "
                       "--max-inbound-connections"),
            std::string::npos)
      << r.err;
}

TEST_F(SecurityTest, AClientThatClosesItsTlsSendingSideStillGetsItsAnswers) {
  // A TLS 1.3 client may send its requests and then close its sending side with close_notify
  // (SSL_shutdown; Go's CloseWrite): the node answers all it was asked, also a get that waits
  // on another node's answer (the key is the other node's), and then closes.
  const auto addrs = StartTlsRing(2);
  ASSERT_EQ(addrs.size(), 2u);
  const std::string key = KeyOwnedBy(addrs[1], addrs, "close_notify");
  ASSERT_FALSE(key.empty());
  const std::string value = "answered after close_notify";
  ChordClient writer(addrs[1]);
  ASSERT_TRUE(IsOk(writer.Put(key, value)));

  const std::string frames = GetAndStatusFrames(key);
  ASSERT_FALSE(frames.empty());
  RawConnection raw;
  std::string error;
  ASSERT_TRUE(raw.Connect(cluster().FindByAddr(addrs[0])->port(), &error)) << error;
  timeval tv{10, 0};  // bounds every read below
  ASSERT_EQ(::setsockopt(raw.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(admin_->ctx()), &SSL_free);
  ASSERT_NE(ssl, nullptr);
  ASSERT_EQ(SSL_set_fd(ssl.get(), raw.fd()), 1);
  ASSERT_EQ(SSL_connect(ssl.get()), 1);
  ASSERT_EQ(SSL_write(ssl.get(), frames.data(), static_cast<int>(frames.size())),
            static_cast<int>(frames.size()));
  ASSERT_GE(SSL_shutdown(ssl.get()), 0);  // close_notify sent

  bool closed = false;
  auto replies = RepliesUntilClosed(
      [&](char* buf, size_t size) -> long {
        const int n = SSL_read(ssl.get(), buf, static_cast<int>(size));
        if (n > 0) return n;
        // The node closes without a close_notify of its own: end of stream, not a timeout.
        return SSL_get_error(ssl.get(), n) == SSL_ERROR_WANT_READ ? -1 : 0;
      },
      &closed);
  EXPECT_TRUE(closed) << "the node did not close the connection once it had answered";
  EXPECT_EQ(replies.count(2), 1u) << "no answer to the status request";
  ASSERT_EQ(replies.count(1), 1u) << "no answer to the get sent before close_notify";
  EXPECT_EQ(replies[1].data_resp().code(), wire::OK) << replies[1].ShortDebugString();
  EXPECT_EQ(replies[1].data_resp().value(), value);
}

TEST_F(SecurityTest, AClientOnAPlaceKeptForMembersIsClosedEvenIfItsHandshakeEndsWithItsInput) {
  // One place of the node is open to all, and a silent connection holds it; the rest are kept
  // for members. A client sends the end of its handshake (Finished), a request and a
  // close_notify in one segment: the node must still see that the peer is not a member and
  // close the connection, not serve the request.
  const int port = PickFreePort();
  NodeOptions o = TlsNode(port);
  o.extra_args.insert(o.extra_args.end(),
                      {"--max-inbound-connections", "8", "--member-reserved-connections", "7"});
  ASSERT_NE(cluster().StartNodeOnPort(port, o, ""), nullptr);
  // The fixture's status client has closed its connection; the node sees it go at once.
  std::this_thread::sleep_for(milliseconds(300));
  RawConnection silent;
  std::string error;
  ASSERT_TRUE(silent.Connect(port, &error, "127.0.0.2")) << error;
  RawConnection raw;  // accepted after the silent one, so on a place kept for members
  ASSERT_TRUE(raw.Connect(port, &error)) << error;
  timeval tv{10, 0};  // bounds every read below
  ASSERT_EQ(::setsockopt(raw.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  // The client's TLS over memory BIOs, so that its last flight is sent at once with the rest.
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(admin_->ctx()), &SSL_free);
  ASSERT_NE(ssl, nullptr);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), in, out);  // owned by ssl now
  SSL_set_connect_state(ssl.get());
  const auto take_output = [&] {
    std::string bytes(static_cast<size_t>(BIO_pending(out)), '\0');
    if (!bytes.empty()) BIO_read(out, bytes.data(), static_cast<int>(bytes.size()));
    return bytes;
  };
  char buf[16384];
  for (int guard = 0; guard < 100 && SSL_do_handshake(ssl.get()) != 1; ++guard) {
    ASSERT_EQ(SSL_get_error(ssl.get(), -1), SSL_ERROR_WANT_READ);
    const std::string flight = take_output();
    ASSERT_EQ(raw.Send(flight), flight.size());  // empty: nothing to send yet
    const ssize_t n = ::recv(raw.fd(), buf, sizeof(buf), 0);
    ASSERT_GT(n, 0) << "the node closed the connection during the handshake";
    BIO_write(in, buf, static_cast<int>(n));
  }
  ASSERT_EQ(SSL_is_init_finished(ssl.get()), 1);
  std::string frame;
  wire::Envelope status;
  status.mutable_status();
  status.set_request_id(1);
  ASSERT_TRUE(EncodeFrame(status, &frame));
  ASSERT_EQ(SSL_write(ssl.get(), frame.data(), static_cast<int>(frame.size())),
            static_cast<int>(frame.size()));
  ASSERT_GE(SSL_shutdown(ssl.get()), 0);
  const std::string last = take_output();  // Finished, the request, close_notify
  ASSERT_EQ(raw.Send(last), last.size());
  std::string answer;
  for (int guard = 0; guard < 1000; ++guard) {
    const ssize_t n = ::recv(raw.fd(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    BIO_write(in, buf, static_cast<int>(n));
  }
  for (int guard = 0; guard < 1000; ++guard) {
    const int n = SSL_read(ssl.get(), buf, sizeof(buf));
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  EXPECT_TRUE(answer.empty()) << "a client on a place kept for members was answered";
}

TEST_F(SecurityTest, ANodeRefusesACertificateThatIsNotItsOwn) {
  const int port = PickFreePort();
  const int other_port = PickFreePort();
  ASSERT_TRUE(Certs({"member", certs_, LocalAddr(other_port)}));
  const CommandResult r =
      RunCommand({CHORD_NODE_BIN, "--listen", LocalAddr(port), "--memory", "--tls-cert",
                  certs_ + "/" + MemberBase(other_port) + ".pem", "--tls-key",
                  certs_ + "/" + MemberBase(other_port) + ".key", "--tls-ca", certs_ + "/ca.pem"},
                 cluster().dir(), milliseconds(10000));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not a member certificate for " + LocalAddr(port)), std::string::npos)
      << r.err;
}

TEST_F(SecurityTest, ANonLoopbackAddressNeedsTlsOrInsecure) {
  const CommandResult r = RunCommand({CHORD_NODE_BIN, "--listen", "10.255.255.1:4000", "--memory"},
                                     cluster().dir(), milliseconds(10000));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--insecure"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "want one sentence: " << r.err;
}

}  // namespace
}  // namespace chord::testing
