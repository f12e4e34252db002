// Another user holding idle connections to the fast path's socket: the
// siege of pfmfs(5), SECURITY, "The fast path's socket". A child becomes
// nobody (uid and gid 65534), connects `n` times and holds what the daemon
// leaves open until the object goes.
#pragma once

#include <sys/types.h>

#include <string>

namespace libpfm_bench {

class IdleConnections {
 public:
  // `name`: the socket's abstract name, without its '@'. Returns once every
  // connect has returned.
  IdleConnections(const std::string& name, int n);
  ~IdleConnections();  // kills the child and reaps it
  IdleConnections(const IdleConnections&) = delete;
  IdleConnections& operator=(const IdleConnections&) = delete;

 private:
  pid_t pid_ = -1;
};

// The fastpath= name of a pmu/info line, without its '@'.
std::string fastPathName(const std::string& info);

}  // namespace libpfm_bench
