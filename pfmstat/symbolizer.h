// From a sampled ip to a function and a shared object, with elfutils'
// libdwfl (.symtab, else .dynsym; separate debug files where installed).
// One Dwfl per file, cached by path: the same library mapped by many
// processes is opened once; the ip is turned into the file's own address
// from the mapping (start, pgoff) and the file's PT_LOAD segments.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "pfmstat/data_file.h"

namespace pfmstat {

struct Symbol {
  std::string dso;   // the file's base name, [kernel] or [unknown]
  std::string name;  // demangled; [unknown] where no symbol covers the ip
};

// What the profile needs of a symbolizer (a stub in the unit tests).
class Resolver {
 public:
  virtual ~Resolver() = default;
  // `map`: the mapping that holds `ip`, or nullptr.
  virtual Symbol resolve(const MapLine* map, std::uint64_t ip) = 0;
};

class Symbolizer : public Resolver {
 public:
  Symbolizer();
  ~Symbolizer() override;
  Symbol resolve(const MapLine* map, std::uint64_t ip) override;

 private:
  struct Module;
  Module* load(const std::string& path);
  std::map<std::string, std::unique_ptr<Module>> modules_;
};

// The user's name of a symbol: C++ names demangled, others as they are.
std::string demangled(const char* name);

// The first address of the kernel's half on x86-64 (and arm64).
inline constexpr std::uint64_t kKernelStart = 0xffff800000000000ull;

}  // namespace pfmstat
