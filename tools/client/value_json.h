// How a value (any bytes) appears in JSON, the same in chordctl's and the HTTP API's answers:
// as "value" when it is valid UTF-8 text, else as "value_base64" (RFC 4648, with padding);
// and the UTF-8 check and base64 coding behind it. Pure functions; any thread.
#ifndef CHORD_TOOLS_CLIENT_VALUE_JSON_H_
#define CHORD_TOOLS_CLIENT_VALUE_JSON_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace chord {

// Sets doc["value"] to `value` when it is valid UTF-8, else doc["value_base64"].
void SetValueJson(nlohmann::json* doc, const std::string& value);

bool IsValidUtf8(const std::string& text);
std::string Base64Encode(const std::string& bytes);
std::optional<std::string> Base64Decode(const std::string& text);

}  // namespace chord

#endif  // CHORD_TOOLS_CLIENT_VALUE_JSON_H_
