// A state declaration names its members, and is held to them at compile time: a type whose
// members were moved past each other, or that gained a member with no entry, or whose
// declaration lists a member twice, does not compile. Each variant of
// tests/data/compile/state_order.cpp is compiled here by the compiler that built this test; the
// plain one must compile and run, its digest telling two sockets apart by `fd`.
#include <catch2/catch.hpp>

#include <string>

#include "cli/loopsim_process_for_tests.hpp"

namespace {

using loopsim::testing::Outcome;

// Compiles the program with `-D<variant>` (none: "") and, when asked, runs it.
Outcome compile(const std::string& variant, bool run) {
  const std::string source = std::string(LOOPSIM_SOURCE_DIR) + "/tests/data/compile/state_order.cpp";
  const std::string binary = loopsim::testing::temp_path("state-order" + variant);
  std::string command = std::string(LOOPSIM_CXX) + " -std=c++20 -w -I" + LOOPSIM_SOURCE_DIR +
                        (variant.empty() ? "" : " -D" + variant) + " " + source + " -o " + binary + " 2>&1";
  if (run) command += " && " + binary;
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) outcome.output.append(buffer, n);
  int status = pclose(pipe);
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

}  // namespace

TEST_CASE("state declarations: the declared program compiles, and its digest sees the member it names") {
  Outcome plain = compile("", true);
  INFO(plain.output);
  CHECK(plain.status == 0);
}

TEST_CASE("state declarations: members moved past each other do not compile") {
  Outcome swapped = compile("SWAPPED", false);
  INFO(swapped.output);
  CHECK(swapped.status != 0);
  CHECK(swapped.output.find("is not the type's member i") != std::string::npos);
}

TEST_CASE("state declarations: a member with no entry, or one listed twice, does not compile") {
  Outcome added = compile("ADDED", false);
  INFO(added.output);
  CHECK(added.status != 0);
  CHECK(added.output.find("only 2 names") != std::string::npos);  // g++ and clang++ alike
  Outcome twice = compile("TWICE", false);
  INFO(twice.output);
  CHECK(twice.status != 0);
  CHECK(twice.output.find("is not the type's member i") != std::string::npos);
}
