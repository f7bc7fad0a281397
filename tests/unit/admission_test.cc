// Who may say what: AdmissionProblem for every role against every kind of request, and the
// rule that a member speaks only for itself (its certified process, canonical spelling, vnode
// index below its certified count).

#include "node/core/admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/messages.h"
#include "protocol/node_ref.h"

namespace chord {
namespace {

using Role = Sender::Role;

const NodeRef kSelf = NodeRef::ForAddress("10.0.0.1:4000");
const NodeRef kOther = NodeRef::ForAddress("10.0.0.2:4000");

std::vector<wire::Envelope> MemberMessages(const NodeRef& as) {
  wire::Record r;
  r.set_key("k");
  return {msg::GetState(),
          msg::Ping(),
          msg::StabilizeNow(),
          msg::Notify(as, false),
          msg::FindNextHop(Id::Sha1("k")),
          msg::Leave(as, std::nullopt, {}),
          msg::Transfer(as, {r}, true),
          msg::Replicate(as, {r}),
          msg::SyncDigest(as, Id(), Id(), {1}),
          msg::SyncPull(Id(), Id(), 1, {0}, 1000, std::nullopt),
          msg::Purge({r}),
          msg::ReplicaSet()};
}

wire::Envelope ListKeys() {
  wire::Envelope e;
  e.mutable_list_keys()->set_limit(10);
  return e;
}

TEST(AdmissionTest, WithoutAuthenticationEverythingIsAllowed) {
  for (const auto& e : MemberMessages(kOther)) EXPECT_EQ(AdmissionProblem(Sender{}, e), "");
  EXPECT_EQ(AdmissionProblem(Sender{}, ListKeys()), "");
}

TEST(AdmissionTest, ClientsOfEveryRoleAreRefusedEveryMemberMessage) {
  for (Role role : {Role::kReader, Role::kWriter, Role::kAdmin, Role::kNobody}) {
    for (const auto& e : MemberMessages(kSelf)) {
      EXPECT_NE(AdmissionProblem(Sender::Client(role), e), "")
          << static_cast<int>(role) << " " << e.ShortDebugString();
    }
  }
}

TEST(AdmissionTest, RolesLimitClientRequests) {
  const Sender reader = Sender::Client(Role::kReader);
  const Sender writer = Sender::Client(Role::kWriter);
  const Sender admin = Sender::Client(Role::kAdmin);
  const Sender nobody = Sender::Client(Role::kNobody);
  EXPECT_EQ(AdmissionProblem(reader, msg::Get("k")), "");
  EXPECT_EQ(AdmissionProblem(reader, msg::Lookup("k")), "");
  EXPECT_NE(AdmissionProblem(reader, msg::Put("k", "v")), "");
  EXPECT_NE(AdmissionProblem(reader, msg::Delete("k")), "");
  EXPECT_NE(AdmissionProblem(reader, ListKeys()), "");
  EXPECT_EQ(AdmissionProblem(writer, msg::Put("k", "v")), "");
  EXPECT_EQ(AdmissionProblem(writer, msg::Delete("k")), "");
  EXPECT_NE(AdmissionProblem(writer, ListKeys()), "");
  EXPECT_EQ(AdmissionProblem(admin, ListKeys()), "");
  EXPECT_NE(AdmissionProblem(nobody, msg::Get("k")), "");
  EXPECT_EQ(AdmissionProblem(reader, msg::Put("k", "v")),
            "this certificate may only read; writing needs a writer or admin certificate");
  // Direct requests (the client computed the owner) follow the same roles.
  EXPECT_EQ(AdmissionProblem(reader, msg::AsDirect(msg::Get("k"))), "");
  EXPECT_NE(AdmissionProblem(reader, msg::AsDirect(msg::Put("k", "v"))), "");
  EXPECT_EQ(AdmissionProblem(writer, msg::AsDirect(msg::Put("k", "v"))), "");
}

TEST(AdmissionTest, AClientsWriteLosesWhatOnlyACoordinatorMaySet) {
  wire::Envelope put = msg::AsDirect(msg::Put("k", "v"));
  put.mutable_put()->set_version(uint64_t{1} << 62);
  put.mutable_put()->set_writer(std::string(20, 'w'));
  put.mutable_put()->set_suspect(std::string(20, 's'));
  const wire::Envelope clean = ClientRequest(put);
  EXPECT_EQ(clean.put().version(), 0u);
  EXPECT_EQ(clean.put().writer(), "");
  EXPECT_EQ(clean.put().suspect(), "");
  EXPECT_TRUE(clean.put().direct());
  EXPECT_EQ(clean.put().value(), "v");
  // A read of a member's copy (its answer names the record's writer) is a member's request.
  wire::Envelope get = msg::AsDirect(msg::Get("k"));
  get.mutable_get()->set_from_replica(true);
  EXPECT_TRUE(CarriesCoordinatorFields(get));
  EXPECT_FALSE(ClientRequest(get).get().from_replica());
  EXPECT_EQ(ClientRequest(get).get().key(), "k");
  // So is a condition read, and the asker it names.
  const wire::Envelope condition = msg::ReplicaGet("k", /*for_condition=*/true, &kOther);
  EXPECT_TRUE(CarriesCoordinatorFields(condition));
  EXPECT_FALSE(ClientRequest(condition).get().for_condition());
  EXPECT_FALSE(ClientRequest(condition).get().has_asker());
  EXPECT_TRUE(IsClient(Sender::Client(Role::kWriter)));
  EXPECT_FALSE(IsClient(Sender{}));
  EXPECT_FALSE(IsClient(Sender::Member("10.0.0.1:4000", 1)));
}

TEST(AdmissionTest, AMemberSpeaksOnlyForItself) {
  const Sender member = Sender::Member("10.0.0.1:4000", 1);
  for (const auto& e : MemberMessages(kSelf)) {
    EXPECT_EQ(AdmissionProblem(member, e), "") << e.ShortDebugString();
  }
  const Sender with_vnodes = Sender::Member("10.0.0.1:4000", 2);
  for (const std::string addr : {"10.0.0.1:4000#0", "10.0.0.1:4000#1"}) {
    EXPECT_EQ(AdmissionProblem(with_vnodes, msg::Notify(NodeRef::ForAddress(addr), false)), "");
  }
  const std::vector<std::pair<Sender, std::string>> not_itself = {
      {member, "10.0.0.2:4000"},         // another member
      {member, "10.0.0.1:04000"},        // another spelling
      {member, "10.0.0.01:4000"},        // another spelling
      {member, "10.0.0.1:4000#0"},       // an alias of a process without vnodes
      {member, "10.0.0.1:4000#1"},       // a vnode it does not have
      {member, "10.0.0.1:4001"},         // another port of the same host
      {with_vnodes, "10.0.0.1:4000"},    // the bare address of a process with vnodes
      {with_vnodes, "10.0.0.1:4000#2"},  // a vnode it does not have
      {with_vnodes, "10.0.0.1:4000#01"}, // another spelling
  };
  for (const auto& [who, addr] : not_itself) {
    const NodeRef n = NodeRef::ForAddress(addr);
    EXPECT_NE(AdmissionProblem(who, msg::ReplicaGet("k", /*for_condition=*/true, &n)), "") << addr;
    for (const auto& e : {msg::Notify(n, false), msg::Leave(n, std::nullopt, {}),
                          msg::Transfer(n, {}, true), msg::Replicate(n, {}),
                          msg::SyncDigest(n, Id(), Id(), {})}) {
      EXPECT_NE(AdmissionProblem(who, e), "") << addr << " " << e.ShortDebugString();
    }
  }
  // A condition read naming the member itself as its asker.
  EXPECT_EQ(AdmissionProblem(member, msg::ReplicaGet("k", /*for_condition=*/true, &kSelf)), "");
  // A member is also a client of every data operation.
  EXPECT_EQ(AdmissionProblem(member, msg::Put("k", "v")), "");
  EXPECT_EQ(AdmissionProblem(member, ListKeys()), "");
}

}  // namespace
}  // namespace chord
