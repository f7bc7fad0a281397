// StorePosition: for unit tests of ring positions (vnodes) that share one LedgerStore: the
// RecordStore one position keeps, with its own version clock and watch log.
#ifndef CHORD_TESTS_UNIT_STORE_POSITION_H_
#define CHORD_TESTS_UNIT_STORE_POSITION_H_

#include "node/core/node_config.h"
#include "node/core/ready.h"
#include "node/core/record_store.h"
#include "node/core/version_clock.h"
#include "node/core/watch/watch_log.h"
#include "node/storage/ledger_store.h"

namespace chord {

struct StorePosition {
  StorePosition(LedgerStore* store, const NodeConfig* config, const Clock* now)
      : records(store, &clock, config, now, &watches) {}
  VersionClock clock;
  WatchLog watches;
  RecordStore records;
};

}  // namespace chord

#endif  // CHORD_TESTS_UNIT_STORE_POSITION_H_
