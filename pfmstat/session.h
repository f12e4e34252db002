// One pfmfs session made by pfmstat: a directory under sessions/, its sets
// written from a plan, loaded on a thread or cpu. It holds the session's
// `messages` open with `autoclose`, so that the session is gone when pfmstat
// is, however it ends (SIGKILL included); the destructor removes it at once.
#pragma once

#include <string>

#include "pfmstat/event_plan.h"

namespace pfmstat {

// A session's mode (pfmfs(5), sessions/NAME/mode): what its load names.
enum class Mode { Thread, System, Cgroup };

struct Target {
  bool cpu = false;  // system mode: `id` is a cpu
  long id = 0;       // the thread id or cpu number
};

class Session {
 public:
  // mkdir MOUNT/sessions/NAME, made as `target` needs (mode, flags, sets,
  // switching, registers). Throws UsageError with the mount's reason when
  // the mount refuses any of it: nothing has counted yet.
  Session(const std::string& mount, const std::string& name, const std::vector<SetPlan>& sets, std::uint64_t switch_ns,
          Mode mode, bool inherit);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // `load` and `start`; a refusal is a UsageError with the reason.
  void attach(const Target& target);
  // The same in cgroup mode: PATH as the mount takes it (pfmfs(5),
  // CONTROL-GROUP LOADS).
  void attachCgroup(const std::string& path);
  void stop();  // harmless once the session has unloaded itself

  std::string counts() const;
  std::string state() const;

  // Any other file of the session: `smpl_fmt` before the load, `restart`
  // on `ctl`, `smpl_buf` (record). A refused write is a UsageError with
  // the mount's reason; a failed read a RunError.
  void write(const std::string& rel, const std::string& text) const;
  std::string read(const std::string& rel) const;
  const std::string& dir() const { return dir_; }

  // `messages`, open O_NONBLOCK: record polls it and reads its lines.
  int messagesFd() const { return messages_fd_; }
  const std::string& name() const { return name_; }

 private:
  // Writes one value; on a refusal throws E with the file, errno and the
  // session's `error` line.
  template <typename E>
  void put(const std::string& rel, const std::string& text) const;

  std::string name_;
  std::string dir_;
  int messages_fd_ = -1;
};

}  // namespace pfmstat
