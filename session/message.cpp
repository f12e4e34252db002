// Rendering of messages as text lines and pfarg_msg_t records.
#include "session/message.h"

#include <fmt/format.h>

namespace pfmfs::session {

namespace {

template <typename T>
void putLe(MessageRecord& r, std::size_t off, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    r[off + i] = static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * i));
}

}  // namespace

std::string toText(const Message& m) {
  if (m.type == MessageType::End) return fmt::format("type=end seq={}\n", m.seq);
  return fmt::format("type=ovfl seq={} set={} pmds=0x{:x} pid={} tid={} cpu={} ip=0x{:x}\n", m.seq, m.set, m.pmds,
                     m.pid, m.tid, m.cpu, m.ip);
}

MessageRecord toRecord(const Message& m) {
  MessageRecord r{};
  putLe<std::uint32_t>(r, 0, static_cast<std::uint32_t>(m.type));
  if (m.type == MessageType::End) return r;
  putLe<std::uint32_t>(r, 4, static_cast<std::uint32_t>(m.tid));  // msg_ovfl_pid: the thread, as perfmon2 filled it
  putLe<std::uint16_t>(r, 8, m.set);
  putLe<std::uint16_t>(r, 10, static_cast<std::uint16_t>(m.cpu));
  putLe<std::uint32_t>(r, 12, static_cast<std::uint32_t>(m.pid));  // msg_ovfl_tid: the process
  putLe<std::uint64_t>(r, 16, m.ip);
  putLe<std::uint64_t>(r, 24, m.pmds);  // msg_ovfl_pmds[0]; words 1-4 stay 0: indices < 64
  return r;
}

}  // namespace pfmfs::session
