// Sampling with perfmon2's default format over the sim under the manual
// clock (pfmfs(5), SAMPLING): every field of every entry, smpl_pmds,
// simultaneous overflows, a buffer that fills and a restart, set switches,
// random resets, eventid, the format's refusals and the owner's limit, and
// the buffer's memfd as libpfm-compat maps it.
//
// Cycles count 3/ns and instructions 2/ns: a period of 300 cycles ends at
// every 100 ns, exactly, and the sim's ip is 0x401000 + ((t / 64) % 4096) * 4.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fastpath/sample_layout.h"
#include "session/engine.h"
#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::fastpath::DflEntry;
using pfmfs::fastpath::DflHeader;
using pfmfs::pmu::RegMask;
using pfmfs::session::PmdWrite;
using pfmfs::session::SampleRecord;
using pfmfs::session::SamplingSpec;
using pfmfs::session::State;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::neg;
using pfmfs::testing::pmdWrite;
using pfmfs::testing::SimConfig;

using u64 = std::uint64_t;
using Rig = pfmfs::testing::SessionRig;

u64 simIp(u64 t) { return 0x401000 + ((t / 64) % 0x1000) * 4; }

// 7 PMDs on the sim's model: the largest entry is 40 + 56 bytes.
constexpr u64 kMinSpace = 40 + 8 * 7;
constexpr u64 kHeader = 128;

SamplingSpec dfl(u64 buf_size) { return SamplingSpec{"default", buf_size, 0}; }

// pmd0 samples cycles every 300 (short reset 300, long 600), recording pmd1
// (instructions, never reset).
void sampleCycles(Rig& r, bool notify = true, u64 eventid = 0) {
  r.pmc(0, 0, kCycles);
  r.pmc(0, 1, kInstructions);
  PmdWrite w = pmdWrite(0, neg(300));
  w.short_reset = neg(300);
  w.long_reset = neg(600);
  w.smpl_pmds = RegMask{1} << 1;
  w.notify = notify;
  w.eventid = eventid;
  r.pmd(0, w);
}

void expectEntry(const SampleRecord& e, unsigned pmd, u64 t, u64 last_reset, std::vector<u64> values,
                 unsigned set = 0) {
  EXPECT_EQ(e.pmd, pmd);
  EXPECT_EQ(e.tstamp, t);
  EXPECT_EQ(e.ip, simIp(t)) << "t=" << t;
  EXPECT_EQ(e.last_reset, last_reset) << "t=" << t;
  EXPECT_EQ(e.values, values) << "t=" << t;
  EXPECT_EQ(e.set, set);
  EXPECT_EQ(e.cpu, 0u);
  EXPECT_EQ(e.tid, pfmfs::testing::gettidNow());
  EXPECT_EQ(e.pid, ::getpid());
}

TEST(SessionSampling, EveryOverflowWritesAnExactEntry) {
  Rig r;
  sampleCycles(r, true, 77);
  r.ok(r.s().setSampling(dfl(4096)));
  r.loadAndStart();
  r.advance(350);
  auto samples = r.s().samples();
  ASSERT_EQ(samples.size(), 3u);
  for (unsigned k = 0; k < 3; ++k) {
    expectEntry(samples[k], 0, 100 * (k + 1), neg(300), {200 * (k + 1)});
    EXPECT_EQ(samples[k].eventid, 77u);
    EXPECT_EQ(samples[k].smpl_pmds, RegMask{1} << 1);
  }
  // notify masks only when the buffer fills: counting went on.
  auto st = r.state();
  EXPECT_EQ(st.state, State::Active);
  EXPECT_EQ(st.queued, 0u);
  EXPECT_TRUE(st.sampling);
  EXPECT_EQ(st.smpl_count, 3u);
  EXPECT_EQ(st.smpl_overflows, 0u);
  EXPECT_EQ(r.read(0, 0), neg(300) + 150);  // 50 ns into the fourth period
}

TEST(SessionSampling, TheBytesAreTheDefaultFormatsLayout) {
  Rig r;
  sampleCycles(r);
  r.ok(r.s().setSampling(dfl(1000)));
  r.loadAndStart();
  r.advance(200);
  std::vector<std::uint8_t> b = r.s().sampleBytes();
  ASSERT_EQ(b.size(), 1000u);
  DflHeader h;
  std::memcpy(&h, b.data(), sizeof h);
  EXPECT_EQ(h.count, 2u);
  EXPECT_EQ(h.cur_offs, kHeader + 2 * 48);
  EXPECT_EQ(h.overflows, 0u);
  EXPECT_EQ(h.buf_size, 1000u);
  EXPECT_EQ(h.min_buf_space, kMinSpace);
  EXPECT_EQ(h.version, 0x10000u);
  EXPECT_EQ(h.buf_flags, 0u);
  for (unsigned k = 0; k < 2; ++k) {
    DflEntry e;
    const std::uint8_t* at = b.data() + kHeader + 48 * k;
    std::memcpy(&e, at, sizeof e);
    EXPECT_EQ(e.tid, static_cast<std::uint32_t>(pfmfs::testing::gettidNow()));
    EXPECT_EQ(e.pid, static_cast<std::uint32_t>(::getpid()));
    EXPECT_EQ(e.ovfl_pmd, 0u);
    EXPECT_EQ(e.last_reset_val, neg(300));
    EXPECT_EQ(e.tstamp, 100 * (k + 1));
    EXPECT_EQ(e.ip, simIp(100 * (k + 1)));
    EXPECT_EQ(e.set, 0u);
    u64 v;
    std::memcpy(&v, at + 40, 8);
    EXPECT_EQ(v, 200 * (k + 1));
  }
}

TEST(SessionSampling, AFullBufferMasksNotifiesAndRestartEmptiesIt) {
  Rig r;
  sampleCycles(r);
  // Room for two entries of 48 bytes: after the second, less than the
  // largest entry is left.
  r.ok(r.s().setSampling(dfl(kHeader + kMinSpace + 48)));
  r.loadAndStart();
  r.advance(150);
  EXPECT_EQ(r.state().state, State::Active);
  r.advance(100);  // the second sample, at 200, fills it
  auto st = r.state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_EQ(st.smpl_count, 2u);
  EXPECT_EQ(st.smpl_overflows, 1u);
  auto m = r.take();
  ASSERT_EQ(m.size(), 1u);
  pfmfs::testing::expectOverflowMessage(m[0], 1, 0, 0x1);
  EXPECT_EQ(m[0].ip, simIp(200));
  EXPECT_EQ(r.read(0, 0), 0u);  // wrapped; the reset waits for restart
  r.advance(1000);              // masked: nothing counts, nothing is recorded
  EXPECT_EQ(r.s().samples().size(), 2u);

  r.restart();  // empty again, and the long reset: the next sample 200 ns on
  EXPECT_EQ(r.state().smpl_count, 0u);
  EXPECT_EQ(r.state().smpl_overflows, 1u);
  r.advance(200);
  auto samples = r.s().samples();
  ASSERT_EQ(samples.size(), 1u);
  // The thread's time went on while masked (150 + 100 + 1000): the sample
  // comes 200 ns after the restart; instructions counted 400 before and 400 since.
  expectEntry(samples[0], 0, 1450, neg(600), {800});
}

TEST(SessionSampling, SimultaneousOverflowsGiveConsecutiveEntriesInPmdOrder) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.pmc(0, 1, kInstructions);
  PmdWrite c = pmdWrite(0, neg(300));  // t = 100
  c.short_reset = neg(300);
  c.smpl_pmds = RegMask{1} << 1;
  r.pmd(0, c);
  PmdWrite i = pmdWrite(1, neg(200));  // t = 100 too
  i.short_reset = neg(400);
  i.smpl_pmds = RegMask{1};
  r.pmd(0, i);
  r.ok(r.s().setSampling(dfl(4096)));
  r.loadAndStart();
  r.advance(100);
  auto s = r.s().samples();
  ASSERT_EQ(s.size(), 2u);
  // Each records the other as it is at the interrupt: wrapped, not yet reset.
  expectEntry(s[0], 0, 100, neg(300), {0});
  expectEntry(s[1], 1, 100, neg(200), {0});
}

TEST(SessionSampling, ThePmdsOfTheInterruptAfterTheFullOneAreDropped) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.pmc(0, 1, kInstructions);
  r.pmd(0, pmdWrite(0, neg(300)));  // both overflow at t = 100
  r.pmd(0, pmdWrite(1, neg(200)));
  // Room for one bare entry: the first fills the buffer.
  r.ok(r.s().setSampling(dfl(kHeader + kMinSpace + 39)));
  r.loadAndStart();
  r.advance(100);
  auto st = r.state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_EQ(st.smpl_count, 1u);
  EXPECT_EQ(st.smpl_overflows, 1u);
  EXPECT_EQ(st.smpl_dropped, 1u) << "pmd1's overflow of the same interrupt has no room";
  ASSERT_EQ(r.s().samples().size(), 1u);
  EXPECT_EQ(r.s().samples()[0].pmd, 0u);
  r.restart();  // dropped stays, like hdr_overflows, until the next load
  EXPECT_EQ(r.state().smpl_dropped, 1u);
  r.unload();
  r.loadAndStart();
  EXPECT_EQ(r.state().smpl_dropped, 0u);
}

TEST(SessionSampling, EntriesNameTheActiveSetAcrossSwitches) {
  Rig r;
  sampleCycles(r);
  r.createSet(1);
  r.pmc(1, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(150));  // set 1: every 50 ns
  w.short_reset = neg(150);
  r.pmd(1, w);
  r.timeSwitch(0, 250);
  r.timeSwitch(1, 250);
  r.ok(r.s().setSampling(dfl(4096)));
  r.loadAndStart();
  r.advance(500);
  auto s = r.s().samples();
  // set 0 from 0 to 250: samples at 100, 200; set 1 from 250: 300 ... 500.
  ASSERT_EQ(s.size(), 7u);
  expectEntry(s[0], 0, 100, neg(300), {200});
  expectEntry(s[1], 0, 200, neg(300), {400});
  for (unsigned k = 0; k < 5; ++k) expectEntry(s[2 + k], 0, 300 + 50 * k, neg(150), {}, 1);
}

TEST(SessionSampling, RandomResetsShowInEachSamplesLastReset) {
  Rig r;
  sampleCycles(r);
  PmdWrite w = pmdWrite(0, neg(300));
  w.random = true;
  w.random_mask = 0xff;
  r.pmd(0, w);
  r.ok(r.s().setSampling(dfl(8192)));
  r.loadAndStart();
  r.advance(10000);
  auto s = r.s().samples();
  ASSERT_GE(s.size(), 30u);
  EXPECT_EQ(s[0].last_reset, neg(300));
  bool varied = false;
  for (std::size_t k = 1; k < s.size(); ++k) {
    // Each period is 300 plus up to 255 more, as the sample says.
    const u64 period = 0 - s[k].last_reset;
    EXPECT_GE(period, 300u);
    EXPECT_LE(period, 300u + 0xff);
    varied = varied || s[k].last_reset != s[1].last_reset;
    // A period starts at the interrupt that reset it and, at 3 cycles a ns,
    // ends within the ns of its last cycle.
    EXPECT_EQ(s[k].tstamp - s[k - 1].tstamp, (period + 2) / 3) << k;
  }
  EXPECT_TRUE(varied);
}

TEST(SessionSampling, LoadEmptiesTheBufferAndUnloadKeepsIt) {
  Rig r;
  sampleCycles(r);
  r.ok(r.s().setSampling(dfl(kHeader + kMinSpace + 48)));
  r.loadAndStart();
  r.advance(200);  // full
  EXPECT_EQ(r.state().state, State::Masked);
  r.unload();
  EXPECT_EQ(r.s().samples().size(), 2u);  // the last buffer is read after the end
  EXPECT_EQ(r.state().smpl_overflows, 1u);
  r.pmd(0, pmdWrite(0, neg(300)));
  r.loadAndStart();
  EXPECT_EQ(r.state().smpl_count, 0u);
  EXPECT_EQ(r.state().smpl_overflows, 0u);
}

TEST(SessionSampling, ARestartAfterTheUnloadEmptiesTheFullBuffer) {
  // The thread ends while its full buffer waits: the program reads the
  // buffer at the notification, restarts late, and reads it again after the
  // end message for the last samples. None: the restart emptied it.
  Rig r;
  sampleCycles(r);
  r.ok(r.s().setSampling(dfl(kHeader + kMinSpace + 48)));
  r.loadAndStart();
  r.advance(200);  // full
  EXPECT_EQ(r.state().state, State::Masked);
  r.unload();
  EXPECT_EQ(r.s().samples().size(), 2u);
  r.restart();  // accepted once after the unload
  EXPECT_EQ(r.s().samples().size(), 0u);
  EXPECT_EQ(r.state().smpl_overflows, 1u);
}

TEST(SessionSampling, TheFormatsRefusalsChangeNothing) {
  Rig r;
  auto refused = [&](const SamplingSpec& spec, int code, const char* words) {
    pfmfs::Status st = r.s().setSampling(spec);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, code);
    EXPECT_NE(r.s().error().find(words), std::string::npos) << r.s().error();
    EXPECT_EQ(r.s().sampling(), dfl(4096));
  };
  r.ok(r.s().setSampling(dfl(4096)));
  refused(SamplingSpec{"pebs", 4096, 0}, -EINVAL, "no sampling format 'pebs'");
  refused(dfl(kHeader + kMinSpace - 1), -EINVAL, "too small");
  refused(SamplingSpec{"default", 4096, 1}, -EINVAL, "no flags");
  r.ok(r.s().setSampling(dfl(kHeader + kMinSpace)));  // the least it takes
  r.ok(r.s().setSampling(dfl(4096)));
  sampleCycles(r);
  r.load();
  refused(dfl(8192), -EBUSY, "unload first");
  refused(SamplingSpec{}, -EBUSY, "unload first");
}

TEST(SessionSampling, TheOwnersBuffersShareOneLimit) {
  SimConfig c;
  c.engine.max_smpl_bytes_per_user = 3 * 4096;
  pfmfs::testing::SimEngine sim(c);
  auto a = sim.newSession("a");
  auto b = sim.newSession("b");
  ASSERT_TRUE(a->setSampling(dfl(8000)).ok());   // two pages
  pfmfs::Status st = b->setSampling(dfl(4097));  // two more: past three
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, -ENOMEM);
  EXPECT_NE(b->error().find("--max-smpl-bytes-per-user"), std::string::npos) << b->error();
  EXPECT_EQ(b->sampling(), SamplingSpec{});
  st = b->setSampling(dfl(~0ull));  // not rounded up past 2^64
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, -ENOMEM);
  EXPECT_NE(b->error().find("buf_size=18446744073709551615 is more than the 12288 bytes"), std::string::npos)
      << b->error();
  ASSERT_TRUE(b->setSampling(dfl(4096)).ok());  // one fits
  ASSERT_TRUE(a->setSampling(dfl(4096)).ok());  // a shrinks to one page: its old one is given back
  ASSERT_TRUE(b->setSampling(dfl(8192)).ok());
  ASSERT_FALSE(a->setSampling(dfl(8192)).ok());
  ASSERT_TRUE(sim.engine().destroySession("b").ok());  // destroying gives back
  ASSERT_TRUE(a->setSampling(dfl(3 * 4096)).ok());
  ASSERT_TRUE(a->setSampling(SamplingSpec{}).ok());  // none gives back
  auto d = sim.newSession("d");
  ASSERT_TRUE(d->setSampling(dfl(3 * 4096)).ok());
}

TEST(SessionSampling, TheMappedBufferChangesInPlaceAndCannotBeWritten) {
  Rig r;
  sampleCycles(r);
  r.ok(r.s().setSampling(dfl(6000)));
  auto fd = r.s().sampleBufferFd();
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(fd->second, 6000u);
  EXPECT_TRUE(pfmfs::fastpath::isSampleBufferFd(fd->first.get(), 6000));
  EXPECT_FALSE(pfmfs::fastpath::isSampleBufferFd(fd->first.get(), 4096 * 3));
  EXPECT_EQ(::mmap(nullptr, 6000, PROT_READ | PROT_WRITE, MAP_SHARED, fd->first.get(), 0), MAP_FAILED);
  void* m = ::mmap(nullptr, 6000, PROT_READ, MAP_SHARED, fd->first.get(), 0);
  ASSERT_NE(m, MAP_FAILED);
  const auto* h = static_cast<const DflHeader*>(m);
  EXPECT_EQ(h->count, 0u);
  EXPECT_EQ(h->cur_offs, kHeader);
  r.loadAndStart();
  r.advance(300);
  EXPECT_EQ(__atomic_load_n(&h->count, __ATOMIC_ACQUIRE), 3u);
  const auto* e = reinterpret_cast<const DflEntry*>(static_cast<const std::uint8_t*>(m) + kHeader + 2 * 48);
  EXPECT_EQ(e->tstamp, 300u);
  ::munmap(m, 6000);
}

TEST(SessionSampling, NoFormatNoSamples) {
  Rig r;
  sampleCycles(r, false);
  r.loadAndStart();
  r.advance(1000);
  EXPECT_TRUE(r.s().samples().empty());
  EXPECT_TRUE(r.s().sampleBytes().empty());
  EXPECT_FALSE(r.state().sampling);
  EXPECT_EQ(r.s().sampleBufferFd().error().code, -ENOENT);
}

}  // namespace
