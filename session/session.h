// A perfmon2 monitoring session: its mode and flags, its event sets, the state
// machine unloaded -> loaded -> active <-> masked, and everything that happens
// to a loaded session: 64-bit emulation, set switching, overflow processing,
// messages and time accounting (SPEC §2.1-§3.3).
//
// Every public method takes the session's lock and may be called from any
// thread. A failing method changes nothing and leaves its reason in error().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "pmu/backend.h"
#include "pmu/result.h"
#include "session/caller.h"
#include "session/event_set.h"
#include "session/message_queue.h"
#include "session/register_rules.h"

namespace pfmfs::session {

class Engine;

enum class Mode { Thread, System };
enum class State { Unloaded, Loaded, Active, Masked };

const char* toString(Mode m);
const char* toString(State s);

struct Flags {
  bool notify_block = false;  // hold the monitored thread until restart after a notification
  bool no_msg = false;        // queue no overflow messages (masking still happens)
  bool autoclose = false;     // the fs destroys the session when its last file closes
  bool inherit = false;       // follow the thread's children (SPEC §3.4)

  bool operator==(const Flags&) const = default;
};

struct StateInfo {
  State state = State::Unloaded;
  Mode mode = Mode::Thread;
  std::optional<int> target;   // tid or cpu while loaded
  std::uint16_t set = 0;       // the active set (the next to run while stopped)
  std::size_t queued = 0;
  std::uint64_t lost = 0;
  bool exited = false;         // the monitored thread exited and unloaded the session
  std::uint64_t unscheduled_ns = 0;  // time the backend could not count the active set (perf's multiplexing)
};

struct SetInfo {
  std::uint16_t id = 0;
  SwitchSpec switch_spec;
  std::uint64_t runs = 0;
  std::uint64_t duration_ns = 0;
  std::uint64_t timeout_ns = 0;  // effective timeout; while active, what is left of it
  pmu::RegMask ovfl_pmds = 0;
  pmu::RegMask avail_pmcs = 0;
  pmu::RegMask avail_pmds = 0;
};

struct PmdValue {
  std::uint64_t value = 0;       // live while the set is on the hardware
  PmdState state;                // attributes (state.value is `value`)
};

// One PMD of a set as `pmds` shows it: written by the user or counting in the
// set, with its value live while the set is on the hardware.
struct PmdLine {
  unsigned index = 0;
  PmdState state;  // state.value is the live 64-bit value
};

// One line of `counts`: a used PMD of one set with its scaling.
struct CountLine {
  std::uint16_t set = 0;
  unsigned pmd = 0;
  std::uint64_t value = 0;
  std::uint64_t enabled_ns = 0;      // time the session was active and counting
  std::uint64_t running_ns = 0;      // time this set was active and counting
  std::optional<std::uint64_t> scaled;  // value * enabled / running; none if running == 0
};

class Session final : public std::enable_shared_from_this<Session>, private pmu::TargetListener {
 public:
  // Sessions are made by Engine::createSession.
  Session(Engine& engine, std::string name, uid_t uid, gid_t gid);
  ~Session() override;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }

  Mode mode() const;
  Status setMode(Mode m);          // EBUSY once loaded before; EINVAL system + notify_block
  Flags flags() const;
  Status setFlags(const Flags& f);  // EBUSY while loaded; EINVAL notify_block in system mode

  // ctl commands (SPEC §2.2).
  Status load(const Caller& caller, int target, std::optional<unsigned> set = std::nullopt);
  Status unload();
  Status start(std::optional<unsigned> set = std::nullopt);
  Status stop();
  Status restart();

  // Sets: created and deleted while unloaded only.
  Status createSet(unsigned id);
  Status deleteSet(unsigned id);
  std::vector<std::uint16_t> setIds() const;
  Status setSwitch(unsigned set, const SwitchSpec& spec);  // while unloaded
  Result<SetInfo> setInfo(unsigned set);

  // Registers of any set, in any state; the active set's hardware follows.
  Status writePmc(const Caller& caller, unsigned set, const PmcWrite& w);
  Status writePmd(unsigned set, const PmdWrite& w);
  // Validated as a whole, applied all-or-nothing.
  Status writeRegs(const Caller& caller, unsigned set, const std::vector<RegWrite>& writes);
  Result<PmcState> readPmc(unsigned set, unsigned index);
  Result<PmdValue> readPmd(unsigned set, unsigned index);
  Result<std::vector<RegWrite>> regs(unsigned set);
  // Every PMD written or used in the set, in register order (libpfm's pfm_read_pmds).
  Result<std::vector<PmdLine>> pmdStates(unsigned set);

  StateInfo state();
  std::string error() const;  // the reason of the last failure, "" if none
  // A failure found above the engine (a write that does not parse): recorded
  // in error() like the engine's own, and returned.
  Status refuse(Error e);
  std::vector<CountLine> counts();

  // Messages: take removes what it returns.
  std::vector<Message> takeMessages(std::size_t max);
  std::vector<Message> takeMessagesWhile(const std::function<bool(const Message&)>& accept);
  std::size_t queuedMessages() const;
  // Masked: a notification waits for restart (what POLLPRI reports on `msg`).
  bool masked() const;

  // Engine hooks.
  // The session leaves the engine: unloaded, and no load succeeds any more
  // (a load racing the destruction would otherwise claim a target for a
  // session nobody can reach).
  Status retire();
  void advanceBy(std::uint64_t ns);  // manual clock
  void tick();                       // real clock: timer thread
  void targetGone();                 // the monitored thread exited / cpu went away
  std::optional<pmu::Target> loadedTarget() const;

 private:
  // TargetListener: from a backend's own thread (an overflow, the target gone).
  void attention() override;

  // The lock, and the observer call made after it is released.
  class Op;

  EventSet* findSet(unsigned id);
  Status fail(Error e);
  bool loaded() const { return state_ != State::Unloaded; }
  bool counting() const { return state_ == State::Active; }
  EventSet& activeSet();
  std::uint64_t effectiveTimeout(const SwitchSpec& s) const;

  // Time and hardware.
  void catchUp();                     // to the target's present time
  void catchUpTo(std::uint64_t t_end);
  void accountTo(std::uint64_t t);
  void drainOverflows();
  bool takeOverflowToken();           // false: the session has used up its overflow budget
  void mask();                        // stop counting until restart
  void handleHwOverflow(const pmu::HwOverflow& o);
  void handleUserOverflow(pmu::RegMask pmds, const pmu::HwOverflow& o);
  void sampleActive();                // no-interrupt backends: catch wraps
  void takeOverflowInSkid();          // before the active set leaves the PMU
  void readHw(pmu::RegMask pmds);
  void foldActive();                  // hardware bits into the active set's image
  Status programActive();             // the active set onto the hardware (counting disabled)
  void haltCounting(const Error& e);  // the backend refused a set while counting
  void resetPmds(EventSet& set, pmu::RegMask pmds, bool long_reset);
  std::uint64_t resetValue(const PmdState& p, bool long_reset);
  void switchTo(EventSet& next);
  EventSet& nextSet();
  Status startCounting();
  void stopCounting();
  void unloadLocked(bool exited);
  void queueMessage(const Message& m);
  void liveValues(const EventSet& set, pmu::RegMask pmds);

  Engine& engine_;
  const pmu::PmuDescription& desc_;
  const std::string name_;
  const uid_t uid_;
  const gid_t gid_;
  const bool interrupts_;

  mutable std::mutex mutex_;  // guards everything below
  Mode mode_ = Mode::Thread;
  Flags flags_;
  State state_ = State::Unloaded;
  bool ever_loaded_ = false;
  bool retired_ = false;             // destroyed: loads refused
  bool exited_ = false;
  std::string error_;
  std::map<std::uint16_t, EventSet> sets_;
  std::uint16_t active_set_ = 0;
  bool set_chosen_ = false;           // a start or load set=N has picked the active set
  MessageQueue messages_;
  bool notify_pending_ = false;       // messages queued since the observer was last told

  // While loaded.
  std::unique_ptr<pmu::TargetPmu> pmu_;
  pmu::Target target_;
  pid_t target_pid_ = 0;                // process of a thread target
  // Scratch, by slot: hardware bits read or to load, PMC image, 64-bit values.
  std::vector<std::uint64_t> hw_;
  std::vector<std::uint64_t> pmc_image_;
  std::vector<std::uint64_t> values_;
  std::uint64_t counted_to_ = 0;        // target time accounted so far while counting
  std::uint64_t set_elapsed_ = 0;       // counting time of the active set in this activation
  std::uint64_t last_sample_ = 0;       // no-interrupt backends
  bool held_ = false;                   // notify_block: target held until restart
  std::uint64_t ovfl_tokens_ = 0;       // overflow interrupts left in the budget
  std::uint64_t ovfl_tokens_at_ = 0;    // target time of the last refill
  std::uint16_t pending_set_ = 0;       // masked: the set whose PMDs restart resets
  pmu::RegMask pending_resets_ = 0;

  // Across loads.
  std::uint64_t enabled_ns_ = 0;
  std::mt19937_64 random_;
};

}  // namespace pfmfs::session
