// Thin, checked wrappers over the perf_event_open(2) interface: opening an
// event, the ioctls the backend uses, reading a group, and the ring buffer
// through which the kernel reports overflows. Nothing here knows about sets
// or PMU descriptions.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::pmu::perf {

// A software event (PERF_COUNT_SW_*) at user level only, never the
// hypervisor: what a daemon without CAP_PERFMON may open on another user's
// thread at perf_event_paranoid 2. The anchors and sentinels of the backends
// start here (task-clock counts a thread's whole CPU time whatever
// exclude_kernel says; dummy counts nothing and only carries records).
perf_event_attr userSoftwareAttr(std::uint64_t config);

// perf_event_open with close-on-exec, and `flags` besides (PERF_FLAG_PID_CGROUP:
// `pid` is a cgroup directory's descriptor). The error keeps the kernel's errno.
Result<Fd> openEvent(perf_event_attr& attr, pid_t pid, int cpu, int group_fd, unsigned long flags = 0);

// " (perf_event_paranoid=N)", to end a refusal's reason with the setting
// that most often explains it; "" if it cannot be read.
std::string paranoidHint();

// ioctls issued by this process through the functions below, all targets
// together: how the tests and benchmarks see what a set switch costs.
std::uint64_t ioctlCount();

// ioctls. `group` applies an enable/disable/reset to the whole group of a leader.
Status enableEvent(int fd, bool group);
Status disableEvent(int fd, bool group);
Status setPeriod(int fd, std::uint64_t period);
Status setOutput(int fd, int output_fd);
Result<std::uint64_t> eventId(int fd);

// One read() of a group leader opened with PERF_FORMAT_GROUP |
// TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID.
struct GroupReading {
  std::uint64_t time_enabled = 0;
  std::uint64_t time_running = 0;
  std::vector<std::uint64_t> values;  // in the order the members were opened
  std::vector<std::uint64_t> ids;
};
inline constexpr std::uint64_t kGroupReadFormat =
    PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
Status readGroup(int leader_fd, std::size_t members, GroupReading& out);

// A plain read() of a single counter opened with read_format 0.
Result<std::uint64_t> readCount(int fd);

// What one overflow record says (PERF_RECORD_SAMPLE with PERF_SAMPLE_IDENTIFIER
// | IP | TID | CPU), how many samples the kernel dropped (PERF_RECORD_LOST), or
// that it throttled an event (PERF_RECORD_THROTTLE: too many interrupts per
// tick; overflows go unreported until the next tick).
inline constexpr std::uint64_t kSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
// A sampling session's counters also ask for the group's values at the
// overflow (PERF_SAMPLE_READ, read_format kGroupReadFormat): the PMDs a
// sample records, as they were then. Not with inherit: Linux before 6.12
// refuses PERF_SAMPLE_READ on an inherited event.
inline constexpr std::uint64_t kSampleReadType = kSampleType | PERF_SAMPLE_READ;
inline constexpr std::size_t kMaxSampleRead = 16;  // members a sample's group read may carry
struct OverflowRecord {
  std::uint64_t id = 0;  // the event (PERF_EVENT_IOC_ID)
  std::uint64_t ip = 0;
  std::uint32_t pid = 0, tid = 0, cpu = 0;
  std::uint64_t time_ns = 0;  // the kernel's perf clock at the sample (a sampling entry's tstamp)
  // PERF_SAMPLE_READ: each member's count at the overflow, with its id.
  std::uint32_t nread = 0;
  std::array<std::pair<std::uint64_t, std::uint64_t>, kMaxSampleRead> read{};  // (id, count)
  std::uint64_t lost = 0;  // PERF_RECORD_LOST: samples the kernel could not store; no ip
  bool throttled = false;  // PERF_RECORD_THROTTLE: the kernel stopped reporting this event's overflows for a while
};

// What a followed thread did (events opened with attr.task, attr.inherit and
// attr.inherit_stat, sample_id_all 0): PERF_RECORD_FORK and PERF_RECORD_EXIT
// for every thread the event's task and its descendants create and end, and
// PERF_RECORD_READ with a child's final count of one inherited event as it
// exits (read_format kTaskReadFormat). The kernel writes a child's EXIT
// before its READs.
inline constexpr std::uint64_t kTaskReadFormat =
    PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
struct TaskRecord {
  enum class Kind { Fork, Exit, Read };
  Kind kind = Kind::Fork;
  std::uint32_t pid = 0, tid = 0;    // the thread created, ended, or read
  std::uint32_t ppid = 0, ptid = 0;  // Fork, Exit: its parent
  std::uint64_t time = 0;            // Fork, Exit: perf's clock
  // Read: the child's final count of the inherited event whose parent has
  // PERF_EVENT_IOC_ID `id`, and its enabled and running times.
  std::uint64_t value = 0, time_enabled = 0, time_running = 0, id = 0;
};

// The mmap'd ring buffer of one event. Other events write into it after
// setOutput(their fd, this event's fd).
class RingBuffer {
 public:
  RingBuffer() = default;
  ~RingBuffer();
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  // Maps 1 + data_pages (a power of two) pages of `fd`.
  Status map(int fd, std::size_t data_pages);
  // Every overflow record written since the last call, and the task records
  // when `tasks` is given; others are skipped.
  void take(std::vector<OverflowRecord>& out, std::vector<TaskRecord>* tasks = nullptr);
  // Whether the kernel wrote anything not yet taken.
  bool pending() const;

 private:
  void* base_ = nullptr;
  std::size_t size_ = 0;  // the whole mapping
  std::size_t data_size_ = 0;
  std::vector<unsigned char> scratch_;
};

}  // namespace pfmfs::pmu::perf
