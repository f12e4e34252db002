// `pfmstat report`: reads a data file and prints its profile (record.h).
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "pfmstat/data_file.h"
#include "pfmstat/errors.h"
#include "pfmstat/mount_files.h"
#include "pfmstat/profile.h"
#include "pfmstat/record.h"
#include "pfmstat/symbolizer.h"

namespace pfmstat {

int report(const ReportOptions& o, std::FILE* out) {
  return exitStatusOf([&] {
    std::string text;
    try {
      text = readFile(o.input);
    } catch (const RunError& e) {
      throw UsageError(e.what());
    }
    DataFile data = parseDataFile(text, o.input);
    Symbolizer symbolizer;
    Profile profile = buildProfile(data, symbolizer);
    std::fputs(profileText(data, profile, o.sort, o.input).c_str(), out);
    return 0;
  });
}

}  // namespace pfmstat
