#include "fs/fast_page_map.h"

#include <new>
#include <utility>

namespace pfmfs::fs {

Result<FastPageMap> FastPageMap::create(const char* name) {
  auto region = session::SealedRegion::create(name, fastpath::kPageBytes);
  if (!region) return region.error();
  auto* page = new (region->data()) fastpath::Page{};
  return FastPageMap(std::move(*region), page);
}

}  // namespace pfmfs::fs
