// Errors as values: a negative errno plus a reason a user can act on.
// Every layer returns these; the fs layer turns one into exactly one reply.
#pragma once

#include <cassert>
#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace pfmfs {

struct Error {
  int code = 0;        // negative errno, e.g. -EINVAL
  std::string reason;  // one line, no trailing newline
};

// Builds an Error with a formatted reason: err(EINVAL, "no set {}", id).
template <typename... Args>
Error err(int errnum, fmt::format_string<Args...> format, Args&&... args) {
  return Error{-errnum, fmt::format(format, std::forward<Args>(args)...)};
}

// User input made safe to quote inside a one-line reason: control and
// non-ASCII bytes become \xNN, and anything past 64 bytes becomes "...".
inline std::string printable(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 64; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (text.size() > 64) out += "...";
  return out;
}

// Success or an Error. [[nodiscard]] so that no failure is dropped silently.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }
  int code() const { return ok_ ? 0 : error_.code; }

 private:
  Error error_;
  bool ok_ = true;
};

// A value or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}      // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const {
    assert(ok());
    return std::get<0>(v_);
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  int code() const { return ok() ? 0 : error().code; }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace pfmfs
