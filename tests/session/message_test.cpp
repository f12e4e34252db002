// Messages as users read them: the text lines of `messages`, the 64-byte
// pfarg_msg_t records of `msg` (pfmfs(5), messages and msg), and the bounded queue behind both
// (sequence numbers, capacity, lost count, order).
#include "session/message.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "session/message_queue.h"

namespace pfmfs::session {
namespace {

// Little-endian readers over a record: the layout is fixed by perfmon2, not by
// the host, so the tests read bytes rather than casting.
std::uint64_t le(const MessageRecord& r, std::size_t off, std::size_t size) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < size; ++i) v |= std::uint64_t{r.at(off + i)} << (8 * i);
  return v;
}
std::uint32_t u32(const MessageRecord& r, std::size_t off) { return static_cast<std::uint32_t>(le(r, off, 4)); }
std::uint16_t u16(const MessageRecord& r, std::size_t off) { return static_cast<std::uint16_t>(le(r, off, 2)); }
std::uint64_t u64(const MessageRecord& r, std::size_t off) { return le(r, off, 8); }

// perfmon2's pfarg_ovfl_msg_t as a perfmon2 program declares it (x86-64).
struct PfargOvflMsg {
  std::uint32_t msg_type;
  std::uint32_t msg_ovfl_pid;
  std::uint16_t msg_active_set;
  std::uint16_t msg_ovfl_cpu;
  std::uint32_t msg_ovfl_tid;
  std::uint64_t msg_ovfl_ip;
  std::uint64_t msg_ovfl_pmds[5];
};
static_assert(sizeof(PfargOvflMsg) == 64);
static_assert(offsetof(PfargOvflMsg, msg_ovfl_pid) == 4);
static_assert(offsetof(PfargOvflMsg, msg_active_set) == 8);
static_assert(offsetof(PfargOvflMsg, msg_ovfl_cpu) == 10);
static_assert(offsetof(PfargOvflMsg, msg_ovfl_tid) == 12);
static_assert(offsetof(PfargOvflMsg, msg_ovfl_ip) == 16);
static_assert(offsetof(PfargOvflMsg, msg_ovfl_pmds) == 24);

Message ovfl(std::uint64_t seq, std::uint16_t set, pmu::RegMask pmds, pid_t pid, pid_t tid, int cpu, std::uint64_t ip) {
  Message m;
  m.type = MessageType::Overflow;
  m.seq = seq;
  m.set = set;
  m.pmds = pmds;
  m.pid = pid;
  m.tid = tid;
  m.cpu = cpu;
  m.ip = ip;
  return m;
}

Message endMsg(std::uint64_t seq) {
  Message m;
  m.type = MessageType::End;
  m.seq = seq;
  return m;
}

// ---- constants ---------------------------------------------------------------

TEST(MessageConstants, TypesAreThePerfmon2MessageCodes) {
  EXPECT_EQ(static_cast<std::uint32_t>(MessageType::Overflow), 1u);  // PFM_MSG_OVFL
  EXPECT_EQ(static_cast<std::uint32_t>(MessageType::End), 2u);       // PFM_MSG_END
  EXPECT_EQ(kMessageRecordSize, 64u);
  EXPECT_EQ(sizeof(MessageRecord), 64u);
}

TEST(MessageConstants, DefaultMessageIsAnOverflow) {
  Message m;
  EXPECT_EQ(m.type, MessageType::Overflow);
  EXPECT_EQ(m.seq, 0u);
}

// ---- text ----------------------------------------------------------------------

TEST(MessageText, OverflowLineHasEveryFieldInOrder) {
  Message m = ovfl(7, 3, 0x10001, 1234, 1240, 1, 0x401000);
  EXPECT_EQ(toText(m), "type=ovfl seq=7 set=3 pmds=0x10001 pid=1234 tid=1240 cpu=1 ip=0x401000\n");
}

TEST(MessageText, OverflowLinePidIsTheProcessAndTidTheThread) {
  // Unlike the binary record, the text means what it says.
  Message m = ovfl(1, 0, 0x1, 100, 105, 0, 0x10);
  EXPECT_EQ(toText(m), "type=ovfl seq=1 set=0 pmds=0x1 pid=100 tid=105 cpu=0 ip=0x10\n");
}

TEST(MessageText, OverflowLineZeroFieldsPrintAsZero) {
  Message m = ovfl(1, 0, 0, 0, 0, 0, 0);
  EXPECT_EQ(toText(m), "type=ovfl seq=1 set=0 pmds=0x0 pid=0 tid=0 cpu=0 ip=0x0\n");
}

TEST(MessageText, OverflowLineExtremeValues) {
  Message m = ovfl(std::numeric_limits<std::uint64_t>::max(), 65535, ~pmu::RegMask{0}, 2147483647, 2147483646, 4095,
                   std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(toText(m),
            "type=ovfl seq=18446744073709551615 set=65535 pmds=0xffffffffffffffff pid=2147483647 "
            "tid=2147483646 cpu=4095 ip=0xffffffffffffffff\n");
}

TEST(MessageText, HexFieldsAreLowerCaseWithoutPadding) {
  Message m = ovfl(2, 1, 0x70000, 1, 1, 1, 0xDEADBEEF);
  EXPECT_EQ(toText(m), "type=ovfl seq=2 set=1 pmds=0x70000 pid=1 tid=1 cpu=1 ip=0xdeadbeef\n");
}

TEST(MessageText, EndLineIsTypeAndSeqOnly) {
  EXPECT_EQ(toText(endMsg(9)), "type=end seq=9\n");
  EXPECT_EQ(toText(endMsg(1)), "type=end seq=1\n");
}

TEST(MessageText, EndLineIgnoresOverflowFields) {
  Message m = ovfl(4, 3, 0xff, 10, 11, 1, 0x1234);
  m.type = MessageType::End;
  EXPECT_EQ(toText(m), "type=end seq=4\n");
}

TEST(MessageText, EveryLineEndsWithExactlyOneNewline) {
  for (const Message& m : {ovfl(1, 2, 3, 4, 5, 6, 7), endMsg(8)}) {
    std::string t = toText(m);
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(t.back(), '\n');
    EXPECT_EQ(t.find('\n'), t.size() - 1) << t;
  }
}

// ---- records ---------------------------------------------------------------------

TEST(MessageRecord, OverflowFieldsAtTheirOffsets) {
  Message m = ovfl(5, 0x0102, 0x0000000000070009ull, 0x11223344, 0x55667788, 0x0a0b, 0x8877665544332211ull);
  MessageRecord r = toRecord(m);
  ASSERT_EQ(r.size(), 64u);
  EXPECT_EQ(u32(r, 0), 1u);                      // msg_type = PFM_MSG_OVFL
  EXPECT_EQ(u32(r, 4), 0x55667788u);             // msg_ovfl_pid: the thread id
  EXPECT_EQ(u16(r, 8), 0x0102u);                 // msg_active_set
  EXPECT_EQ(u16(r, 10), 0x0a0bu);                // msg_ovfl_cpu
  EXPECT_EQ(u32(r, 12), 0x11223344u);            // msg_ovfl_tid: the process id
  EXPECT_EQ(u64(r, 16), 0x8877665544332211ull);  // msg_ovfl_ip
  EXPECT_EQ(u64(r, 24), 0x70009ull);             // msg_ovfl_pmds[0]
  for (std::size_t off = 32; off < 64; off += 8) EXPECT_EQ(u64(r, off), 0u) << "msg_ovfl_pmds word at " << off;
}

TEST(MessageRecord, BytesAreLittleEndian) {
  Message m = ovfl(1, 0x0102, 0x0807060504030201ull, 0x0d0c0b0a, 0x04030201, 0x0605, 0x1817161514131211ull);
  MessageRecord r = toRecord(m);
  const unsigned char expect[32] = {
      0x01, 0x00, 0x00, 0x00,                          // type
      0x01, 0x02, 0x03, 0x04,                          // msg_ovfl_pid = tid
      0x02, 0x01,                                      // set
      0x05, 0x06,                                      // cpu
      0x0a, 0x0b, 0x0c, 0x0d,                          // msg_ovfl_tid = pid
      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // ip
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // pmds[0]
  };
  for (std::size_t i = 0; i < sizeof expect; ++i) EXPECT_EQ(r[i], expect[i]) << "byte " << i;
  for (std::size_t i = sizeof expect; i < 64; ++i) EXPECT_EQ(r[i], 0) << "byte " << i;
}

TEST(MessageRecord, PidAndTidAreSwappedAsPerfmon2FilledThem) {
  // A thread 4321 of process 4000: a perfmon2 program reads msg_ovfl_pid as
  // the thread and msg_ovfl_tid as the process.
  MessageRecord r = toRecord(ovfl(1, 0, 1, /*pid=*/4000, /*tid=*/4321, 0, 0));
  EXPECT_EQ(u32(r, 4), 4321u);
  EXPECT_EQ(u32(r, 12), 4000u);
}

TEST(MessageRecord, ReadsBackThroughThePerfmon2Struct) {
  Message m = ovfl(3, 2, 0x50003, 700, 701, 1, 0x7fff12345678ull);
  MessageRecord r = toRecord(m);
  PfargOvflMsg s;
  std::memcpy(&s, r.data(), sizeof s);  // x86-64 is little-endian, as the record
  EXPECT_EQ(s.msg_type, 1u);
  EXPECT_EQ(s.msg_ovfl_pid, 701u);
  EXPECT_EQ(s.msg_active_set, 2u);
  EXPECT_EQ(s.msg_ovfl_cpu, 1u);
  EXPECT_EQ(s.msg_ovfl_tid, 700u);
  EXPECT_EQ(s.msg_ovfl_ip, 0x7fff12345678ull);
  EXPECT_EQ(s.msg_ovfl_pmds[0], 0x50003ull);
  EXPECT_EQ(s.msg_ovfl_pmds[1], 0u);
  EXPECT_EQ(s.msg_ovfl_pmds[2], 0u);
  EXPECT_EQ(s.msg_ovfl_pmds[3], 0u);
  EXPECT_EQ(s.msg_ovfl_pmds[4], 0u);
}

TEST(MessageRecord, ExtremeValuesFillTheirFieldsOnly) {
  Message m = ovfl(std::numeric_limits<std::uint64_t>::max(), 65535, ~pmu::RegMask{0}, 0x7fffffff, 0x7ffffffe, 65535,
                   ~std::uint64_t{0});
  MessageRecord r = toRecord(m);
  EXPECT_EQ(u32(r, 0), 1u);
  EXPECT_EQ(u32(r, 4), 0x7ffffffeu);
  EXPECT_EQ(u16(r, 8), 0xffffu);
  EXPECT_EQ(u16(r, 10), 0xffffu);
  EXPECT_EQ(u32(r, 12), 0x7fffffffu);
  EXPECT_EQ(u64(r, 16), ~std::uint64_t{0});
  EXPECT_EQ(u64(r, 24), ~std::uint64_t{0});
  for (std::size_t off = 32; off < 64; off += 8) EXPECT_EQ(u64(r, off), 0u) << off;
}

TEST(MessageRecord, SeqIsNotPartOfTheRecord) {
  // pfarg_msg_t has no sequence number: two messages that differ only in seq
  // give the same bytes.
  EXPECT_EQ(toRecord(ovfl(1, 1, 2, 3, 4, 0, 5)), toRecord(ovfl(99, 1, 2, 3, 4, 0, 5)));
  EXPECT_EQ(toRecord(endMsg(1)), toRecord(endMsg(99)));
}

TEST(MessageRecord, EndRecordIsTypeTwoAndZeros) {
  MessageRecord r = toRecord(endMsg(3));
  EXPECT_EQ(u32(r, 0), 2u);
  for (std::size_t i = 4; i < 64; ++i) EXPECT_EQ(r[i], 0) << "byte " << i;
}

TEST(MessageRecord, EndRecordIgnoresOverflowFields) {
  Message m = ovfl(3, 7, 0xff, 100, 101, 1, 0xabcdef);
  m.type = MessageType::End;
  MessageRecord r = toRecord(m);
  EXPECT_EQ(u32(r, 0), 2u);
  for (std::size_t i = 4; i < 64; ++i) EXPECT_EQ(r[i], 0) << "byte " << i;
}

// ---- queue -------------------------------------------------------------------------

std::vector<std::uint64_t> seqs(const std::vector<Message>& ms) {
  std::vector<std::uint64_t> out;
  for (const auto& m : ms) out.push_back(m.seq);
  return out;
}

TEST(MessageQueue, StartsEmpty) {
  MessageQueue q(4);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.lost(), 0u);
  EXPECT_TRUE(q.take(10).empty());
}

TEST(MessageQueue, SeqCountsFromOneAndOverridesTheCallersSeq) {
  MessageQueue q(8);
  ASSERT_TRUE(q.push(ovfl(42, 0, 1, 1, 1, 0, 0)));
  ASSERT_TRUE(q.push(endMsg(0)));
  ASSERT_TRUE(q.push(ovfl(7, 0, 1, 1, 1, 0, 0)));
  EXPECT_EQ(seqs(q.take(10)), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(MessageQueue, TakeReturnsOldestFirstAndKeepsFields) {
  MessageQueue q(8);
  ASSERT_TRUE(q.push(ovfl(0, 1, 0x1, 10, 11, 0, 0x100)));
  ASSERT_TRUE(q.push(ovfl(0, 2, 0x2, 20, 21, 1, 0x200)));
  ASSERT_TRUE(q.push(endMsg(0)));
  auto ms = q.take(10);
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[0].type, MessageType::Overflow);
  EXPECT_EQ(ms[0].set, 1u);
  EXPECT_EQ(ms[0].pmds, 0x1u);
  EXPECT_EQ(ms[0].pid, 10);
  EXPECT_EQ(ms[0].tid, 11);
  EXPECT_EQ(ms[0].ip, 0x100u);
  EXPECT_EQ(ms[1].set, 2u);
  EXPECT_EQ(ms[1].cpu, 1);
  EXPECT_EQ(ms[1].ip, 0x200u);
  EXPECT_EQ(ms[2].type, MessageType::End);
  EXPECT_EQ(toText(ms[2]), "type=end seq=3\n");
  EXPECT_TRUE(q.empty());
}

TEST(MessageQueue, TakeMaxReturnsAtMostMaxAndLeavesTheRest) {
  MessageQueue q(8);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(q.push(ovfl(0, static_cast<std::uint16_t>(i), 1, 1, 1, 0, 0)));
  EXPECT_EQ(seqs(q.take(2)), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(seqs(q.take(1)), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(seqs(q.take(100)), (std::vector<std::uint64_t>{4, 5}));
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.take(100).empty());
}

TEST(MessageQueue, TakeZeroTakesNothing) {
  MessageQueue q(4);
  ASSERT_TRUE(q.push(endMsg(0)));
  EXPECT_TRUE(q.take(0).empty());
  EXPECT_EQ(q.size(), 1u);
}

TEST(MessageQueue, FullQueueCountsLostAndKeepsTheOldest) {
  MessageQueue q(3);
  EXPECT_TRUE(q.push(ovfl(0, 10, 1, 1, 1, 0, 0)));
  EXPECT_TRUE(q.push(ovfl(0, 11, 1, 1, 1, 0, 0)));
  EXPECT_TRUE(q.push(ovfl(0, 12, 1, 1, 1, 0, 0)));
  EXPECT_EQ(q.lost(), 0u);
  EXPECT_FALSE(q.push(ovfl(0, 13, 1, 1, 1, 0, 0)));
  EXPECT_FALSE(q.push(endMsg(0)));
  EXPECT_EQ(q.lost(), 2u);
  EXPECT_EQ(q.size(), 3u);
  auto ms = q.take(10);
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[0].set, 10u);
  EXPECT_EQ(ms[1].set, 11u);
  EXPECT_EQ(ms[2].set, 12u);
  EXPECT_EQ(seqs(ms), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(MessageQueue, LostMessagesTakeNoSeq) {
  MessageQueue q(2);
  ASSERT_TRUE(q.push(endMsg(0)));   // 1
  ASSERT_TRUE(q.push(endMsg(0)));   // 2
  EXPECT_FALSE(q.push(endMsg(0)));  // lost
  EXPECT_FALSE(q.push(endMsg(0)));  // lost
  EXPECT_EQ(seqs(q.take(1)), (std::vector<std::uint64_t>{1}));
  ASSERT_TRUE(q.push(endMsg(0)));  // 3: no gap for the lost ones
  EXPECT_FALSE(q.push(endMsg(0)));
  EXPECT_EQ(seqs(q.take(10)), (std::vector<std::uint64_t>{2, 3}));
  ASSERT_TRUE(q.push(endMsg(0)));
  EXPECT_EQ(seqs(q.take(10)), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(q.lost(), 3u);  // lost counts accumulate; taking does not reset them
}

TEST(MessageQueue, TakingMakesRoomAgain) {
  MessageQueue q(1);
  ASSERT_TRUE(q.push(endMsg(0)));
  EXPECT_FALSE(q.push(endMsg(0)));
  EXPECT_EQ(q.take(1).size(), 1u);
  EXPECT_TRUE(q.push(endMsg(0)));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.lost(), 1u);
}

TEST(MessageQueue, ZeroCapacityLosesEverything) {
  MessageQueue q(0);
  EXPECT_FALSE(q.push(endMsg(0)));
  EXPECT_FALSE(q.push(ovfl(0, 0, 1, 1, 1, 0, 0)));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.lost(), 2u);
  EXPECT_TRUE(q.take(5).empty());
}

TEST(MessageQueue, SixtyFourMessagesFitThenLostCounts) {
  // The engine's default: 64 queued messages, then lost= counts.
  MessageQueue q(64);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(q.push(ovfl(0, 0, 1, 1, 1, 0, 0))) << i;
  EXPECT_FALSE(q.push(ovfl(0, 0, 1, 1, 1, 0, 0)));
  EXPECT_EQ(q.size(), 64u);
  EXPECT_EQ(q.lost(), 1u);
  auto ms = q.take(64);
  ASSERT_EQ(ms.size(), 64u);
  for (std::size_t i = 0; i < ms.size(); ++i) EXPECT_EQ(ms[i].seq, i + 1);
}

}  // namespace
}  // namespace pfmfs::session
