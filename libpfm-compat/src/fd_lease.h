// A descriptor lent for one operation: either a cached helper file of a
// context (not to be closed) or a temporary one (closed at the end), or an
// error. Lets the calls use both without caring which.
#pragma once

#include <unistd.h>

namespace pfmcompat {

class FdLease {
 public:
  static FdLease cached(int fd) { return FdLease(fd, false, 0); }
  static FdLease owned(int fd) { return FdLease(fd, true, 0); }
  static FdLease failed(int err) { return FdLease(-1, false, err); }

  FdLease(FdLease&& o) noexcept : fd_(o.fd_), owned_(o.owned_), err_(o.err_) { o.owned_ = false; }
  FdLease& operator=(FdLease&&) = delete;
  FdLease(const FdLease&) = delete;
  ~FdLease() {
    if (owned_) close(fd_);
  }

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int error() const { return err_; }  // the errno of the failed open

 private:
  FdLease(int fd, bool owned, int err) : fd_(fd), owned_(owned), err_(err) {}
  int fd_;
  bool owned_;
  int err_;
};

}  // namespace pfmcompat
