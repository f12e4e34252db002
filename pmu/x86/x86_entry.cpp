// x86 in the backend registry: no options; usable where the helper
// module's device opens, which create() finds out.
#include "pmu/x86/x86_backend.h"

namespace pfmfs::pmu::x86 {

namespace {

Result<std::unique_ptr<Backend>> create(const OptionValues&) {
  auto x86 = X86Backend::create(X86Options{});
  if (!x86) return x86.error();
  return std::unique_ptr<Backend>(std::move(*x86));
}

}  // namespace

// The module checks CAP_SYS_RAWIO when its device is opened, which pfmfsd
// does before it mounts; the descriptor is all it needs afterwards: no
// capability is kept.
const BackendEntry& backendEntry() {
  static const BackendEntry kEntry{"x86", "the helper module", {}, false, {}, nullptr, create};
  return kEntry;
}

}  // namespace pfmfs::pmu::x86
