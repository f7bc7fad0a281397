// Small builders the Store tests share: ids from short hex and wire::Records. Test code only.
#ifndef CHORD_TESTS_UNIT_STORE_TEST_RECORDS_H_
#define CHORD_TESTS_UNIT_STORE_TEST_RECORDS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord::test_support {

// An id from a short hex suffix, zero-padded on the left: IdOf("ff") is 255.
inline Id IdOf(const std::string& low_hex) {
  auto id = Id::FromHex(std::string(40 - low_hex.size(), '0') + low_hex);
  EXPECT_TRUE(id.has_value()) << low_hex;
  return id.value_or(Id());
}

inline wire::Record MakeRecord(const std::string& key, const std::string& value,
                               uint64_t version = 1) {
  wire::Record r;
  r.set_key(key);
  r.set_value(value);
  r.set_version(version);
  return r;
}

}  // namespace chord::test_support

#endif  // CHORD_TESTS_UNIT_STORE_TEST_RECORDS_H_
