// perf_event_open(2) wrappers.
#include "pmu/perf_event/perf_event.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace pfmfs::pmu::perf {

perf_event_attr userSoftwareAttr(std::uint64_t config) {
  perf_event_attr a{};
  a.type = PERF_TYPE_SOFTWARE;
  a.config = config;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return a;
}

Result<Fd> openEvent(perf_event_attr& attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  attr.size = sizeof attr;
  long fd = ::syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC | flags);
  if (fd < 0) {
    int e = errno;
    return err(e, "perf_event_open(type={} config=0x{:x}, pid={}, cpu={}): {}", attr.type, attr.config, pid, cpu,
               std::strerror(e));
  }
  return Fd(static_cast<int>(fd));
}

std::string paranoidHint() {
  std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
  int level = 0;
  if (f >> level) return fmt::format(" (perf_event_paranoid={})", level);
  return "";
}

namespace {

std::atomic<std::uint64_t> ioctls{0};

int countedIoctl(int fd, unsigned long request, unsigned long arg) {
  ioctls.fetch_add(1, std::memory_order_relaxed);
  return ::ioctl(fd, request, arg);
}

Status ioctlStatus(int fd, unsigned long request, unsigned long arg, const char* what) {
  if (countedIoctl(fd, request, arg) < 0) {
    int e = errno;
    return err(e, "perf ioctl {}: {}", what, std::strerror(e));
  }
  return {};
}

}  // namespace

std::uint64_t ioctlCount() { return ioctls.load(std::memory_order_relaxed); }

Status enableEvent(int fd, bool group) {
  return ioctlStatus(fd, PERF_EVENT_IOC_ENABLE, group ? PERF_IOC_FLAG_GROUP : 0, "ENABLE");
}

Status disableEvent(int fd, bool group) {
  return ioctlStatus(fd, PERF_EVENT_IOC_DISABLE, group ? PERF_IOC_FLAG_GROUP : 0, "DISABLE");
}

Status setPeriod(int fd, std::uint64_t period) {
  if (countedIoctl(fd, PERF_EVENT_IOC_PERIOD, reinterpret_cast<unsigned long>(&period)) < 0) {
    int e = errno;
    return err(e, "perf ioctl PERIOD {}: {}", period, std::strerror(e));
  }
  return {};
}

Status setOutput(int fd, int output_fd) {
  return ioctlStatus(fd, PERF_EVENT_IOC_SET_OUTPUT, static_cast<unsigned long>(output_fd), "SET_OUTPUT");
}

Result<std::uint64_t> eventId(int fd) {
  std::uint64_t id = 0;
  if (countedIoctl(fd, PERF_EVENT_IOC_ID, reinterpret_cast<unsigned long>(&id)) < 0) {
    int e = errno;
    return err(e, "perf ioctl ID: {}", std::strerror(e));
  }
  return id;
}

Status readGroup(int leader_fd, std::size_t members, GroupReading& out) {
  // nr, time_enabled, time_running, then {value, id} per member.
  std::uint64_t buf[3 + 2 * 64];
  if (members > 64) return err(EINVAL, "perf group of {} members", members);
  std::size_t want = (3 + 2 * members) * sizeof(std::uint64_t);
  ssize_t n = ::read(leader_fd, buf, want);
  if (n < 0) {
    int e = errno;
    return err(e, "reading a perf group: {}", std::strerror(e));
  }
  if (static_cast<std::size_t>(n) != want || buf[0] != members)
    return err(EIO, "reading a perf group: {} bytes for {} members", n, members);
  out.time_enabled = buf[1];
  out.time_running = buf[2];
  out.values.resize(members);
  out.ids.resize(members);
  for (std::size_t i = 0; i < members; ++i) {
    out.values[i] = buf[3 + 2 * i];
    out.ids[i] = buf[4 + 2 * i];
  }
  return {};
}

Result<std::uint64_t> readCount(int fd) {
  std::uint64_t v = 0;
  ssize_t n = ::read(fd, &v, sizeof v);
  if (n != static_cast<ssize_t>(sizeof v)) {
    int e = n < 0 ? errno : EIO;
    return err(e, "reading a perf counter: {}", std::strerror(e));
  }
  return v;
}

RingBuffer::~RingBuffer() {
  if (base_) ::munmap(base_, size_);
}

Status RingBuffer::map(int fd, std::size_t data_pages) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  size_ = (1 + data_pages) * page;
  data_size_ = data_pages * page;
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    base_ = nullptr;
    return err(e, "mapping a perf ring buffer of {} KiB: {}", size_ / 1024, std::strerror(e));
  }
  base_ = p;
  return {};
}

bool RingBuffer::pending() const {
  if (!base_) return false;
  auto* meta = static_cast<perf_event_mmap_page*>(base_);
  return __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) != meta->data_tail;
}

void RingBuffer::take(std::vector<OverflowRecord>& out, std::vector<TaskRecord>* tasks) {
  if (!base_) return;
  auto* meta = static_cast<perf_event_mmap_page*>(base_);
  const auto* data = static_cast<const unsigned char*>(base_) + meta->data_offset;
  // The kernel publishes data_head with release semantics; we hand space
  // back through data_tail once the records are copied out.
  const std::uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  std::uint64_t tail = meta->data_tail;
  const std::uint64_t size = meta->data_size ? meta->data_size : data_size_;
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header h;
    auto copy = [&](std::uint64_t at, void* dst, std::size_t n) {
      auto* d = static_cast<unsigned char*>(dst);
      for (std::size_t i = 0; i < n; ++i) d[i] = data[(at + i) % size];
    };
    copy(tail, &h, sizeof h);
    if (h.size < sizeof h || tail + h.size > head) break;
    scratch_.resize(h.size);
    copy(tail, scratch_.data(), h.size);
    const unsigned char* body = scratch_.data() + sizeof h;
    auto u64At = [&](std::size_t off) {
      std::uint64_t v;
      std::memcpy(&v, body + off, sizeof v);
      return v;
    };
    auto u32At = [&](std::size_t off) {
      std::uint32_t v;
      std::memcpy(&v, body + off, sizeof v);
      return v;
    };
    if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + 40) {
      // IDENTIFIER, IP, PID+TID, TIME, CPU+res: the order of perf_event_open(2).
      OverflowRecord r;
      r.id = u64At(0);
      r.ip = u64At(8);
      r.pid = u32At(16);
      r.tid = u32At(20);
      r.time_ns = u64At(24);
      r.cpu = u32At(32);
      // PERF_SAMPLE_READ's group, when the event asked for it (the record
      // is then longer): nr, time_enabled, time_running, {value, id}[nr].
      if (h.size >= sizeof h + 64) {
        const std::uint64_t nr = u64At(40);
        if (nr <= kMaxSampleRead && h.size == sizeof h + 64 + 16 * nr) {
          r.nread = static_cast<std::uint32_t>(nr);
          for (std::uint64_t i = 0; i < nr; ++i) r.read[i] = {u64At(64 + 16 * i + 8), u64At(64 + 16 * i)};
        }
      }
      out.push_back(r);
    } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
      OverflowRecord r;
      r.id = u64At(0);
      r.lost = u64At(8);
      out.push_back(r);
    } else if (h.type == PERF_RECORD_THROTTLE && h.size >= sizeof h + 16) {
      OverflowRecord r;  // time, id, stream_id
      r.id = u64At(8);
      r.throttled = true;
      out.push_back(r);
    } else if (tasks && (h.type == PERF_RECORD_FORK || h.type == PERF_RECORD_EXIT) && h.size >= sizeof h + 24) {
      TaskRecord r;  // pid, ppid, tid, ptid, time
      r.kind = h.type == PERF_RECORD_FORK ? TaskRecord::Kind::Fork : TaskRecord::Kind::Exit;
      r.pid = u32At(0);
      r.ppid = u32At(4);
      r.tid = u32At(8);
      r.ptid = u32At(12);
      r.time = u64At(16);
      tasks->push_back(r);
    } else if (tasks && h.type == PERF_RECORD_READ && h.size >= sizeof h + 40) {
      TaskRecord r;  // pid, tid, then kTaskReadFormat: value, enabled, running, id
      r.kind = TaskRecord::Kind::Read;
      r.pid = u32At(0);
      r.tid = u32At(4);
      r.value = u64At(8);
      r.time_enabled = u64At(16);
      r.time_running = u64At(24);
      r.id = u64At(32);
      tasks->push_back(r);
    }
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

}  // namespace pfmfs::pmu::perf
