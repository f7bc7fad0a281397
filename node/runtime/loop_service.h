// LoopService: something else a process serves on the NodeRuntime's libuv loop (the HTTP API
// and the metrics endpoint, node/http). The runtime owns it once added: it calls Close() when
// it stops (the service then closes its handles and answers or drops what is in flight), runs
// the loop so that the close callbacks run, and destroys it before closing the loop. Loop
// thread only.
#ifndef CHORD_NODE_RUNTIME_LOOP_SERVICE_H_
#define CHORD_NODE_RUNTIME_LOOP_SERVICE_H_

namespace chord {

class LoopService {
 public:
  virtual ~LoopService() = default;
  // Stops serving: closes listeners and connections. Idempotent.
  virtual void Close() = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_LOOP_SERVICE_H_
