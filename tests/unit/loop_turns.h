// TurnLoopUntil: for unit tests that drive a real libuv loop on the test's own thread (real
// sockets on 127.0.0.1): turns the loop until a condition holds, each turn waiting for I/O at
// most 1 ms (a repeating timer wakes it), so a peer that goes silent cannot block the test.
// Bounded in time and in turns.
#ifndef CHORD_TESTS_UNIT_LOOP_TURNS_H_
#define CHORD_TESTS_UNIT_LOOP_TURNS_H_

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>

#include "node/runtime/uv_handle.h"

namespace chord {

// Turns `loop` until `done()` or `limit` has passed (at most 100,000 turns), calling
// `between()` after every turn; whether `done()` held at the end.
template <typename Done, typename Between>
bool TurnLoopUntil(uv_loop_t* loop, std::chrono::milliseconds limit, Done done, Between between) {
  UvHandle<uv_timer_t> tick;
  if (tick.Init([loop](uv_timer_t* t) { return uv_timer_init(loop, t); }) != 0 ||
      uv_timer_start(
          tick.get(), [](uv_timer_t*) {}, 1, 1) != 0) {
    ADD_FAILURE() << "cannot start the test's timer";
    return false;
  }
  const auto end = std::chrono::steady_clock::now() + limit;
  for (int turn = 0; turn < 100'000 && std::chrono::steady_clock::now() < end; ++turn) {
    if (done()) return true;
    uv_run(loop, UV_RUN_ONCE);
    between();
  }
  return done();
}

template <typename Done>
bool TurnLoopUntil(uv_loop_t* loop, std::chrono::milliseconds limit, Done done) {
  return TurnLoopUntil(loop, limit, done, [] {});
}

}  // namespace chord

#endif  // CHORD_TESTS_UNIT_LOOP_TURNS_H_
