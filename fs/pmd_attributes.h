// The attributes a PMD write takes after its value (pfmfs(5), sessions/NAME/
// sets/N/pmdK), in the order a `regs` read prints them. parsePmdWrite,
// formatRegs and the error that lists the attributes all read this one table:
// a new attribute is a new row (and a field of session::PmdWrite).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "session/register_rules.h"

namespace pfmfs::fs {

struct PmdAttribute {
  enum class Kind {
    Decimal,  // name=N, any number; read back in decimal
    Mask,     // name=M, any number; read back in hexadecimal
    RegList,  // name=LIST, a register list (1,2 or 0x6); read back as a mask
    Flag,     // name, name=1 or name=0
  };
  std::string_view name;
  Kind kind;
  std::optional<std::uint64_t> session::PmdWrite::*number;  // every kind but Flag
  std::optional<bool> session::PmdWrite::*flag;             // Flag
};

inline constexpr PmdAttribute kPmdAttributes[] = {
    {"long_reset", PmdAttribute::Kind::Decimal, &session::PmdWrite::long_reset, nullptr},
    {"short_reset", PmdAttribute::Kind::Decimal, &session::PmdWrite::short_reset, nullptr},
    {"switch_cnt", PmdAttribute::Kind::Decimal, &session::PmdWrite::switch_cnt, nullptr},
    {"reset_pmds", PmdAttribute::Kind::RegList, &session::PmdWrite::reset_pmds, nullptr},
    {"smpl_pmds", PmdAttribute::Kind::RegList, &session::PmdWrite::smpl_pmds, nullptr},
    {"random_mask", PmdAttribute::Kind::Mask, &session::PmdWrite::random_mask, nullptr},
    {"eventid", PmdAttribute::Kind::Decimal, &session::PmdWrite::eventid, nullptr},
    {"notify", PmdAttribute::Kind::Flag, nullptr, &session::PmdWrite::notify},
    {"random", PmdAttribute::Kind::Flag, nullptr, &session::PmdWrite::random},
};

}  // namespace pfmfs::fs
