// perf's mmap/comm/task records of the recorded processes (map_events.h).
// The ring layout is perf_event_open(2)'s: a control page, then a
// power-of-two data area written by the kernel at data_head and freed by us
// at data_tail.
#include "pfmstat/map_events.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pfmstat {
namespace {

// 64 data pages (256 KiB) per cpu: a `make -j2` writes a few thousand
// mappings per second and the rings are read every 10 ms. Where the locked
// memory limit refuses it (perf_event_mlock_kb for a user), fewer.
constexpr std::size_t kDataPages[] = {64, 16, 4};

// The fields sample_id_all appends to every record (PERF_SAMPLE_TID|TIME).
struct SampleId {
  std::uint32_t pid, tid;
  std::uint64_t time;
};

struct Pending {
  std::uint64_t time;
  std::uint64_t seq;  // arrival order, for equal times
  DataFile::Kind kind;
  CommLine comm;
  ForkLine fork;
  MapLine map;
};

std::string cString(const char* p, std::size_t max) { return std::string(p, strnlen(p, max)); }

}  // namespace

std::unique_ptr<MapEvents> MapEvents::open(pid_t pid, const std::vector<int>& cpus, bool enable_on_exec, int& error) {
  std::unique_ptr<MapEvents> m(new MapEvents);
  long page = ::sysconf(_SC_PAGESIZE);
  for (int cpu : cpus) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    a.sample_id_all = 1;
    a.mmap = 1;
    a.mmap2 = 1;
    a.comm = 1;
    a.comm_exec = 1;
    a.task = 1;
    a.inherit = pid != -1;
    a.enable_on_exec = enable_on_exec;
    a.disabled = enable_on_exec;
    a.exclude_kernel = 1;  // allowed at perf_event_paranoid 2; user mappings are what we want
    a.exclude_hv = 1;
    // Per cpu: the kernel refuses to map the ring of an inherited event
    // that follows a task on every cpu (cpu -1).
    int fd = static_cast<int>(::syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      error = errno;
      return nullptr;
    }
    Ring r;
    r.fd = fd;
    for (std::size_t pages : kDataPages) {
      r.size = (pages + 1) * static_cast<std::size_t>(page);
      r.base = ::mmap(nullptr, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (r.base != MAP_FAILED) break;
    }
    if (r.base == MAP_FAILED) {
      error = errno;
      ::close(fd);
      return nullptr;
    }
    m->rings_.push_back(r);
  }
  return m;
}

MapEvents::~MapEvents() {
  for (auto& r : rings_) {
    ::munmap(r.base, r.size);
    ::close(r.fd);
  }
}

void MapEvents::drain(DataWriter& out) {
  std::vector<Pending> pending;
  std::uint64_t seq = 0;
  long page = ::sysconf(_SC_PAGESIZE);
  for (auto& r : rings_) {
    auto* ctl = static_cast<perf_event_mmap_page*>(r.base);
    const char* data = static_cast<const char*>(r.base) + page;
    std::uint64_t size = r.size - static_cast<std::size_t>(page);
    std::uint64_t head = __atomic_load_n(&ctl->data_head, __ATOMIC_ACQUIRE);
    std::uint64_t tail = ctl->data_tail;
    std::vector<char> rec;
    while (tail + sizeof(perf_event_header) <= head) {
      perf_event_header h;
      for (std::size_t i = 0; i < sizeof h; ++i) reinterpret_cast<char*>(&h)[i] = data[(tail + i) % size];
      if (h.size < sizeof h || tail + h.size > head) break;
      rec.resize(h.size);
      for (std::size_t i = 0; i < h.size; ++i) rec[i] = data[(tail + i) % size];  // records may wrap
      tail += h.size;
      const char* body = rec.data() + sizeof h;
      std::size_t len = h.size - sizeof h;
      if (h.type == PERF_RECORD_LOST && len >= 16) {
        std::uint64_t lost;
        std::memcpy(&lost, body + 8, sizeof lost);
        lost_ += lost;
        continue;
      }
      if (len < sizeof(SampleId)) continue;
      SampleId id;
      std::memcpy(&id, body + len - sizeof id, sizeof id);
      std::size_t fixed_len = len - sizeof id;
      Pending p{id.time, seq++, DataFile::Kind::Sample, {}, {}, {}};
      if (h.type == PERF_RECORD_MMAP2 && fixed_len > 64) {
        // pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot, flags, filename
        std::uint32_t pid;
        std::uint64_t addr, length, pgoff;
        std::memcpy(&pid, body, 4);
        std::memcpy(&addr, body + 8, 8);
        std::memcpy(&length, body + 16, 8);
        std::memcpy(&pgoff, body + 24, 8);
        p.kind = DataFile::Kind::Map;
        p.map = MapLine{pid, addr, addr + length, pgoff, cString(body + 64, fixed_len - 64)};
        if (length == 0) continue;
      } else if (h.type == PERF_RECORD_COMM && fixed_len > 8) {
        std::uint32_t pid, tid;
        std::memcpy(&pid, body, 4);
        std::memcpy(&tid, body + 4, 4);
        if (pid != tid) continue;  // a thread's name: the process keeps its own
        p.kind = DataFile::Kind::Comm;
        p.comm = CommLine{pid, (h.misc & PERF_RECORD_MISC_COMM_EXEC) != 0, cString(body + 8, fixed_len - 8)};
      } else if (h.type == PERF_RECORD_FORK && fixed_len >= 16) {
        std::uint32_t pid, ppid, tid;
        std::memcpy(&pid, body, 4);
        std::memcpy(&ppid, body + 4, 4);
        std::memcpy(&tid, body + 8, 4);
        if (pid != tid || pid == ppid) continue;  // a new thread shares its process's maps
        p.kind = DataFile::Kind::Fork;
        p.fork = ForkLine{pid, ppid};
      } else {
        continue;
      }
      pending.push_back(std::move(p));
    }
    __atomic_store_n(&ctl->data_tail, tail, __ATOMIC_RELEASE);
  }
  // The cpus' rings are separate: a fork on one and the child's exec on the
  // other are put back in the order they happened.
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.time < b.time; });
  for (const auto& p : pending) {
    if (p.kind == DataFile::Kind::Map) out.map(p.map);
    if (p.kind == DataFile::Kind::Comm) out.comm(p.comm);
    if (p.kind == DataFile::Kind::Fork) out.fork(p.fork);
  }
}

}  // namespace pfmstat
