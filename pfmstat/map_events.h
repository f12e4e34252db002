// The mappings, execs and forks of the recorded processes as the kernel
// reports them: a perf "dummy" software event per cpu on the command (and,
// inherited, on every process it creates) with mmap, comm and task records,
// read from its ring buffers. record's first source of memory maps; where
// perf_event_open is refused it falls back to /proc (proc_maps.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pfmstat/data_file.h"

namespace pfmstat {

class MapEvents {
 public:
  // Opens the events on `pid` (-1 with system: every process) on every
  // cpu of `cpus`. enable_on_exec: the command stopped before its exec, so
  // that its first records are its exec's. Returns nothing and sets `error`
  // (the errno) when the kernel refuses.
  static std::unique_ptr<MapEvents> open(pid_t pid, const std::vector<int>& cpus, bool enable_on_exec, int& error);
  ~MapEvents();
  MapEvents(const MapEvents&) = delete;
  MapEvents& operator=(const MapEvents&) = delete;

  // Writes what the rings hold, in time order across cpus.
  void drain(DataWriter& out);

  std::uint64_t lost() const { return lost_; }  // records the kernel dropped (full ring)

 private:
  struct Ring {
    int fd = -1;
    void* base = nullptr;
    std::size_t size = 0;  // control page and data
  };
  MapEvents() = default;

  std::vector<Ring> rings_;
  std::uint64_t lost_ = 0;
};

}  // namespace pfmstat
