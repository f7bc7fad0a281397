#include "node/http/key_request.h"

#include <charconv>
#include <cstdint>

#include "protocol/limits.h"
#include "tools/client/duration.h"
#include "tools/client/value_json.h"

namespace chord {
namespace {

// More replicas than any ring keeps; the node refuses what exceeds its own R.
constexpr uint64_t kMaxRequired = 255;

std::optional<uint64_t> ParseUint(const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty()) return std::nullopt;
  return v;
}

// "true", "1", "yes" or nothing (`?if_absent`) is true; "false", "0", "no" false.
std::optional<bool> ParseFlag(const std::string& text) {
  if (text.empty() || text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no") return false;
  return std::nullopt;
}

// Whether `body` is at most one JSON object with no object or array inside it (so that parsing
// it costs one pass, whatever a caller sends): brackets are counted outside strings only.
bool IsFlatJsonObject(const std::string& body) {
  bool in_string = false;
  bool escaped = false;
  int objects = 0;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || (c == '{' && ++objects > 1)) {
      return false;
    }
  }
  return true;
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::optional<HttpProblem> ParseKeyRequest(const HttpRequest& request, const std::string& key,
                                           const RequestTarget& target, KeyRequest* out) {
  const std::string& m = request.method;
  if (m == "GET" || m == "HEAD") {
    out->op = KeyRequest::Op::kGet;
  } else if (m == "PUT" || m == "POST") {
    out->op = KeyRequest::Op::kPut;
  } else if (m == "DELETE") {
    out->op = KeyRequest::Op::kDelete;
  } else {
    return HttpProblem{405, "method",
                       "method " + m + " is not served on /v1/keys/KEY; use GET, PUT or DELETE"};
  }
  if (std::string problem = KeyProblem(key); !problem.empty())
    return HttpProblem{400, "invalid", problem};
  out->key = key;
  out->json = out->op == KeyRequest::Op::kGet &&
              request.accept.find("application/json") != std::string::npos;
  for (const auto& [name, value] : target.query) {
    if (name == "consistency") {
      if (value == "one") {
        out->options.consistency = wire::CONSISTENCY_ONE;
      } else if (value == "quorum") {
        out->options.consistency = wire::CONSISTENCY_QUORUM;
      } else if (value == "all") {
        out->options.consistency = wire::CONSISTENCY_ALL;
      } else {
        return HttpProblem{400, "invalid",
                           "consistency must be one, quorum or all, not \"" + value + "\""};
      }
    } else if (name == "w" || name == "r") {
      auto n = ParseUint(value);
      if (!n || *n == 0 || *n > kMaxRequired) {
        return HttpProblem{400, "invalid",
                           name + " must be a number of replicas from 1 to " +
                               std::to_string(kMaxRequired) + ", not \"" + value + "\""};
      }
      if ((name == "w") != (out->op != KeyRequest::Op::kGet)) {
        return HttpProblem{400, "invalid",
                           name == "w" ? "w counts the replicas of a write; a get takes r"
                                       : "r counts the replicas of a read; a write takes w"};
      }
      out->options.required = static_cast<uint32_t>(*n);
    } else if (name == "if_absent") {
      auto flag = ParseFlag(value);
      if (!flag || out->op != KeyRequest::Op::kPut) {
        return HttpProblem{400, "invalid", "if_absent is a flag of a put (if_absent=true)"};
      }
      out->options.if_absent = *flag;
    } else if (name == "if_version") {
      auto v = ParseUint(value);
      if (!v || *v == 0 || out->op == KeyRequest::Op::kGet) {
        return HttpProblem{400, "invalid",
                           "if_version takes the version a put or delete expects (a number "
                           "from 1 up), not \"" +
                               value + "\""};
      }
      out->options.if_version = *v;
    } else if (name == "ttl") {
      Result<uint64_t> ms = ParseDuration(value);
      if (!ms.ok()) return HttpProblem{400, "invalid", "ttl: " + ms.status().message()};
      if (out->op != KeyRequest::Op::kPut) {
        return HttpProblem{400, "invalid", "ttl is an option of a put"};
      }
      out->options.ttl_ms = *ms;
    } else if (name == "format") {
      if (value != "json" && value != "raw") {
        return HttpProblem{400, "invalid", "format must be json or raw, not \"" + value + "\""};
      }
      out->json = value == "json";
    } else {
      return HttpProblem{400, "invalid",
                         "unknown parameter \"" + name +
                             "\"; the keys API takes consistency, r, w, if_absent, if_version, "
                             "ttl and format"};
    }
  }
  if (out->options.if_absent && out->options.if_version != 0) {
    return HttpProblem{400, "invalid", "give if_absent or if_version, not both"};
  }
  if (out->op != KeyRequest::Op::kPut) return std::nullopt;
  if (StartsWith(request.content_type, "application/json")) {
    nlohmann::json doc =
        IsFlatJsonObject(request.body)
            ? nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false)
            : nlohmann::json();
    if (doc.is_object() && doc.contains("value") && doc["value"].is_string()) {
      out->value = doc["value"].get<std::string>();
    } else if (doc.is_object() && doc.contains("value_base64") && doc["value_base64"].is_string()) {
      auto bytes = Base64Decode(doc["value_base64"].get<std::string>());
      if (!bytes) return HttpProblem{400, "invalid", "value_base64 is not valid base64"};
      out->value = std::move(*bytes);
    } else {
      return HttpProblem{400, "invalid",
                         "a JSON body must be {\"value\": \"text\"} or {\"value_base64\": "
                         "\"...\"}; send other content types to store the body as it is"};
    }
  } else {
    out->value = request.body;
  }
  if (std::string problem = ValueProblem(out->value.size()); !problem.empty()) {
    return HttpProblem{413, "too_large", problem};
  }
  return std::nullopt;
}

}  // namespace chord
