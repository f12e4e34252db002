// The fast path's socket: where libpfm-compat asks pfmfsd for what lets it
// read a self-monitoring context's PMDs without a FUSE round trip: the
// session's page (fast_page_map.h) and the perf group its counters are in.
//
// An abstract Unix socket (no file: any user of the network namespace can
// connect, whatever the mount's permissions), named in pmu/info's
// `fastpath=` with the pid and uid the kernel reports for its listener
// (`fastpath_pid=`, `fastpath_uid=`), which the library checks before it
// sends anything. The kernel tells who connects (SO_PEERCRED); only the
// session's owner and root get anything, as only they may read its files.
// A request is one SOCK_SEQPACKET message, the answer one message:
//
//   page SESSION            ->  "ok" + the page's memfd (read-only: sealed)
//   smpl SESSION            ->  "ok" + the sampling buffer's memfd (sealed
//                               likewise: session/sealed_region.h), if the
//                               session has a sampling format
//   group SESSION ID        ->  "ok" + every member of perf group ID (the
//                               leader first), if it is the loaded set's
//                               group now
//   anything refused        ->  "err ERRNO reason"
//
// Any user can connect, so no user may keep the socket from the others:
// one thread serves every connection through epoll, never waiting on one;
// a connection has `deadline_ms` to send its request, then is closed; one
// uid holds at most `per_user` connections at once (more are closed at
// once, that uid's alone); and past `total` the oldest connection goes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "fs/text_format.h"
#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::fs {

class Filesystem;

class FastPathServer {
 public:
  struct Limits {
    unsigned deadline_ms = 250;  // pfmfsd --fastpath-deadline
    unsigned per_user = 16;
    unsigned total = 512;
  };

  // Binds a fresh abstract name and starts serving `fs`.
  static Result<std::unique_ptr<FastPathServer>> start(Filesystem& fs, Limits limits);
  ~FastPathServer();  // stops serving and joins the thread
  FastPathServer(const FastPathServer&) = delete;
  FastPathServer& operator=(const FastPathServer&) = delete;

  // The socket as pmu/info gives it: '@' for the abstract namespace's
  // leading NUL, then the name; and the listener's pid and uid as the
  // kernel reports them to a client.
  const FastPathEndpoint& endpoint() const { return endpoint_; }

 private:
  struct Conn {
    pmu::Fd fd;
    std::uint64_t tag;  // epoll's data: never reused, unlike descriptor numbers
    uid_t uid;
    pid_t pid;
    std::uint64_t deadline_ns;
  };
  using ConnList = std::list<Conn>;  // oldest first: deadlines in order too

  FastPathServer(Filesystem& fs, Limits limits, pmu::Fd listener, pmu::Fd epoll, pmu::Fd wake,
                 FastPathEndpoint endpoint);
  void run();
  void acceptAll(std::uint64_t now);
  void closeConn(ConnList::iterator it);
  void serve(const Conn& c);

  Filesystem& fs_;
  const Limits limits_;
  pmu::Fd listener_;
  pmu::Fd epoll_;
  pmu::Fd wake_;  // an eventfd: written by the destructor
  FastPathEndpoint endpoint_;
  // Only the serving thread touches these.
  ConnList conns_;
  std::unordered_map<std::uint64_t, ConnList::iterator> by_tag_;
  std::uint64_t next_tag_ = 1;
  std::map<uid_t, unsigned> per_user_;
  std::thread thread_;
};

}  // namespace pfmfs::fs
