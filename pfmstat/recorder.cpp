// record's loop over the sessions' messages and buffers (recorder.h).
#include "pfmstat/recorder.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "pfmstat/errors.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/sample_buffer.h"

namespace pfmstat {
namespace {

using Clock = std::chrono::steady_clock;

// The maps' rings are read this often: a ring of 64 pages holds about 2000
// mappings, more than a parallel make maps in 10 ms.
constexpr int kPollMs = 10;
constexpr auto kStateEvery = std::chrono::milliseconds(100);

std::uint64_t stateValue(const std::string& state, std::string_view key) {
  auto kv = parseRecord(state.substr(0, state.find('\n')));
  auto it = kv.find(std::string(key));
  if (it == kv.end()) return 0;
  return std::strtoull(it->second.c_str(), nullptr, 10);
}

}  // namespace

Recorder::Recorder(std::vector<Session*> sessions, DataWriter& out, MapEvents* events, ProcMaps* proc)
    : sessions_(std::move(sessions)),
      out_(out),
      events_(events),
      proc_(proc),
      ended_(sessions_.size()),
      throttled_(sessions_.size()),
      lost_(sessions_.size()),
      dropped_(sessions_.size()) {}

void Recorder::drainMaps() {
  if (events_) events_->drain(out_);
}

void Recorder::drainBuffer(std::size_t i) {
  // The maps first: a sample's process must have its exec and mappings
  // before it (the report takes each process's maps as of its last exec).
  drainMaps();
  SampleBuffer b = parseSampleBuffer(sessions_[i]->read("smpl_buf"), 0);
  std::set<std::uint32_t> pids;
  for (const auto& s : b.samples) {
    if (proc_ && pids.insert(s.pid).second && !gone_.count(s.pid))
      if (!proc_->snapshot(static_cast<pid_t>(s.pid), out_)) gone_.insert(s.pid);
    out_.sample(s);
  }
  totals_.samples += b.samples.size();
}

void Recorder::readState(std::size_t i) {
  std::string state;
  try {
    state = sessions_[i]->state();
  } catch (const RunError&) {
    return;
  }
  // throttled= shows only while loaded and is the load's total: the last
  // value seen before the end is kept.
  throttled_[i] = std::max(throttled_[i], stateValue(state, "throttled"));
  lost_[i] = std::max(lost_[i], stateValue(state, "lost"));
  // Kept after the unload until the next load: the last value is the total.
  dropped_[i] = std::max(dropped_[i], stateValue(state, "smpl_dropped"));
}

void Recorder::readMessages(std::size_t i, bool restart) {
  char buf[4096];
  while (true) {
    ssize_t n = ::read(sessions_[i]->messagesFd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) throw RunError(fmt::format("cannot read {}/messages: {}", sessions_[i]->dir(), std::strerror(errno)));
    if (n == 0) {  // the session is gone (unmounted)
      ended_[i] = true;
      return;
    }
    std::string_view text(buf, static_cast<std::size_t>(n));
    for (std::string_view line : recordLines(text)) {
      auto kv = parseRecord(line);
      if (kv["type"] == "ovfl") {
        ++totals_.fills;
        readState(i);
        if (restart) {
          drainBuffer(i);
          sessions_[i]->write("ctl", "restart\n");
        }
      } else if (kv["type"] == "end") {
        ended_[i] = true;
      }
    }
  }
}

int Recorder::run(Command* command, double settle_s) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  int sfd = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) throw RunError(fmt::format("signalfd: {}", std::strerror(errno)));
  std::vector<pollfd> fds{{sfd, POLLIN, 0}};
  for (auto* s : sessions_) fds.push_back({s->messagesFd(), POLLIN, 0});

  int status = 0;
  bool stop = false, command_done = false;
  Clock::time_point settle_until{}, next_state = Clock::now();
  while (!stop) {
    for (std::size_t i = 0; i < sessions_.size(); ++i) fds[i + 1].fd = ended_[i] ? -1 : sessions_[i]->messagesFd();
    if (::poll(fds.data(), fds.size(), kPollMs) < 0 && errno != EINTR) {
      ::close(sfd);
      throw RunError(fmt::format("poll: {}", std::strerror(errno)));
    }
    drainMaps();
    signalfd_siginfo si;
    while (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGCHLD) continue;
      if (!command) {
        stop = true;
      } else if (si.ssi_code <= 0) {
        // Sent to pfmstat alone (kill): passed on, as the command would have
        // had it from its terminal, which sends it to both.
        command->signal(static_cast<int>(si.ssi_signo));
      }
    }
    for (std::size_t i = 0; i < sessions_.size(); ++i)
      if (!ended_[i]) readMessages(i, true);
    if (Clock::now() >= next_state) {
      for (std::size_t i = 0; i < sessions_.size(); ++i)
        if (!ended_[i]) readState(i);
      next_state = Clock::now() + kStateEvery;
    }
    if (command && !command_done) {
      if (auto st = command->poll()) {
        status = *st;
        command_done = true;
        settle_until =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(settle_s));
      }
    }
    bool all_ended = true;
    for (bool e : ended_) all_ended = all_ended && e;
    // Children the command left running (daemons) are not waited for.
    if (all_ended || (command_done && Clock::now() >= settle_until)) break;
  }
  ::close(sfd);
  for (std::size_t i = 0; i < sessions_.size(); ++i) {
    if (!ended_[i]) {
      readState(i);
      sessions_[i]->stop();
    }
    // Fills notified since the last look are counted; their buffer is the
    // one read now, so no restart (which would empty it).
    readMessages(i, false);
    drainBuffer(i);
    totals_.throttled += throttled_[i];
    totals_.lost_messages += lost_[i];
    totals_.dropped += dropped_[i];
  }
  drainMaps();
  return status;
}

}  // namespace pfmstat
