// /dev/pfmfs_helper's ioctls and records.
#include "pmu/x86/helper_device.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pfmfs::pmu::x86 {

namespace {

std::uint32_t uapiTarget(const Target& t) {
  return t.kind == TargetKind::Cpu ? PFMFS_HELPER_TARGET_CPU : PFMFS_HELPER_TARGET_THREAD;
}

std::string describe(const Target& t) {
  return t.kind == TargetKind::Cpu ? fmt::format("cpu {}", t.id) : fmt::format("thread {}", t.id);
}

}  // namespace

Result<std::unique_ptr<HelperDevice>> HelperDevice::open(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    int e = errno;
    if (e == ENOENT || e == ENXIO || e == ENODEV)
      return err(ENOENT, "{}: no such device (is pfmfs_helper.ko loaded? modprobe pfmfs_helper)", path);
    return err(e, "cannot open {}: {}", path, std::strerror(e));
  }
  pfmfs_helper_hello hello{};
  hello.abi_version = PFMFS_HELPER_ABI_VERSION;
  hello.size = sizeof hello;
  if (::ioctl(fd.get(), PFMFS_HELPER_IOC_HELLO, &hello) != 0) {
    int e = errno;
    if (e == EPROTO)
      return err(EPROTO, "{} speaks ABI version {} (struct size {}), pfmfsd speaks {} ({}): build both from one tree",
                 path, hello.abi_version, hello.size, PFMFS_HELPER_ABI_VERSION, sizeof hello);
    return err(e, "{}: handshake failed: {}", path, std::strerror(e));
  }
  std::unique_ptr<HelperDevice> dev(new HelperDevice(std::move(fd), path));
  HelperInfo& i = dev->info_;
  i.arch_version = hello.arch_version;
  i.gp_counters = hello.gp_counters;
  i.gp_width = hello.gp_width;
  i.fixed_counters = hello.fixed_counters;
  i.fixed_width = hello.fixed_width;
  i.emulated = (hello.flags & PFMFS_HELPER_F_EMULATED) != 0;
  i.nr_cpu_ids = hello.nr_cpu_ids;
  i.skid = hello.skid;
  if (hello.record_size != sizeof(pfmfs_helper_record))
    return err(EPROTO, "{}: records of {} bytes, expected {}", path, hello.record_size, sizeof(pfmfs_helper_record));
  return dev;
}

Status HelperDevice::batch(unsigned long request, const char* what, const Target& target, void* ops,
                           std::size_t count) {
  if (count == 0) return {};
  if (count > PFMFS_HELPER_MAX_BATCH)
    return err(EINVAL, "{} of {} MSRs: at most {} a batch", what, count, PFMFS_HELPER_MAX_BATCH);
  pfmfs_helper_batch b{};
  b.ops = reinterpret_cast<std::uintptr_t>(ops);
  b.count = static_cast<std::uint32_t>(count);
  b.target = uapiTarget(target);
  b.id = static_cast<std::uint32_t>(target.id);
  ioctls_.fetch_add(1, std::memory_order_relaxed);
  if (::ioctl(fd_.get(), request, &b) != 0) {
    int e = errno;
    return err(e, "{} on {}: {}", what, describe(target), std::strerror(e));
  }
  return {};
}

Status HelperDevice::readMsrs(const Target& target, std::span<pfmfs_helper_msr> ops) {
  return batch(PFMFS_HELPER_IOC_MSR_READ, "MSR read", target, ops.data(), ops.size());
}

Status HelperDevice::writeMsrs(const Target& target, std::span<const pfmfs_helper_msr> ops) {
  // The kernel only reads a write batch.
  return batch(PFMFS_HELPER_IOC_MSR_WRITE, "MSR write", target, const_cast<pfmfs_helper_msr*>(ops.data()), ops.size());
}

Status HelperDevice::targetIoctl(unsigned long request, const char* what, const Target& target, std::uint32_t flags) {
  pfmfs_helper_target t{};
  t.target = uapiTarget(target);
  t.id = static_cast<std::uint32_t>(target.id);
  t.flags = flags;
  ioctls_.fetch_add(1, std::memory_order_relaxed);
  if (::ioctl(fd_.get(), request, &t) != 0) {
    int e = errno;
    return err(e, "{} {}: {}", what, describe(target), std::strerror(e));
  }
  return {};
}

Status HelperDevice::attach(const Target& target, std::uint32_t flags) {
  return targetIoctl(PFMFS_HELPER_IOC_ATTACH, "attach", target, flags);
}

Status HelperDevice::setTemplate(pid_t tid, std::span<const pfmfs_helper_msr> ops, std::uint64_t tag) {
  if (ops.size() > PFMFS_HELPER_MAX_BATCH)
    return err(EINVAL, "child template of {} MSRs: at most {}", ops.size(), PFMFS_HELPER_MAX_BATCH);
  pfmfs_helper_template t{};
  t.ops = reinterpret_cast<std::uintptr_t>(ops.data());
  t.count = static_cast<std::uint32_t>(ops.size());
  t.tid = static_cast<std::uint32_t>(tid);
  t.tag = tag;
  ioctls_.fetch_add(1, std::memory_order_relaxed);
  if (::ioctl(fd_.get(), PFMFS_HELPER_IOC_TEMPLATE, &t) != 0) {
    int e = errno;
    return err(e, "child template of thread {}: {}", tid, std::strerror(e));
  }
  return {};
}
Status HelperDevice::detach(const Target& target) { return targetIoctl(PFMFS_HELPER_IOC_DETACH, "detach", target); }
Status HelperDevice::hold(const Target& target, bool held) {
  return held ? targetIoctl(PFMFS_HELPER_IOC_HOLD, "hold", target)
              : targetIoctl(PFMFS_HELPER_IOC_RELEASE, "release", target);
}

Result<std::size_t> HelperDevice::readRecords(std::span<pfmfs_helper_record> out) {
  ssize_t n = ::read(fd_.get(), out.data(), out.size_bytes());
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return std::size_t{0};
    int e = errno;
    return err(e, "reading {}: {}", path_, std::strerror(e));
  }
  return static_cast<std::size_t>(n) / sizeof(pfmfs_helper_record);
}

}  // namespace pfmfs::pmu::x86
