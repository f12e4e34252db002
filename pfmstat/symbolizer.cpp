// Symbols through libdwfl (symbolizer.h).
#include "pfmstat/symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pfmstat {

struct Symbolizer::Module {
  const std::string& nameAt(GElf_Addr addr);  // "[unknown]" where no symbol covers it
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  std::vector<GElf_Phdr> loads;  // PT_LOAD segments: file offset -> the file's address
  // What libdwfl said, by the file's address. It looks an address up symbol
  // by symbol, and cc1's .dynsym has some 40 000: a make's 50 000 samples
  // (27 000 ips) took 38 s to report before these. A symbol with a size
  // covers its range; no symbol at an address, the addresses up to the next
  // symbol's start too (no symbol can cover them); other answers (a symbol
  // without a size) their address alone.
  std::map<GElf_Addr, std::pair<GElf_Addr, std::string>> ranges;  // start -> (end, name)
  std::unordered_map<GElf_Addr, std::string> exact;
  std::vector<GElf_Addr> starts;  // every symbol's address, sorted; made at the first miss
  bool indexed = false;
  GElf_Addr nextStart(GElf_Addr addr);
  ~Module() {
    if (dwfl) dwfl_end(dwfl);
  }
};

namespace {

// Offline: nothing is attached to a live process; debug files are looked
// for the standard way (build id, .gnu_debuglink, /usr/lib/debug).
char* debuginfoPath = nullptr;
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfoPath,
};

std::string baseName(const std::string& path) {
  if (!path.empty() && path[0] == '[') return path;  // [vdso], [heap]
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string demangled(const char* name) {
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && d) {
      std::string out(d);
      std::free(d);
      return out;
    }
    std::free(d);
  }
  return name;
}

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

Symbolizer::Module* Symbolizer::load(const std::string& path) {
  auto it = modules_.find(path);
  if (it != modules_.end()) return it->second.get();
  auto m = std::make_unique<Module>();
  if (!path.empty() && path[0] == '/') {
    m->dwfl = dwfl_begin(&kCallbacks);
    if (m->dwfl) {
      dwfl_report_begin(m->dwfl);
      // Base 0 with add_p_vaddr: the module sits at the file's own
      // addresses, whatever its type; resolve() does the relocation.
      m->mod = dwfl_report_elf(m->dwfl, path.c_str(), path.c_str(), -1, 0, true);
      dwfl_report_end(m->dwfl, nullptr, nullptr);
    }
    GElf_Addr bias = 0;
    Elf* elf = m->mod ? dwfl_module_getelf(m->mod, &bias) : nullptr;
    std::size_t n = 0;
    if (elf && elf_getphdrnum(elf, &n) == 0) {
      for (std::size_t i = 0; i < n; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) m->loads.push_back(ph);
      }
    }
  }
  return modules_.emplace(path, std::move(m)).first->second.get();
}

Symbol Symbolizer::resolve(const MapLine* map, std::uint64_t ip) {
  if (ip >= kKernelStart) return {"[kernel]", "[kernel]"};
  if (!map) return {"[unknown]", "[unknown]"};
  Symbol out{baseName(map->path), "[unknown]"};
  Module* m = load(map->path);
  if (!m->mod) return out;
  // The ip's offset in the file, and the file's address of that offset in
  // the segment that loads it.
  std::uint64_t offset = map->pgoff + (ip - map->start);
  for (const auto& ph : m->loads) {
    if (offset < ph.p_offset || offset >= ph.p_offset + ph.p_filesz) continue;
    GElf_Addr addr = ph.p_vaddr + (offset - ph.p_offset);
    out.name = m->nameAt(addr);
    break;
  }
  return out;
}

const std::string& Symbolizer::Module::nameAt(GElf_Addr addr) {
  auto r = ranges.upper_bound(addr);
  if (r != ranges.begin() && addr < std::prev(r)->second.first) return std::prev(r)->second.second;
  if (auto e = exact.find(addr); e != exact.end()) return e->second;
  GElf_Off sym_offset = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, addr, &sym_offset, &sym, nullptr, nullptr, nullptr);
  std::string found = name && *name ? demangled(name) : "[unknown]";
  if (name && sym.st_size > 0 && sym_offset < sym.st_size) {
    const GElf_Addr start = addr - sym_offset;
    return ranges.insert_or_assign(start, std::make_pair(start + sym.st_size, std::move(found))).first->second.second;
  }
  if (!name)
    return ranges.insert_or_assign(addr, std::make_pair(nextStart(addr), std::move(found))).first->second.second;
  return exact.emplace(addr, std::move(found)).first->second;
}

GElf_Addr Symbolizer::Module::nextStart(GElf_Addr addr) {
  if (!indexed) {
    indexed = true;
    const int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr value = 0;
      if (dwfl_module_getsym_info(mod, i, &sym, &value, nullptr, nullptr, nullptr)) starts.push_back(value);
    }
    std::sort(starts.begin(), starts.end());
  }
  auto next = std::upper_bound(starts.begin(), starts.end(), addr);
  return next == starts.end() ? addr + 1 : *next;  // past the last symbol: this address alone
}

}  // namespace pfmstat
