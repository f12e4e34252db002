// The command pfmstat measures: forked, stopped before its exec until
// release(), so that whatever is loaded on it meanwhile counts (or samples)
// from its first instruction, as perf's enable_on_exec does. Used by the
// stat mode (run.cpp) and by record (recorder.cpp).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace pfmstat {

// The exit status a shell would show for a waitpid status.
int statusOf(int wstatus);

// The path execvp would run for `name` (empty when there is none).
std::string resolveCommand(const std::string& name);

class Command {
 public:
  // Forks and waits until the child has stopped; throws RunError when it
  // ended instead. A name that is not found is no exception: notRun().
  Command(const std::vector<std::string>& argv, const sigset_t& original_mask);
  ~Command();
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  // Nothing to run (not found): the status to exit with, else nullopt.
  std::optional<int> notRun() const { return failed_status_ ? std::optional<int>(failed_status_) : std::nullopt; }

  pid_t pid() const { return pid_; }

  // Lets the command exec and returns once it has (or failed to: then
  // false, with a line on stderr).
  bool release();

  // The exit status once it has ended, without waiting.
  std::optional<int> poll();

  // Waits for the end; the exit status.
  int waitEnd();

  void signal(int sig);

 private:
  std::string name_;
  pid_t pid_ = -1;
  int err_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  int failed_status_ = 0;
};

}  // namespace pfmstat
