// KeyRequest: what a request to /v1/keys/{key} of the HTTP API asks for, read from its
// method, query and body: get, put or delete, the consistency, CAS and TTL options of
// chordctl as query parameters (consistency, r, w, if_absent, if_version, ttl), the value
// (the body verbatim, or {"value": text} / {"value_base64": ...} with a JSON content type),
// and whether the answer should be JSON (the value's JSON form is tools/client/value_json.h).
// Pure functions; any thread.
#ifndef CHORD_NODE_HTTP_KEY_REQUEST_H_
#define CHORD_NODE_HTTP_KEY_REQUEST_H_

#include <optional>
#include <string>

#include "node/http/http_server.h"
#include "node/http/request_target.h"
#include "tools/client/data_requests.h"

namespace chord {

// An HTTP error: status, the JSON `code` and the sentence.
struct HttpProblem {
  int status = 400;
  std::string code = "invalid";
  std::string sentence;
};

struct KeyRequest {
  enum class Op { kGet, kPut, kDelete };
  Op op = Op::kGet;
  std::string key;
  std::string value;  // kPut
  DataOptions options;
  bool json = false;  // kGet: answer with JSON instead of the raw value
};

// Fills *out from the request, or returns the problem (400 for a bad parameter, key or value,
// 405 for a method the keys API does not take).
std::optional<HttpProblem> ParseKeyRequest(const HttpRequest& request, const std::string& key,
                                           const RequestTarget& target, KeyRequest* out);

}  // namespace chord

#endif  // CHORD_NODE_HTTP_KEY_REQUEST_H_
