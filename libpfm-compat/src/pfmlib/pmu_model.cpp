// Loading the PMU model from the mount's pmu/ tree (see pmu_model.h). Runs
// once per process, from pfm_initialize(); each file is opened, read to its
// end (the mount's files are direct_io: their size is not known in advance)
// and closed.
#include "pmu_model.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <string_view>

#include "key_values.h"

namespace pfmcompat::pfmlib {

namespace {

// The whole content of `path`; false with errno's text in `why` on failure.
bool readFile(const std::string& path, std::string& out, std::string& why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = path + ": " + strerror(errno);
    return false;
  }
  out.clear();
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = path + ": " + strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return true;
}

bool readNumber(const std::string& path, std::uint64_t& out, std::string& why) {
  std::string text;
  if (!readFile(path, text, why)) return false;
  auto v = parseNumber(text);
  if (!v) {
    why = path + ": not a number";
    return false;
  }
  out = *v;
  return true;
}

// A numeric key of a record; false when it is absent or not a number.
bool numberKey(const KeyValues& kv, std::string_view key, std::uint64_t& out) {
  const std::string* s = kv.find(key);
  if (!s) return false;
  auto v = parseNumber(*s);
  if (!v) return false;
  out = *v;
  return true;
}

bool loadInfo(const std::string& pmu, PmuModel& m, std::string& why) {
  std::string text;
  if (!readFile(pmu + "/info", text, why)) return false;
  if (!parsePmuInfo(text, m)) {
    why = pmu + "/info: missing model=, pmcs=, pmds= or width=";
    return false;
  }
  return true;
}

bool loadRegisters(const std::string& pmu, PmuModel& m, std::string& why) {
  const std::string desc = pmu + "/desc/";
  for (unsigned i = 0; i < kMaxReg; ++i) {
    if (!(m.impl_pmcs & (RegMask{1} << i))) continue;
    PmcInfo c;
    c.index = i;
    const std::string dir = desc + "pmc" + std::to_string(i) + "/";
    std::string name;
    if (!readFile(dir + "name", name, why) || !readNumber(dir + "addr", c.addr, why) ||
        !readNumber(dir + "rsvd_msk", c.rsvd_msk, why))
      return false;
    c.name = std::string(trimRight(name));
    // pmds: the counters this PMC configures. A daemon too old to have the
    // file gets the perfmon2 convention that pmcN configures pmdN.
    std::string ignored;
    if (!readNumber(dir + "pmds", c.pmds, ignored)) c.pmds = m.impl_pmds & (RegMask{1} << i);
    c.pmds &= m.impl_pmds;
    c.shared = __builtin_popcountll(c.pmds) > 1 || c.name.rfind("FIXED", 0) == 0;
    m.pmcs.push_back(std::move(c));
  }
  for (unsigned i = 0; i < kMaxReg; ++i) {
    if (!(m.impl_pmds & (RegMask{1} << i))) continue;
    PmdInfo d;
    d.index = i;
    const std::string dir = desc + "pmd" + std::to_string(i) + "/";
    std::string name;
    std::uint64_t width = 0;
    if (!readFile(dir + "name", name, why) || !readNumber(dir + "addr", d.addr, why) ||
        !readNumber(dir + "width", width, why))
      return false;
    d.name = std::string(trimRight(name));
    d.width = static_cast<unsigned>(width);
    for (const auto& c : m.pmcs)
      if (c.pmds & (RegMask{1} << i)) {
        d.ctl_pmc = static_cast<int>(c.index);
        break;
      }
    m.pmds.push_back(std::move(d));
  }
  return true;
}

bool loadEvents(const std::string& pmu, PmuModel& m, std::string& why) {
  std::string text;
  if (!readFile(pmu + "/events", text, why)) return false;
  unsigned bad_line = 0;
  if (!parsePmuEvents(text, m, &bad_line)) {
    why = pmu + "/events: line " + std::to_string(bad_line) + " does not parse";
    return false;
  }
  return true;
}

}  // namespace

bool parsePmuInfo(std::string_view text, PmuModel& m) {
  auto kv = KeyValues::parse(trimRight(text));
  std::uint64_t width = 0;
  if (!kv || !kv->find("model") || !numberKey(*kv, "pmcs", m.impl_pmcs) || !numberKey(*kv, "pmds", m.impl_pmds) ||
      !numberKey(*kv, "width", width))
    return false;
  m.model = *kv->find("model");
  if (const std::string* b = kv->find("backend")) m.backend = *b;
  m.width = static_cast<unsigned>(width);
  return true;
}

bool parsePmuEvents(std::string_view text, PmuModel& m, unsigned* bad_line) {
  std::string_view rest = text;
  unsigned line_no = 0;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    if (trimRight(line).empty()) continue;
    auto kv = KeyValues::parse(line);
    EventInfo e;
    if (!kv || !kv->find("name") || !numberKey(*kv, "code", e.code) || !numberKey(*kv, "pmcs", e.pmcs)) {
      if (bad_line) *bad_line = line_no;
      return false;
    }
    e.name = *kv->find("name");
    if (const std::string* d = kv->find("desc")) e.desc = *d;
    if (const std::string* a = kv->find("aliases")) {
      std::string_view list = *a;
      while (!list.empty()) {
        std::size_t comma = list.find(',');
        if (comma != 0) e.aliases.emplace_back(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      }
    }
    if (!numberKey(*kv, "pmds", e.pmds)) {
      // An older daemon lists only the PMCs: take the counters of the PMCs
      // that configure exactly one counter; which field of a shared PMC
      // counts the event cannot be told, so fixed counters are left out.
      for (const auto& c : m.pmcs)
        if ((e.pmcs & (RegMask{1} << c.index)) && !c.shared) e.pmds |= c.pmds;
    }
    e.pmds &= m.impl_pmds;
    m.events.push_back(std::move(e));
  }
  return true;
}

const PmcInfo* PmuModel::pmc(unsigned index) const {
  for (const auto& c : pmcs)
    if (c.index == index) return &c;
  return nullptr;
}

const PmdInfo* PmuModel::pmd(unsigned index) const {
  for (const auto& d : pmds)
    if (d.index == index) return &d;
  return nullptr;
}

bool PmuModel::isFixed(const PmdInfo& d) const {
  if (d.ctl_pmc < 0) return false;
  const PmcInfo* c = pmc(static_cast<unsigned>(d.ctl_pmc));
  return c && c->shared;
}

bool loadPmuModel(const char* mount, PmuModel& out, std::string& why) {
  const std::string pmu = std::string(mount) + "/pmu";
  PmuModel m;
  if (!loadInfo(pmu, m, why) || !loadRegisters(pmu, m, why) || !loadEvents(pmu, m, why)) return false;
  out = std::move(m);
  return true;
}

}  // namespace pfmcompat::pfmlib
