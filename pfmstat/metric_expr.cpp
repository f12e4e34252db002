#include "pfmstat/metric_expr.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "pfmstat/errors.h"

namespace pfmstat {

// A recursive-descent parser over the text; nodes are appended to the
// expression's vector, children before their parent.
class MetricExpr::Parser {
 public:
  Parser(MetricExpr& e) : e_(e), s_(e.text_) {}

  int parseAll() {
    int n = expr(0);
    skipBlanks();
    if (i_ < s_.size()) fail(fmt::format("unexpected '{}' at column {}", s_[i_], i_ + 1));
    return n;
  }

 private:
  // Deep nesting is no formula a person writes; the bound keeps a hostile
  // table from exhausting the stack.
  static constexpr int kMaxDepth = 64;
  static constexpr std::size_t kMaxNodes = 1024;

  [[noreturn]] void fail(const std::string& why) { throw UsageError(why); }

  void skipBlanks() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }

  int add(Node n) {
    // Evaluation recurses once per operator of a chain (a + a + ...): the
    // cap bounds its depth whatever text comes in.
    if (e_.nodes_.size() >= kMaxNodes) fail(fmt::format("more than {} terms and operators", kMaxNodes));
    e_.nodes_.push_back(n);
    return static_cast<int>(e_.nodes_.size()) - 1;
  }

  int expr(int depth) {
    int left = term(depth);
    while (true) {
      skipBlanks();
      if (i_ >= s_.size() || (s_[i_] != '+' && s_[i_] != '-')) return left;
      char op = s_[i_++];
      int right = term(depth);
      left = add(Node{op, 0, 0, left, right});
    }
  }

  int term(int depth) {
    int left = unary(depth);
    while (true) {
      skipBlanks();
      if (i_ >= s_.size() || (s_[i_] != '*' && s_[i_] != '/')) return left;
      char op = s_[i_++];
      int right = unary(depth);
      left = add(Node{op, 0, 0, left, right});
    }
  }

  int unary(int depth) {
    if (depth > kMaxDepth) fail(fmt::format("nested more than {} deep", kMaxDepth));
    skipBlanks();
    if (i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      return add(Node{'u', 0, 0, unary(depth + 1), -1});
    }
    return primary(depth);
  }

  int primary(int depth) {
    skipBlanks();
    if (i_ >= s_.size())
      fail(s_.find_first_not_of(" \t") == std::string::npos ? "an empty formula"
                                                            : "the formula ends where a value was expected");
    char c = s_[i_];
    if (c == '(') {
      std::size_t open = i_++;
      int inner = expr(depth + 1);
      skipBlanks();
      if (i_ >= s_.size() || s_[i_] != ')') fail(fmt::format("the '(' at column {} is not closed", open + 1));
      ++i_;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      std::size_t start = i_;
      // Decimal only: digits, a point, an exponent (1e9).
      auto inNumber = [&](std::size_t k) {
        char d = s_[k];
        if (std::isdigit(static_cast<unsigned char>(d)) || d == '.' || d == 'e' || d == 'E') return true;
        return (d == '+' || d == '-') && (s_[k - 1] == 'e' || s_[k - 1] == 'E');
      };
      while (i_ < s_.size() && inNumber(i_)) ++i_;
      std::string text = s_.substr(start, i_ - start);
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      // ERANGE of an underflow is a number (0 or nearly); of an overflow, infinity.
      if (*end || !std::isfinite(v)) fail(fmt::format("'{}' is not a number", text));
      return add(Node{'n', v, 0, -1, -1});
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t start = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
      std::string name = s_.substr(start, i_ - start);
      std::size_t index = 0;
      while (index < e_.names_.size() && e_.names_[index] != name) ++index;
      if (index == e_.names_.size()) e_.names_.push_back(name);
      return add(Node{'v', 0, index, -1, -1});
    }
    fail(fmt::format("unexpected '{}' at column {}", c, i_ + 1));
  }

  MetricExpr& e_;
  const std::string& s_;
  std::size_t i_ = 0;
};

MetricExpr MetricExpr::parse(const std::string& text) {
  MetricExpr e;
  e.text_ = text;
  for (unsigned char c : text)
    if (c < 0x20 && c != '\t') throw UsageError("a control character in the formula");
  e.root_ = Parser(e).parseAll();
  bool has_event = false;
  for (const auto& n : e.names_) has_event |= !isTimeName(n);
  if (!has_event) throw UsageError("the formula names no event");
  return e;
}

std::optional<double> MetricExpr::eval(const std::function<std::optional<double>(const std::string&)>& value_of) const {
  std::vector<std::optional<double>> values;
  for (const auto& n : names_) values.push_back(value_of(n));
  return evalNode(root_, values);
}

std::optional<double> MetricExpr::evalNode(int node, const std::vector<std::optional<double>>& values) const {
  const Node& n = nodes_[static_cast<std::size_t>(node)];
  switch (n.op) {
    case 'n':
      return n.number;
    case 'v':
      return values[n.name];
    case 'u': {
      auto v = evalNode(n.left, values);
      if (!v) return std::nullopt;
      return -*v;
    }
    default:
      break;
  }
  auto a = evalNode(n.left, values), b = evalNode(n.right, values);
  if (!a || !b) return std::nullopt;
  switch (n.op) {
    case '+':
      return *a + *b;
    case '-':
      return *a - *b;
    case '*':
      return *a * *b;
    default:
      if (*b == 0) return std::nullopt;
      return *a / *b;
  }
}

bool isTimeName(const std::string& name) {
  if (name.size() != 7) return false;
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "time_ns";
}

}  // namespace pfmstat
