// A notification queued on a session, and its two renderings: the text line
// of the `messages` file and perfmon2's 64-byte pfarg_msg_t of the `msg` file.
// Both come from the same Message so they cannot disagree.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>

#include "pmu/pmu_description.h"

namespace pfmfs::session {

enum class MessageType : std::uint32_t {
  Overflow = 1,  // PFM_MSG_OVFL
  End = 2,       // PFM_MSG_END: the monitored thread exited
};

struct Message {
  MessageType type = MessageType::Overflow;
  std::uint64_t seq = 0;  // from 1, per session
  std::uint16_t set = 0;  // active set at the overflow
  pmu::RegMask pmds = 0;  // overflowed PMDs that asked for notification
  pid_t pid = 0;          // process of the interrupted thread
  pid_t tid = 0;          // the interrupted thread
  int cpu = 0;
  std::uint64_t ip = 0;
};

inline constexpr std::size_t kMessageRecordSize = 64;
using MessageRecord = std::array<unsigned char, kMessageRecordSize>;

// "type=ovfl seq=N set=S pmds=0x.. pid=P tid=T cpu=C ip=0x..\n" or
// "type=end seq=N\n".
std::string toText(const Message& m);

// pfarg_msg_t, little-endian: u32 msg_type, u32 msg_ovfl_pid, u16
// msg_active_set, u16 msg_ovfl_cpu, u32 msg_ovfl_tid, u64 msg_ovfl_ip, u64
// msg_ovfl_pmds[5]. As the perfmon2 kernel filled it, msg_ovfl_pid holds the
// thread id and msg_ovfl_tid the process id.
MessageRecord toRecord(const Message& m);

}  // namespace pfmfs::session
