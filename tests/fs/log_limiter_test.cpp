// fs/log_limiter.h: a line a user can cause at will goes out at most ten
// times a minute per cause, and the next one that goes out says how many
// were held back.
#include "fs/log_limiter.h"

#include <gtest/gtest.h>

namespace pfmfs::fs {
namespace {

constexpr std::uint64_t kMinute = 60'000'000'000ULL;

TEST(LogLimiter, TenACausePerWindowThenTheCountOfWhatWasHeldBack) {
  LogLimiter limit(10, kMinute);
  std::uint64_t held = 99;
  const std::uint64_t t0 = 5 * kMinute;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(limit.admit("autoclose of {}", t0 + i, &held)) << i;
    EXPECT_EQ(held, 0u);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limit.admit("autoclose of {}", t0 + kMinute - 1, &held));
  // Another cause has its own ten.
  ASSERT_TRUE(limit.admit("fast path: uid {}", t0 + 20, &held));
  EXPECT_EQ(held, 0u);
  // The next window: the first line says what the last one held back.
  ASSERT_TRUE(limit.admit("autoclose of {}", t0 + kMinute, &held));
  EXPECT_EQ(held, 1000u);
  ASSERT_TRUE(limit.admit("autoclose of {}", t0 + kMinute + 1, &held));
  EXPECT_EQ(held, 0u);
}

TEST(LogLimiter, AQuietCauseIsNeverHeldBack) {
  LogLimiter limit(3, kMinute);
  std::uint64_t held = 0;
  for (std::uint64_t t = 0; t < 100; ++t) {
    ASSERT_TRUE(limit.admit("rare", t * kMinute, &held)) << t;
    EXPECT_EQ(held, 0u);
  }
}

}  // namespace
}  // namespace pfmfs::fs
