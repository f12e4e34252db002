// A derived metric's formula: arithmetic over event names, parsed once into
// a small tree and evaluated per report line (pfmstat(1), METRICS).
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := '-' unary | primary
//   primary := NUMBER | NAME | '(' expr ')'
//
// A NAME is an event as -e takes it, written with '_' for '-' (a '-' is a
// minus here): INSTRUCTION_RETIRED, instructions, task_clock. `time_ns` is
// not an event: the nanoseconds the inputs were counted (metrics.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pfmstat {

class MetricExpr {
 public:
  // Throws UsageError with the reason (the caller adds where the text came from).
  static MetricExpr parse(const std::string& text);

  // The names it reads, each once, in the order they first appear.
  const std::vector<std::string>& names() const { return names_; }

  // Its value with each name's value from `value_of`; nothing when a
  // division by zero or a name without a value makes it undefined.
  std::optional<double> eval(const std::function<std::optional<double>(const std::string&)>& value_of) const;

  const std::string& text() const { return text_; }

 private:
  struct Node {
    char op = 0;  // 'n' number, 'v' name, 'u' unary minus, or + - * /
    double number = 0;
    std::size_t name = 0;       // 'v': index into names_
    int left = -1, right = -1;  // children, indexes into nodes_
  };
  class Parser;

  std::optional<double> evalNode(int node, const std::vector<std::optional<double>>& values) const;

  std::string text_;
  std::vector<std::string> names_;
  std::vector<Node> nodes_;
  int root_ = -1;
};

// True for `time_ns`, in any case.
bool isTimeName(const std::string& name);

}  // namespace pfmstat
