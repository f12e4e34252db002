// Thin, checked wrappers over /dev/pfmfs_helper (helper-kmod/uapi/
// pfmfs_helper.h): the handshake, MSR batches, targets, holds and the
// records the module queues. Nothing here knows about sets or sessions.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "helper-kmod/uapi/pfmfs_helper.h"
#include "pmu/backend.h"
#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::pmu::x86 {

// What the module says of the PMU it serves (HELLO).
struct HelperInfo {
  unsigned arch_version = 0;
  unsigned gp_counters = 0;
  unsigned gp_width = 0;
  unsigned fixed_counters = 0;
  unsigned fixed_width = 0;
  bool emulated = false;  // the module's test PMU, not hardware
  unsigned nr_cpu_ids = 0;
  unsigned skid = 0;  // the test PMU's skid, in events
};

class HelperDevice {
 public:
  // Opens the device (non-blocking, close-on-exec) and shakes hands.
  // -ENOENT: no device (the module is not loaded); -EPERM/-EACCES: not
  // allowed (root with CAP_SYS_RAWIO only); -EPROTO: the module speaks
  // another ABI version.
  static Result<std::unique_ptr<HelperDevice>> open(const std::string& path);

  const HelperInfo& info() const { return info_; }
  int fd() const { return fd_.get(); }

  // MSR batches of at most PFMFS_HELPER_MAX_BATCH accesses on a target: a
  // cpu's PMU, or an attached thread's register image.
  Status readMsrs(const Target& target, std::span<pfmfs_helper_msr> ops);
  Status writeMsrs(const Target& target, std::span<const pfmfs_helper_msr> ops);

  // flags: PFMFS_HELPER_ATTACH_* (threads).
  Status attach(const Target& target, std::uint32_t flags = 0);
  // The image the children of an inheriting thread's family start with
  // (PFMFS_HELPER_IOC_TEMPLATE): rebuilt whole from these writes.
  Status setTemplate(pid_t tid, std::span<const pfmfs_helper_msr> ops, std::uint64_t tag);
  Status detach(const Target& target);
  Status hold(const Target& target, bool held);  // HOLD or RELEASE

  // The records queued now, at most out.size(); 0 when there are none.
  Result<std::size_t> readRecords(std::span<pfmfs_helper_record> out);

  // ioctls issued through this device so far: what a set switch costs.
  std::uint64_t ioctls() const { return ioctls_.load(std::memory_order_relaxed); }

 private:
  HelperDevice(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Status targetIoctl(unsigned long request, const char* what, const Target& target, std::uint32_t flags = 0);
  Status batch(unsigned long request, const char* what, const Target& target, void* ops, std::size_t count);

  Fd fd_;
  std::string path_;
  HelperInfo info_;
  std::atomic<std::uint64_t> ioctls_{0};
};

}  // namespace pfmfs::pmu::x86
