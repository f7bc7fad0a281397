// One ChordNode driven through its inputs with no network at all: each script in
// testdata/node_scripts/ (format in its README) feeds requests, answers, failures and clock
// ticks and checks what comes out of the node's Ready and its ring state, line by line. The
// operations of ring maintenance and lookups are stepped one message at a time here.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "node/core/chord_node.h"
#include "node/storage/ledger_store.h"
#include "node/storage/memory_store.h"
#include "protocol/messages.h"
#include "protocol/ring_address.h"
#include "tests/unit/ring_letters.h"

namespace chord {
namespace {

using test_support::RingLetters;

const RingLetters& L() {
  static const RingLetters letters;
  return letters;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string BodyName(const wire::Envelope& e) {
  const auto* f = wire::Envelope::descriptor()->FindFieldByNumber(e.body_case());
  return f == nullptr ? "none" : std::string(f->name());
}

// Runs one script file, case by case.
class ScriptRunner {
 public:
  explicit ScriptRunner(std::string file) : file_(std::move(file)) {}

  void Run() {
    std::ifstream in(std::string(CHORD_TESTDATA_DIR) + "/node_scripts/" + file_);
    ASSERT_TRUE(in) << "cannot read " << file_;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      line_ = n;
      const size_t first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      Execute(line.substr(first));
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(cases_, 0) << file_;
  }

 private:
  struct Sent {
    std::string to;  // letter
    wire::Envelope envelope;
  };

  std::string Where() const { return file_ + ":" + std::to_string(line_) + " (" + case_ + ")"; }

  void Execute(const std::string& line) {
    std::string head = line;
    std::map<std::string, std::string> fields;
    if (const size_t colon = line.find(':'); colon != std::string::npos) {
      head = line.substr(0, colon);
      for (const std::string& f : RingLetters::Words(line.substr(colon + 1))) {
        const size_t eq = f.find('=');
        fields[f.substr(0, eq)] = eq == std::string::npos ? "" : f.substr(eq + 1);
      }
    }
    const auto w = RingLetters::Words(head);
    if (w[0] == "case") {
      case_ = line.substr(5);
      ++cases_;
      node_.reset();
      sent_.clear();
      replies_.clear();
      lookups_.clear();
      records_ = 0;
      now_ = Clock{1'000'000, 1'800'000'000'000};
      return;
    }
    if (w[0] == "node") return MakeNode(w);
    ASSERT_NE(node_, nullptr) << Where() << ": no node yet";
    if (w[0] == "routing") return Routing(w);
    if (w[0] == "records") return Records(std::stoi(w[1]));
    if (w[0] == "record") return RecordIn(fields);
    if (w[0] == "advance") {
      now_.mono_ms += std::stoull(w[1]);
      now_.wall_ms += std::stoull(w[1]);
      node_->Tick(now_);
      return Drain();
    }
    if (w[0] == "lookup") {
      node_->StartLookup(now_, L().Point(w[1]), /*verify_owner=*/false);
      return Drain();
    }
    if (w[0] == "request") {
      // "request TYPE from X as member: ...": the connection's certificate names X.
      const bool member = w.size() > 5 && w[4] == "as" && w[5] == "member";
      return Request(w[1], w[3], fields, member);
    }
    if (w[0] == "reply") return Reply(w[1], w[3], fields);
    if (w[0] == "fail") return Fail(w[1], w[3]);
    if (w[0] == "expect") return Expect(w, fields);
    FAIL() << Where() << ": unknown line " << line;
  }

  void MakeNode(const std::vector<std::string>& w) {
    NodeConfig config;
    config.replicas = 1;
    config.stabilize_ms = 1000;
    config.stabilize_jitter = 0;
    config.rpc_timeout_ms = 300;
    std::vector<std::string> join;
    for (size_t i = 2; i < w.size(); ++i) {
      if (w[i].rfind("S=", 0) == 0) config.successors = std::stoi(w[i].substr(2));
      if (w[i].rfind("R=", 0) == 0) config.replicas = std::stoi(w[i].substr(2));
      if (w[i].rfind("join=", 0) == 0) join.push_back(L().Node(w[i].substr(5)).addr);
      if (w[i].rfind("batch=", 0) == 0) config.transfer_batch_bytes = std::stoul(w[i].substr(6));
      if (w[i].rfind("ae=", 0) == 0) config.anti_entropy_ms = std::stoull(w[i].substr(3));
      if (w[i].rfind("budget=", 0) == 0) {
        config.max_request_bytes_in_flight = std::stoul(w[i].substr(7));
      }
    }
    memory_ = std::make_unique<MemoryStore>();
    store_ = std::make_unique<LedgerStore>(memory_.get());
    node_ = std::make_unique<ChordNode>(store_.get(), config, L().Node(w[1]), /*seed=*/7);
    if (!join.empty()) {
      node_->Start(now_, join);
      Drain();
    }
  }

  void Routing(const std::vector<std::string>& w) {
    auto pred = std::find(w.begin(), w.end(), "pred");
    std::vector<NodeRef> succ;
    for (auto it = w.begin() + 2; it != pred; ++it) succ.push_back(L().Node(*it));
    std::optional<NodeRef> p;
    if (pred != w.end() && pred + 1 != w.end() && pred[1] != "-") p = L().Node(pred[1]);
    node_->InstallRoutingState(now_, std::move(succ), p, {});
    Drain();
  }

  // Keys key-1 .. key-n, stored as they would be after earlier writes.
  void Records(int n) {
    records_ = n;
    for (int i = 1; i <= n; ++i) {
      wire::Record r;
      r.set_key("key-" + std::to_string(i));
      r.set_value("v");
      r.set_version(static_cast<uint64_t>(i));
      ASSERT_TRUE(store_->Put(Id::Sha1(r.key()), r).ok());
    }
  }

  // "record: in=P,Q": the first key key-i whose id lies in (P, Q] is stored.
  void RecordIn(const std::map<std::string, std::string>& f) {
    const std::vector<std::string> arc = Split(f.count("in") != 0 ? f.at("in") : "", ',');
    ASSERT_EQ(arc.size(), 2u) << Where() << ": record needs in=P,Q";
    for (int i = 1; i <= 100'000; ++i) {
      wire::Record r;
      r.set_key("key-" + std::to_string(i));
      if (!Id::InHalfOpen(Id::Sha1(r.key()), L().Point(arc[0]), L().Point(arc[1]))) continue;
      r.set_value("v");
      r.set_version(1);
      ASSERT_TRUE(store_->Put(Id::Sha1(r.key()), r).ok());
      return;
    }
    FAIL() << Where() << ": no key-i in (" << arc[0] << ", " << arc[1] << "]";
  }

  // Takes the node's Ready: requests join the pending ones, replies are kept by token.
  void Drain() {
    Ready r = node_->TakeReady();
    for (size_t k = 0; k < r.requests.size(); ++k) {
      sent_.push_back(Sent{L().Name(NodeRef::ForAddress(r.requests[k].to)), r.Take(k)});
    }
    for (auto& rep : r.replies) replies_.push_back(rep);
    for (auto& l : r.lookups) lookups_.push_back(std::move(l.result));
  }

  std::optional<Sent> TakeSent(const std::string& type, const std::string& to) {
    for (auto it = sent_.begin(); it != sent_.end(); ++it) {
      if (BodyName(it->envelope) == type && it->to == to) {
        Sent s = std::move(*it);
        sent_.erase(it);
        return s;
      }
    }
    return std::nullopt;
  }

  static std::vector<NodeRef> List(const std::map<std::string, std::string>& f,
                                   const std::string& key) {
    std::vector<NodeRef> out;
    if (auto it = f.find(key); it != f.end()) {
      for (const std::string& t : Split(it->second, ',')) out.push_back(L().Node(t));
    }
    return out;
  }
  static bool Yes(const std::map<std::string, std::string>& f, const std::string& key) {
    auto it = f.find(key);
    return it != f.end() && it->second == "yes";
  }

  wire::Envelope Answer(const std::string& type, const std::string& from,
                        const std::map<std::string, std::string>& f) {
    wire::Envelope e;
    if (type == "get_state") {
      auto* r = e.mutable_get_state_resp();
      // self=Y: the answer names another node as the one answering.
      L().Node(f.count("self") != 0 ? f.at("self") : from).ToWire(r->mutable_self());
      if (f.count("pred") != 0) L().Node(f.at("pred")).ToWire(r->mutable_predecessor());
      for (const NodeRef& n : List(f, "succ")) n.ToWire(r->add_successors());
      r->set_joined(Yes(f, "joined"));
      r->set_leaving(Yes(f, "leaving"));
    } else if (type == "find_next_hop") {
      auto* r = e.mutable_find_next_hop_resp();
      r->set_done(Yes(f, "done"));
      for (const NodeRef& n : List(f, "nodes")) n.ToWire(r->add_nodes());
      if (f.count("pred") != 0) L().Node(f.at("pred")).ToWire(r->mutable_predecessor());
    } else if (type == "replica_set") {
      auto* r = e.mutable_replica_set_resp();
      L().Node(from).ToWire(r->mutable_self());
      r->set_joined(Yes(f, "joined"));
      if (f.count("pred") != 0) L().Node(f.at("pred")).ToWire(r->mutable_predecessor());
      for (const NodeRef& n : List(f, "replicas")) n.ToWire(r->add_replicas());
    } else if (type == "ping") {
      e.mutable_ping_resp();
    } else if (type == "transfer") {
      e.mutable_transfer_resp()->set_code(wire::OK);
    } else if (type == "put") {
      // An owner's answer to a put it was forwarded: OK, at version=N; superseded=N: a newer
      // write (version N) outranked it there.
      auto* d = e.mutable_data_resp();
      d->set_code(wire::OK);
      d->set_acks(1);
      d->set_required(1);
      if (f.count("version") != 0) d->set_version(std::stoull(f.at("version")));
      if (f.count("superseded") != 0) d->set_superseded_by(std::stoull(f.at("superseded")));
    }
    return e;
  }

  void Reply(const std::string& type, const std::string& from,
             const std::map<std::string, std::string>& f) {
    auto sent = TakeSent(type, from);
    ASSERT_TRUE(sent) << Where() << ": no pending " << type << " to " << from;
    wire::Envelope e = Answer(type, from, f);
    if (type == "replicate") ReplicateAnswer(sent->envelope, f, &e);
    if (type == "sync_pull") PullAnswer(sent->envelope, f, &e);
    e.set_request_id(sent->envelope.request_id());
    node_->OnResponse(now_, e);
    Drain();
  }

  // A member's answer to a pull of one key's id (a quorum read): OK, with version=N its
  // record of the stored key-i whose id the pull ends at (version N, no writer), else none.
  void PullAnswer(const wire::Envelope& request, const std::map<std::string, std::string>& f,
                  wire::Envelope* e) const {
    auto* r = e->mutable_sync_pull_resp();
    r->set_code(wire::OK);
    if (f.count("version") == 0) return;
    for (int i = 1; i <= records_; ++i) {
      const std::string key = "key-" + std::to_string(i);
      if (Id::Sha1(key).ToBytes() != request.sync_pull().to_id()) continue;
      wire::Record* rec = r->add_records();
      rec->set_key(key);
      rec->set_value("theirs");
      rec->set_version(std::stoull(f.at("version")));
      return;
    }
    FAIL() << Where() << ": the pull names no stored key";
  }

  // A replica's answer to `request`: OK; tie=yes: it kept a record of the same key and
  // version from a writer that ranks above every other (which it sends back); refused=N: N
  // records were outside its limits.
  static void ReplicateAnswer(const wire::Envelope& request,
                              const std::map<std::string, std::string>& f, wire::Envelope* e) {
    auto* r = e->mutable_replicate_resp();
    r->set_code(wire::OK);
    if (f.count("refused") != 0) r->set_refused(static_cast<uint32_t>(std::stoul(f.at("refused"))));
    if (Yes(f, "tie") && request.replicate().records_size() > 0) {
      wire::Record kept = request.replicate().records(0);
      kept.set_writer(std::string(20, '\xff'));
      kept.set_value("kept");
      r->set_newer_version(kept.version());
      *r->add_newer() = std::move(kept);
    }
  }

  void Fail(const std::string& type, const std::string& to) {
    auto sent = TakeSent(type, to);
    ASSERT_TRUE(sent) << Where() << ": no pending " << type << " to " << to;
    node_->OnSendFailed(now_, sent->envelope.request_id());
    Drain();
  }

  void Request(const std::string& type, const std::string& from,
               const std::map<std::string, std::string>& f, bool member) {
    wire::Envelope e;
    const NodeRef sender = L().Node(from);
    if (type == "notify") {
      e = msg::Notify(sender, Yes(f, "want_keys"));
    } else if (type == "leave") {
      std::optional<NodeRef> pred;
      if (f.count("pred") != 0) pred = L().Node(f.at("pred"));
      e = msg::Leave(sender, pred, List(f, "succ"));
    } else if (type == "get_state") {
      e = msg::GetState();
    } else if (type == "merge_hint") {
      L().Node(f.count("candidate") != 0 ? f.at("candidate") : from)
          .ToWire(e.mutable_merge_hint()->mutable_candidate());
      e.mutable_merge_hint()->set_hops_left(1);
    } else if (type == "replicate") {
      // One record key=K, as an owner sends a write; version=future: a day ahead of our clock.
      wire::Record rec;
      rec.set_key(f.count("key") != 0 ? f.at("key") : "k");
      rec.set_value("v");
      rec.set_writer(sender.id.ToBytes());
      const bool future = f.count("version") != 0 && f.at("version") == "future";
      rec.set_version(future ? (now_.wall_ms + 86'400'000) << 16 : now_.wall_ms << 16);
      e = msg::ReplicateOne(sender, rec);
    } else if (type == "get" || type == "put") {
      // The first stored key whose id lies in (P, Q] for in=P,Q.
      const std::vector<std::string> arc = Split(f.count("in") != 0 ? f.at("in") : "", ',');
      ASSERT_EQ(arc.size(), 2u) << Where() << ": a " << type << " needs in=P,Q";
      // n=K: the K-th such key.
      int skip = f.count("n") != 0 ? std::stoi(f.at("n")) - 1 : 0;
      int found = 0;
      for (int i = 1; i <= records_ && found == 0; ++i) {
        if (Id::InHalfOpen(Id::Sha1("key-" + std::to_string(i)), L().Point(arc[0]),
                           L().Point(arc[1])) &&
            skip-- == 0) {
          found = i;
        }
      }
      ASSERT_NE(found, 0) << Where() << ": no stored key in (" << arc[0] << ", " << arc[1]
                          << "]; store more with `records`";
      const std::string key = "key-" + std::to_string(found);
      if (type == "get") {
        e = msg::Get(key);
        if (f.count("level") != 0 && f.at("level") == "quorum") {
          e.mutable_get()->set_consistency(wire::CONSISTENCY_QUORUM);
        }
        if (Yes(f, "direct")) e = msg::AsDirect(std::move(e));
        if (Yes(f, "missing")) {
          // A key of that arc that is not stored: absent-1, absent-2, ...
          for (int i = 1; i <= 100'000; ++i) {
            const std::string k = "absent-" + std::to_string(i);
            if (Id::InHalfOpen(Id::Sha1(k), L().Point(arc[0]), L().Point(arc[1]))) {
              e.mutable_get()->set_key(k);
              break;
            }
          }
        }
      } else {
        // A coordinator's direct put: version=same stamps it with the stored record's
        // version (key-i holds version i, no writer), writer=Y names Y's id as the writer.
        e = Yes(f, "routed") ? msg::Put(key, "new") : msg::AsDirect(msg::Put(key, "new"));
        auto* put = e.mutable_put();
        if (f.count("version") != 0) {
          put->set_version(f.at("version") == "same" ? static_cast<uint64_t>(found)
                                                     : std::stoull(f.at("version")));
        }
        if (f.count("writer") != 0) put->set_writer(L().Node(f.at("writer")).id.ToBytes());
        if (f.count("level") != 0 && f.at("level") == "all")
          put->set_consistency(wire::CONSISTENCY_ALL);
        if (f.count("if_version") != 0) put->set_if_version(std::stoull(f.at("if_version")));
      }
    } else {
      FAIL() << Where() << ": unknown request " << type;
    }
    e.set_request_id(++next_request_id_);
    // Every letter is one of two ring positions (#0, #1) of one process.
    const Sender who =
        member ? Sender::Member(SplitRingAddress(sender.addr)->process, 2) : Sender{};
    node_->OnRequest(now_, TokenOf(from), std::move(e), who);
    Drain();
  }

  // The node's last answer with body `body` (an Envelope body name) to X, or null.
  const Ready::Reply* LastReply(const std::string& body, const std::string& to) const {
    const Ready::Reply* last = nullptr;
    for (const Ready::Reply& r : replies_) {
      if (BodyName(r.envelope) == body && r.to == TokenOf(to)) last = &r;
    }
    return last;
  }

  static ReplyToken TokenOf(const std::string& letter) {
    return static_cast<ReplyToken>(letter[0] - 'A' + 1);
  }

  void Expect(const std::vector<std::string>& w, const std::map<std::string, std::string>& f);

  std::string file_;
  std::string case_;
  int line_ = 0;
  int cases_ = 0;
  Clock now_;
  uint64_t next_request_id_ = 0;
  int records_ = 0;  // keys key-1 .. key-records_ are stored
  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<LedgerStore> store_;  // writes to it keep the node's ledger right
  std::unique_ptr<ChordNode> node_;
  std::vector<Sent> sent_;
  std::vector<Ready::Reply> replies_;
  std::vector<Result<LookupResult>> lookups_;
};

void ScriptRunner::Expect(const std::vector<std::string>& w,
                          const std::map<std::string, std::string>& f) {
  const std::string what = w[1];
  if (what == "send") {
    const bool found = std::any_of(sent_.begin(), sent_.end(), [&](const Sent& s) {
      return BodyName(s.envelope) == w[2] && s.to == w[4];
    });
    std::string pending;
    for (const Sent& s : sent_) pending += " " + BodyName(s.envelope) + ">" + s.to;
    EXPECT_TRUE(found) << Where() << ": no pending " << w[2] << " to " << w[4]
                       << " (pending:" << pending << ")";
  } else if (what == "no" && w[2] == "reply") {
    for (const Ready::Reply& r : replies_) {
      EXPECT_FALSE(BodyName(r.envelope) == w[3] && r.to == TokenOf(w[5]))
          << Where() << ": a " << w[3] << " reply to " << w[5];
    }
  } else if (what == "no") {
    for (const Sent& s : sent_) {
      EXPECT_NE(BodyName(s.envelope), w[3]) << Where() << ": pending " << w[3] << " to " << s.to;
    }
  } else if (what == "reply") {
    const bool found = std::any_of(replies_.begin(), replies_.end(), [&](const Ready::Reply& r) {
      return BodyName(r.envelope) == w[2] && r.to == TokenOf(w[4]);
    });
    EXPECT_TRUE(found) << Where() << ": no " << w[2] << " reply to " << w[4];
  } else if (what == "counter") {
    // "expect counter: keys_repaired=N": the node's counters.
    for (const auto& [k, v] : f) {
      if (k == "keys_repaired") {
        EXPECT_EQ(std::to_string(node_->counters().keys_repaired), v) << Where();
      } else {
        ADD_FAILURE() << Where() << ": unknown counter " << k;
      }
    }
  } else if (what == "replicated") {
    // "expect replicated to X: stored=N refused=N": the last replicate_resp answer to X.
    const Ready::Reply* last = LastReply("replicate_resp", w[3]);
    ASSERT_NE(last, nullptr) << Where() << ": no replicate_resp reply to " << w[3];
    const wire::ReplicateResponse& a = last->envelope.replicate_resp();
    EXPECT_EQ(a.code(), wire::OK) << Where();
    for (const auto& [k, v] : f) {
      if (k == "stored") {
        EXPECT_EQ(std::to_string(a.stored()), v) << Where();
      } else if (k == "refused") {
        EXPECT_EQ(std::to_string(a.refused()), v) << Where();
      }
    }
  } else if (what == "data") {
    // "expect data to X: code=C superseded=yes|no acks=N": the last data_resp answer to X.
    const Ready::Reply* last = LastReply("data_resp", w[3]);
    ASSERT_NE(last, nullptr) << Where() << ": no data_resp reply to " << w[3];
    const wire::DataResponse& d = last->envelope.data_resp();
    for (const auto& [k, v] : f) {
      if (k == "code") {
        EXPECT_EQ(wire::Code_Name(d.code()), v) << Where() << ": " << d.error();
      } else if (k == "superseded") {
        EXPECT_EQ(d.superseded_by() != 0 ? "yes" : "no", v) << Where();
      } else if (k == "acks") {
        EXPECT_EQ(std::to_string(d.acks()), v) << Where();
      }
    }
  } else if (what == "records") {
    // "expect records N": the node's store holds N records.
    int n = 0;
    ASSERT_TRUE(store_
                    ->Scan(Id::Max(), Id::Max(),
                           [&n](const Id&, const wire::Record&) {
                             ++n;
                             return true;
                           })
                    .ok());
    EXPECT_EQ(std::to_string(n), w[2]) << Where();
  } else if (what == "successors") {
    std::string want;
    for (size_t i = 2; i < w.size(); ++i) want += (want.empty() ? "" : " ") + w[i];
    EXPECT_EQ(L().Names(node_->successors()), want) << Where();
  } else if (what == "predecessor") {
    const auto& p = node_->predecessor();
    EXPECT_EQ(p ? L().Name(*p) : std::string("none"), w[2]) << Where();
  } else if (what == "state") {
    EXPECT_EQ(node_->joined() ? "joined" : "joining", w[2]) << Where();
  } else if (what == "owns") {
    EXPECT_TRUE(node_->Owns(L().Point(w[2]))) << Where();
  } else if (what == "not") {
    EXPECT_FALSE(node_->Owns(L().Point(w[3]))) << Where();
  } else if (what == "lookup") {
    ASSERT_EQ(lookups_.size(), 1u) << Where() << ": want one finished lookup";
    const Result<LookupResult> r = lookups_.front();
    lookups_.clear();
    if (w[2] == "failed") {
      EXPECT_FALSE(r.ok()) << Where();
      return;
    }
    ASSERT_TRUE(r.ok()) << Where() << ": " << r.status().message();
    EXPECT_EQ(L().Name(r->owner), w[2]) << Where();
    EXPECT_EQ("hops=" + std::to_string(r->hops), w[3]) << Where();
  } else {
    FAIL() << Where() << ": unknown expectation " << what;
  }
}

class NodeScriptTest : public ::testing::TestWithParam<const char*> {};

TEST_P(NodeScriptTest, Runs) { ScriptRunner(GetParam()).Run(); }

INSTANTIATE_TEST_SUITE_P(Scripts, NodeScriptTest,
                         ::testing::Values("stabilize.txt", "rectify.txt", "leave_notice.txt",
                                           "join.txt", "lookup.txt", "hand_over.txt",
                                           "owned_reads.txt", "merge.txt", "cleanup.txt",
                                           "owner_writes.txt", "request_budget.txt",
                                           "coordinator_writes.txt"),
                         [](const auto& info) {
                           std::string name = info.param;
                           name = name.substr(0, name.find('.'));
                           return name;
                         });

}  // namespace
}  // namespace chord
