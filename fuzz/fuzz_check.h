// FUZZ_CHECK(condition, what): the assertion of the fuzz targets in fuzz/. When the condition
// is false it prints what was expected, where, and aborts, which libFuzzer reports as a crash
// and saves the input for. Active in every build type (unlike assert). Fuzz targets only.
#ifndef CHORD_FUZZ_FUZZ_CHECK_H_
#define CHORD_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, what)                                                          \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #condition, \
                   what);                                                                    \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)

#endif  // CHORD_FUZZ_FUZZ_CHECK_H_
