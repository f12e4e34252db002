// record's loop: waits on the sessions' `messages` for the buffer-full
// notifications and the end, copies each full smpl_buf into the data file
// and restarts the session, reads the memory-map records meanwhile, and at
// the end the last, partial buffer (pfmfs(5), SAMPLING, The rules).
#pragma once

#include <signal.h>

#include <cstdint>
#include <set>
#include <vector>

#include "pfmstat/command.h"
#include "pfmstat/data_file.h"
#include "pfmstat/map_events.h"
#include "pfmstat/proc_maps.h"
#include "pfmstat/session.h"

namespace pfmstat {

struct RecordTotals {
  std::uint64_t samples = 0;
  std::uint64_t fills = 0;          // buffer-full notifications: counting paused while pfmstat drained
  std::uint64_t throttled = 0;      // perf's throttles (state's throttled=), summed over the sessions
  std::uint64_t lost_messages = 0;  // state's lost=: notifications the queue dropped
  std::uint64_t dropped = 0;        // state's smpl_dropped=: overflows that wrote no sample
};

class Recorder {
 public:
  // `events` or `proc` (or neither: no maps) say where the maps come from.
  Recorder(std::vector<Session*> sessions, DataWriter& out, MapEvents* events, ProcMaps* proc);

  // Until every session has ended, a signal (SIGINT, SIGTERM, SIGHUP: passed
  // on to `command` when it was sent to pfmstat alone), or the command's
  // end (with inherit, and its children's, for up to `settle_s` more).
  // Returns the command's exit status, or 0 without one.
  int run(Command* command, double settle_s);

  const RecordTotals& totals() const { return totals_; }

 private:
  void readMessages(std::size_t i, bool restart);
  void drainBuffer(std::size_t i);
  void readState(std::size_t i);
  void drainMaps();

  std::vector<Session*> sessions_;
  DataWriter& out_;
  MapEvents* events_;
  ProcMaps* proc_;
  std::vector<bool> ended_;
  std::vector<std::uint64_t> throttled_, lost_, dropped_;
  std::set<std::uint32_t> gone_;  // processes whose /proc was gone when seen (fallback maps)
  RecordTotals totals_;
};

}  // namespace pfmstat
