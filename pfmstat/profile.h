// A flat profile from a data file: each sample's process mappings as they
// stand after the process's last exec (or as inherited at its fork), its ip
// resolved to a function and a shared object, samples counted per
// (command, shared object, function) and per shared object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pfmstat/data_file.h"
#include "pfmstat/record_options.h"
#include "pfmstat/symbolizer.h"

namespace pfmstat {

struct ProfileRow {
  std::string command, dso, symbol;  // command empty in the table by shared object
  std::uint64_t samples = 0;
};

struct Profile {
  std::uint64_t total = 0;            // the samples with an ip: the tables' 100%
  std::uint64_t kernel_lost = 0;      // samples with ip 0: records the kernel could not store
  std::vector<ProfileRow> by_symbol;  // most samples first, then by name
  std::vector<ProfileRow> by_dso;
};

Profile buildProfile(const DataFile& data, Resolver& resolver);

// The report as perf report --stdio prints it: the header from the file's
// meta lines, then the tables `sort` asks for.
std::string profileText(const DataFile& data, const Profile& profile, ReportOptions::Sort sort,
                        const std::string& file_name);

}  // namespace pfmstat
