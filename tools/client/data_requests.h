// The get, put and delete requests of a client and what their answers mean: the request
// envelopes built from DataOptions, the one sentence (and exit class) for every answer that is
// not a plain success, and the JSON line of an answer. Shared by ChordClient, chordctl and the
// node's HTTP API, so that a curl user reads the very sentences chordctl prints. Pure
// functions; any thread.
#ifndef CHORD_TOOLS_CLIENT_DATA_REQUESTS_H_
#define CHORD_TOOLS_CLIENT_DATA_REQUESTS_H_

#include <nlohmann/json.hpp>
#include <string>

#include "protocol/chord.pb.h"

namespace chord {

// Per-request options of a get, put or delete (issue 14). Fields a request kind does not
// have are ignored: a get uses consistency/required only, a delete also if_version.
struct DataOptions {
  wire::Consistency consistency = wire::CONSISTENCY_DEFAULT;
  uint32_t required = 0;    // explicit W (writes) or R (reads); 0: from `consistency`
  uint64_t if_version = 0;  // compare-and-set: only if the key is at this version
  bool if_absent = false;   // compare-and-set (put): only if the key does not exist
  uint64_t ttl_ms = 0;      // put: expires this long after it is versioned; 0: never
};

wire::Envelope PutEnvelope(const std::string& key, const std::string& value,
                           const DataOptions& options);
wire::Envelope GetEnvelope(const std::string& key, const DataOptions& options);
wire::Envelope DeleteEnvelope(const std::string& key, const DataOptions& options);

// How an answer ends for the user: chordctl's exit codes (0, 1, 2, 3, 4).
enum class AnswerKind { kOk = 0, kNotFound = 1, kUsage = 2, kUnavailable = 3, kConflict = 4 };

struct AnswerProblem {
  AnswerKind kind = AnswerKind::kOk;
  std::string sentence;  // empty for kOk
};

// What the answer `r` of node `node` to operation `op` ("get", "put", "delete") of `key`
// means. A delete of a missing key is kOk (the ring is as asked). `other_node` says how to
// use another node (chordctl: "use another node with --node").
AnswerProblem DescribeDataAnswer(const std::string& node, const std::string& op,
                                 const std::string& key, const wire::DataResponse& r,
                                 const std::string& other_node = "use another node with --node");

// "ADDR answered FORBIDDEN: why": a node's ErrorResponse as the clients report it.
std::string ErrorAnswerSentence(const std::string& addr, const wire::ErrorResponse& error);

// {"key","code","version","acks","required"} (+ "value" when with_value, "expires_unix_ms").
nlohmann::json DataJson(const std::string& key, const wire::DataResponse& r, bool with_value);

// `key` quoted for an error sentence, shortened when long and with control bytes escaped.
std::string QuoteKey(const std::string& key);

}  // namespace chord

#endif  // CHORD_TOOLS_CLIENT_DATA_REQUESTS_H_
