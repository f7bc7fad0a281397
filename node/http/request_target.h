// RequestTarget: an HTTP request target ("/v1/keys/a%2Fb?consistency=all") taken apart for
// the API's routes: the path percent-decoded (so that any key, '/' and binary bytes included,
// can be named) and the query's name=value pairs decoded ('+' is a space there). Pure
// functions; any thread; fuzzed (fuzz/http_target_fuzz.cc).
#ifndef CHORD_NODE_HTTP_REQUEST_TARGET_H_
#define CHORD_NODE_HTTP_REQUEST_TARGET_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/status.h"

namespace chord {

struct RequestTarget {
  std::string path;                                        // decoded
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order

  // The value of the first query parameter `name`; nullopt when it is absent.
  std::optional<std::string> Param(std::string_view name) const;
};

// InvalidArgument (one sentence) for a target that does not start with '/', a malformed
// percent escape, or more than kMaxQueryParams parameters.
Result<RequestTarget> ParseRequestTarget(std::string_view raw);

// Percent-decodes `text` ('+' as a space when `plus_is_space`); nullopt for a bad escape.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

inline constexpr size_t kMaxQueryParams = 32;

}  // namespace chord

#endif  // CHORD_NODE_HTTP_REQUEST_TARGET_H_
