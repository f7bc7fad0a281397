#include "node/http/watch_stream.h"

#include <utility>

#include "tools/client/key_watcher.h"
#include "tools/client/wire_json.h"

namespace chord {

WatchStream::WatchStream(Options options, LoopMailbox* mailbox, EventFn on_event, EndFn on_end)
    : options_(std::move(options)),
      mailbox_(mailbox),
      on_event_(std::move(on_event)),
      on_end_(std::move(on_end)),
      thread_([this] { Run(); }) {}

WatchStream::~WatchStream() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void WatchStream::Run() {
  KeyWatchOptions follow;
  follow.contacts = {options_.via};
  follow.key = options_.key;
  follow.after_version = options_.after_version;
  follow.start = options_.start;
  follow.wait_ms = options_.wait_ms;
  follow.timeout_ms = options_.timeout_ms;
  follow.give_up_ms = options_.give_up_ms;
  follow.resume_hint = options_.resume_hint;
  AnswerProblem end = FollowKey(
      follow,
      [this](const wire::WatchEvent& e) {
        std::string type = WatchEventTypeName(e.type());
        std::string json = DumpJson(WatchEventJson(e), -1);
        const uint64_t version = e.version();
        mailbox_->Post([fn = on_event_, type = std::move(type), version, json = std::move(json)] {
          fn(type, version, json);
        });
        return !stop_;
      },
      [this] { return !stop_.load(); });
  // Always the last post of this thread: the loop may destroy this object when it runs (the
  // function is copied so that it does not run from inside the object it destroys).
  mailbox_->Post([fn = on_end_, sentence = std::move(end.sentence)] { fn(sentence); });
}

}  // namespace chord
