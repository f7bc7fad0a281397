#include "tools/client/data_requests.h"

#include <algorithm>

#include "tools/client/value_json.h"

namespace chord {
namespace {

constexpr size_t kMaxQuotedKeyBytes = 60;

}  // namespace

wire::Envelope PutEnvelope(const std::string& key, const std::string& value,
                           const DataOptions& options) {
  wire::Envelope request;
  wire::PutRequest* put = request.mutable_put();
  put->set_key(key);
  put->set_value(value);
  put->set_consistency(options.consistency);
  put->set_required(options.required);
  put->set_if_version(options.if_version);
  put->set_if_absent(options.if_absent);
  put->set_ttl_ms(options.ttl_ms);
  return request;
}

wire::Envelope GetEnvelope(const std::string& key, const DataOptions& options) {
  wire::Envelope request;
  request.mutable_get()->set_key(key);
  request.mutable_get()->set_consistency(options.consistency);
  request.mutable_get()->set_required(options.required);
  return request;
}

wire::Envelope DeleteEnvelope(const std::string& key, const DataOptions& options) {
  wire::Envelope request;
  wire::DeleteRequest* del = request.mutable_del();
  del->set_key(key);
  del->set_consistency(options.consistency);
  del->set_required(options.required);
  del->set_if_version(options.if_version);
  return request;
}

std::string ErrorAnswerSentence(const std::string& addr, const wire::ErrorResponse& error) {
  const std::string& name = wire::Code_Name(error.code());  // "" if unknown
  std::string msg = addr + " answered " + (name.empty() ? std::string("UNKNOWN") : name);
  if (!error.error().empty()) msg += ": " + error.error();
  return msg;
}

AnswerProblem DescribeDataAnswer(const std::string& node, const std::string& op,
                                 const std::string& key, const wire::DataResponse& r,
                                 const std::string& other_node) {
  const std::string detail = r.error().empty() ? "" : " (" + r.error() + ")";
  switch (r.code()) {
    case wire::OK:
      return {};
    case wire::NOT_FOUND:
      if (op == "delete") return {};
      return {AnswerKind::kNotFound, "key " + QuoteKey(key) + " not found"};
    case wire::CONFLICT: {
      // The owner's own sentence names the version and what to do; without one, say it here.
      if (!r.error().empty()) {
        return {AnswerKind::kConflict, "the " + op + " of key " + QuoteKey(key) +
                                           " was not applied: its condition did not hold (" +
                                           r.error() + ")"};
      }
      const std::string now = r.version() == 0
                                  ? std::string("does not exist")
                                  : "is at version " + std::to_string(r.version());
      return {AnswerKind::kConflict,
              "the " + op + " of key " + QuoteKey(key) +
                  " was not applied: its condition did not hold (the key " + now +
                  "); read the key again and retry with its current version"};
    }
    case wire::INVALID:
      return {AnswerKind::kUsage, node + " rejected the " + op + " of key " + QuoteKey(key) +
                                      detail + "; fix the request and retry"};
    case wire::NOT_OWNER:
      return {AnswerKind::kUnavailable, node + " could not route the " + op + " of key " +
                                            QuoteKey(key) + " to its owner" + detail +
                                            "; the ring may still be settling, retry shortly"};
    case wire::SHUTTING_DOWN:
      return {AnswerKind::kUnavailable, node + " is leaving the ring" + detail + "; " + other_node};
    default:
      return {AnswerKind::kUnavailable,
              "the ring could not complete the " + op + " of key " + QuoteKey(key) + " in time" +
                  detail + "; check that enough nodes are up (chordctl ring) and retry"};
  }
}

nlohmann::json DataJson(const std::string& key, const wire::DataResponse& r, bool with_value) {
  nlohmann::json doc;
  doc["key"] = key;
  doc["code"] = wire::Code_Name(r.code());
  doc["version"] = r.version();
  doc["acks"] = r.acks();
  doc["required"] = r.required();
  if (with_value) SetValueJson(&doc, r.value());
  if (r.expires_unix_ms() != 0) doc["expires_unix_ms"] = r.expires_unix_ms();
  return doc;
}

std::string QuoteKey(const std::string& key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "\"";
  const size_t n = std::min(key.size(), kMaxQuotedKeyBytes);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "\"";
  if (key.size() > n) out += " (" + std::to_string(key.size()) + " bytes, shortened)";
  return out;
}

}  // namespace chord
