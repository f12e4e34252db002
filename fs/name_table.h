// Lookup and listing over a table of rows that each have a `name`
// (kPmdAttributes, kSessionFlags): the one way a word a user wrote finds its
// row, and the one way an error lists the words there are.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pfmfs::fs {

template <class Row, std::size_t N>
const Row* findByName(const Row (&rows)[N], std::string_view name) {
  for (const Row& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

// "a b c": the names in table order, for an error's list.
template <class Row, std::size_t N>
std::string namesOf(const Row (&rows)[N]) {
  std::string out;
  for (const Row& r : rows) {
    if (!out.empty()) out += ' ';
    out += r.name;
  }
  return out;
}

}  // namespace pfmfs::fs
