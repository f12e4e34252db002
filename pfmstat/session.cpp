#include "pfmstat/session.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "pfmstat/errors.h"
#include "pfmstat/mount_files.h"

namespace pfmstat {

template <typename E>
void Session::put(const std::string& rel, const std::string& text) const {
  if (int e = writeFile(dir_ + "/" + rel, text); e != 0) {
    std::string reason;
    try {
      reason = readFile(dir_ + "/error");
    } catch (const RunError&) {
    }
    while (!reason.empty() && reason.back() == '\n') reason.pop_back();
    std::string shown = text;
    while (!shown.empty() && shown.back() == '\n') shown.pop_back();
    for (auto& c : shown)
      if (c == '\n') c = ';';
    throw E(fmt::format("{} refused '{}' ({}){}{}", rel, shown, std::strerror(e), reason.empty() ? "" : ": ", reason));
  }
}

Session::Session(const std::string& mount, const std::string& name, const std::vector<SetPlan>& sets,
                 std::uint64_t switch_ns, Mode mode, bool inherit)
    : name_(name), dir_(mount + "/sessions/" + name) {
  if (::mkdir(dir_.c_str(), 0700) != 0)
    throw UsageError(fmt::format("cannot create session {}: {}", dir_, std::strerror(errno)));
  try {
    // The message file held open with autoclose: the session lives as long
    // as this process (or its copy of the descriptor) does.
    messages_fd_ = ::open((dir_ + "/messages").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (messages_fd_ < 0) throw RunError(fmt::format("cannot open {}/messages: {}", dir_, std::strerror(errno)));
    if (mode != Mode::Thread) put<UsageError>("mode", mode == Mode::System ? "system\n" : "cgroup\n");
    put<UsageError>("flags", inherit ? "autoclose inherit\n" : "autoclose\n");
    for (std::size_t i = 0; i < sets.size(); ++i) {
      std::string set = fmt::format("sets/{}", i);
      if (i > 0 && ::mkdir((dir_ + "/" + set).c_str(), 0700) != 0)
        throw UsageError(fmt::format("cannot create {}/{}: {}", dir_, set, std::strerror(errno)));
      put<UsageError>(set + "/regs", sets[i].regs());
      if (sets.size() > 1) put<UsageError>(set + "/switch", fmt::format("time {}\n", switch_ns));
    }
  } catch (...) {
    ::rmdir(dir_.c_str());
    if (messages_fd_ >= 0) ::close(messages_fd_);
    throw;
  }
}

Session::~Session() {
  // rmdir stops and unloads whatever the state; the close after it is what
  // autoclose would have done anyway.
  ::rmdir(dir_.c_str());
  if (messages_fd_ >= 0) ::close(messages_fd_);
}

void Session::attach(const Target& target) {
  put<UsageError>("ctl", fmt::format("load {}\n", target.id));
  put<UsageError>("ctl", "start\n");
}

void Session::attachCgroup(const std::string& path) {
  put<UsageError>("ctl", fmt::format("load {}\n", path));
  put<UsageError>("ctl", "start\n");
}

void Session::stop() {
  // EINVAL once the session unloaded itself (its thread exited): nothing to stop.
  (void)writeFile(dir_ + "/ctl", "stop\n");
}

std::string Session::counts() const { return readFile(dir_ + "/counts"); }
std::string Session::state() const { return readFile(dir_ + "/state"); }
void Session::write(const std::string& rel, const std::string& text) const { put<UsageError>(rel, text); }
std::string Session::read(const std::string& rel) const { return readFile(dir_ + "/" + rel); }

}  // namespace pfmstat
