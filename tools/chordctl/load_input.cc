#include "tools/chordctl/load_input.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace chord::ctl {
namespace {

constexpr size_t kReadChunkBytes = 64 * 1024;

constexpr char kFormatHint[] =
    "write one record per line as key<TAB>value (and, for a key that expires, <TAB>its expiry "
    "in Unix milliseconds) with tabs, newlines and backslashes inside them escaped as \\t, "
    "\\n and \\\\ (as chordctl dump writes them), or as a JSON object {\"key\": ..., "
    "\"value\": ...} (and \"expires_unix_ms\": ...)";

// What is wrong with `expires_ms` as an expiry, as one sentence; "" when it lies within the
// bounds. `where` names the field.
std::string ExpiryProblem(uint64_t expires_ms, const std::string& where) {
  if (expires_ms >= kMinLoadExpiryUnixMs && expires_ms <= kMaxLoadExpiryUnixMs) return "";
  return where + " (the key's expiry) must be a Unix time in milliseconds, from " +
         std::to_string(kMinLoadExpiryUnixMs) + " to " + std::to_string(kMaxLoadExpiryUnixMs) +
         "; leave it out for a key that never expires";
}

// The expiry field of a TSV line: decimal digits within the bounds. False, with the reason in
// *error, otherwise.
bool ParseExpiry(std::string_view field, uint64_t* out, std::string* error) {
  const bool all_digits = !field.empty() && std::all_of(field.begin(), field.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  // Leading zeros aside, more digits than the upper bound has cannot be within it (and could
  // overflow).
  while (field.size() > 1 && field.front() == '0') field.remove_prefix(1);
  const bool digits = all_digits && field.size() <= 16;
  uint64_t v = 0;
  if (digits) {
    for (char c : field) v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *error = ExpiryProblem(v, "the third field");
  if (!error->empty()) return false;
  *out = v;
  return true;
}

// Whether the escaped fields of a TSV line parse; fills *record (key, value, expiry, error).
bool ParseTsv(std::string_view line, LoadRecord* record) {
  const size_t tab = line.find('\t');
  if (tab == std::string_view::npos) {
    record->error = std::string("expected key<TAB>value but the line has no tab; ") + kFormatHint;
    return false;
  }
  const size_t tabs = static_cast<size_t>(std::count(line.begin(), line.end(), '\t'));
  if (tabs > 2) {
    record->error = "expected key<TAB>value or key<TAB>value<TAB>expiry but the line has " +
                    std::to_string(tabs) + " tabs; escape tabs inside keys and values as \\t";
    return false;
  }
  std::string_view value = line.substr(tab + 1);
  if (tabs == 2) {
    const size_t second = value.find('\t');
    if (!ParseExpiry(value.substr(second + 1), &record->expires_unix_ms, &record->error)) {
      return false;
    }
    value = value.substr(0, second);
  }
  std::string why;
  if (!UnescapeTsv(line.substr(0, tab), &record->key, &why)) {
    record->error = "the key " + why;
    return false;
  }
  if (!UnescapeTsv(value, &record->value, &why)) {
    record->error = "the value " + why;
    return false;
  }
  return true;
}

// The message of a nlohmann parse error without its "[json.exception...] " prefix.
std::string JsonErrorText(const std::exception& e) {
  std::string what = e.what();
  if (!what.empty() && what.front() == '[') {
    const size_t close = what.find("] ");
    if (close != std::string::npos) what.erase(0, close + 2);
  }
  return what;
}

// Parses a JSON line. Returns false with record->error when it is not a JSON object with
// string "key" and "value" (*shaped false), or is one with a bad "expires_unix_ms" (*shaped
// true: a JSON record, not a TSV line).
bool ParseJson(std::string_view line, LoadRecord* record, bool* shaped) {
  *shaped = false;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    record->error =
        "the line starts with '{' but is not a JSON object {\"key\": \"...\", "
        "\"value\": \"...\"}: " +
        JsonErrorText(e);
    return false;
  }
  if (!doc.is_object()) {
    record->error = "expected a JSON object {\"key\": \"...\", \"value\": \"...\"}";
    return false;
  }
  for (const char* field : {"key", "value"}) {
    auto it = doc.find(field);
    if (it == doc.end() || !it->is_string()) {
      record->error = std::string("the JSON object has no string \"") + field +
                      "\"; write {\"key\": \"...\", \"value\": \"...\"}";
      return false;
    }
  }
  record->key = doc["key"].get<std::string>();
  record->value = doc["value"].get<std::string>();
  *shaped = true;
  if (auto it = doc.find("expires_unix_ms"); it != doc.end()) {
    record->error =
        ExpiryProblem(it->is_number_unsigned() ? it->get<uint64_t>() : 0, "\"expires_unix_ms\"");
    if (!record->error.empty()) return false;
    record->expires_unix_ms = it->get<uint64_t>();
  }
  return true;
}

}  // namespace

bool UnescapeTsv(std::string_view field, std::string* out, std::string* error) {
  out->clear();
  out->reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    const char c = field[i];
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (i + 1 == field.size()) {
      *error = "ends in a lone backslash; write a backslash as \\\\";
      return false;
    }
    const char next = field[++i];
    switch (next) {
      case 't':
        out->push_back('\t');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case '\\':
        out->push_back('\\');
        break;
      default: {
        std::string shown(1, next);
        if (static_cast<unsigned char>(next) < 0x20 || static_cast<unsigned char>(next) >= 0x7f) {
          shown = "(byte " + std::to_string(static_cast<unsigned char>(next)) + ")";
        }
        *error = "has an unknown escape \\" + shown + " at byte " + std::to_string(i) +
                 "; only \\t, \\n, \\r and \\\\ are escapes (write a backslash as \\\\)";
        return false;
      }
    }
  }
  return true;
}

LoadRecord ParseLoadLine(std::string_view line, size_t max_value_bytes) {
  LoadRecord record;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    record.empty = true;
    return record;
  }
  bool parsed = false;
  if (line.front() == '{') {
    const size_t tab = line.find('\t');
    // A tab after a whole JSON value can only be the separator of a dump line whose key is
    // such a value: JSON lines do not end in tabs.
    const bool key_is_json =
        tab != std::string_view::npos && nlohmann::json::accept(line.substr(0, tab));
    bool shaped = false;
    if (!key_is_json) parsed = ParseJson(line, &record, &shaped);
    // Not a JSON record but holds a tab: a TSV line whose key starts with '{'.
    if (!parsed && !shaped && tab != std::string_view::npos) {
      record.error.clear();
      parsed = ParseTsv(line, &record);
    }
  } else {
    parsed = ParseTsv(line, &record);
  }
  if (!parsed) return record;
  record.error = KeyProblem(record.key);
  if (record.error.empty()) record.error = ValueProblem(record.value.size(), max_value_bytes);
  if (!record.error.empty()) return record;
  record.ok = true;
  return record;
}

LineReader::LineReader(int fd, size_t max_line_bytes) : fd_(fd), max_line_bytes_(max_line_bytes) {}

bool LineReader::Fill() {
  buf_.resize(kReadChunkBytes);
  pos_ = 0;
  for (int attempt = 0; attempt < 1000; ++attempt) {  // retries only on EINTR
    const ssize_t n = ::read(fd_, buf_.data(), buf_.size());
    if (n > 0) {
      buf_.resize(static_cast<size_t>(n));
      bytes_read_ += static_cast<uint64_t>(n);
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failed_ = true;
      error_ = std::strerror(errno);
    }
    break;
  }
  buf_.clear();
  eof_ = true;
  return false;
}

bool LineReader::Next(std::string* line, bool* too_long) {
  line->clear();
  *too_long = false;
  bool any = false;
  // Each round consumes the buffer up to a newline or refills it; ends at a newline or EOF.
  while (true) {
    if (pos_ >= buf_.size()) {
      if (eof_ || !Fill()) return any;
    }
    any = true;
    const size_t newline = buf_.find('\n', pos_);
    const size_t end = newline == std::string::npos ? buf_.size() : newline;
    if (!*too_long) {
      if (line->size() + (end - pos_) > max_line_bytes_) {
        *too_long = true;
        line->clear();
      } else {
        line->append(buf_, pos_, end - pos_);
      }
    }
    pos_ = end;
    if (newline != std::string::npos) {
      ++pos_;
      return true;
    }
  }
}

}  // namespace chord::ctl
