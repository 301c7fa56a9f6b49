// The base layer: what every layer above may include. Header-only, no dependencies.
// Assertions for programmer bugs: always on, in every build, never compiled out by NDEBUG.
// Operating errors (EAGAIN, EMFILE, ...) are values, not assertions.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace loopsim::detail {

[[noreturn]] inline void assertion_failed(const char* expr, const char* file, int line,
                                          const std::string& operands) {
  std::fprintf(stderr, "%s:%d: assertion failed: %s%s\n", file, line, expr, operands.c_str());
  std::abort();
}

template <class A, class B>
std::string show_operands(const A& a, const B& b) {
  std::ostringstream out;
  out << " (" << a << " vs " << b << ")";
  return out.str();
}

}  // namespace loopsim::detail

#define LOOPSIM_ASSERT(expr)                                                    \
  do {                                                                          \
    if (!(expr)) ::loopsim::detail::assertion_failed(#expr, __FILE__, __LINE__, ""); \
  } while (0)

#define LOOPSIM_ASSERT_OP(a, op, b)                                             \
  do {                                                                          \
    const auto& assert_a_ = (a);                                                \
    const auto& assert_b_ = (b);                                                \
    if (!(assert_a_ op assert_b_))                                              \
      ::loopsim::detail::assertion_failed(#a " " #op " " #b, __FILE__, __LINE__, \
                                          ::loopsim::detail::show_operands(assert_a_, assert_b_)); \
  } while (0)
