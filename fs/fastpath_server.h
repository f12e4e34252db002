// The fast path's socket: where libpfm-compat asks pfmfsd for what lets it
// read a self-monitoring context's PMDs without a FUSE round trip: the
// session's page (fast_page_map.h) and the perf group its counters are in.
//
// An abstract Unix socket (no file: any user of the network namespace can
// connect, whatever the mount's permissions), named in pmu/info's
// `fastpath=`. The kernel tells who connects (SO_PEERCRED); only the
// session's owner and root get anything, as only they may read its files.
// A request is one SOCK_SEQPACKET message, the answer one message:
//
//   page SESSION            ->  "ok" + the page's memfd (read-only: sealed)
//   group SESSION ID        ->  "ok" + every member of perf group ID (the
//                               leader first), if it is the loaded set's
//                               group now
//   anything refused        ->  "err ERRNO reason"
//
// One thread serves one connection at a time; a client gets a second to
// send its request.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::fs {

class Filesystem;

class FastPathServer {
 public:
  // Binds a fresh abstract name and starts serving `fs`.
  static Result<std::unique_ptr<FastPathServer>> start(Filesystem& fs);
  ~FastPathServer();  // stops serving and joins the thread
  FastPathServer(const FastPathServer&) = delete;
  FastPathServer& operator=(const FastPathServer&) = delete;

  // The socket's name as pmu/info gives it: '@' for the abstract namespace's
  // leading NUL, then the name.
  const std::string& name() const { return name_; }

 private:
  FastPathServer(Filesystem& fs, pmu::Fd listener, pmu::Fd wake, std::string name);
  void run();
  void serve(int conn);

  Filesystem& fs_;
  pmu::Fd listener_;
  pmu::Fd wake_;  // an eventfd: written by the destructor
  std::string name_;
  std::thread thread_;
};

}  // namespace pfmfs::fs
