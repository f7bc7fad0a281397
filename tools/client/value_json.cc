#include "tools/client/value_json.h"

#include <openssl/evp.h>

#include <cstdint>

namespace chord {

bool IsValidUtf8(const std::string& text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c >> 5) == 0x6) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c >> 4) == 0xe) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c >> 3) == 0x1e) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
      return false;
    }
    i += len;
  }
  return true;
}

std::string Base64Encode(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> Base64Decode(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  if (text.empty()) return std::string();
  // OpenSSL takes '=' anywhere; padding is one or two '=' at the very end only.
  const size_t padding = text.size() - text.find_last_not_of('=') - 1;
  if (padding > 2) return std::nullopt;
  for (size_t i = 0; i + padding < text.size(); ++i) {
    const char c = text[i];
    const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!letter && c != '+' && c != '/') return std::nullopt;
  }
  std::string out(3 * (text.size() / 4) + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  size_t size = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  if (text[text.size() - 1] == '=') --size;
  if (text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

void SetValueJson(nlohmann::json* doc, const std::string& value) {
  if (IsValidUtf8(value)) {
    (*doc)["value"] = value;
  } else {
    (*doc)["value_base64"] = Base64Encode(value);
  }
}

}  // namespace chord
