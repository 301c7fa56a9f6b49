// The one writer of output files (scenario/files.hpp). A symbolic link planted where an output goes
// used to be followed and its target truncated; a FIFO named as an output blocked the open for
// ever. Each test plants the thing and checks that nothing was written through it, and that
// the open returned at once.
#include "scenario/files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/loopsim_process_for_tests.hpp"

using namespace loopsim;

namespace {

using loopsim::testing::file_text;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

}  // namespace

TEST_CASE("an output is never written through a symbolic link: the link's target keeps its bytes") {
  const std::string folder = loopsim::testing::temp_path("files-link");
  std::filesystem::create_directories(folder);
  const std::string victim = folder + "/victim.txt", link = folder + "/out.jsonl";
  write_text(victim, "VICTIM\n");
  std::filesystem::create_symlink(victim, link);
  CHECK_THAT(sim::unwritable_output(link), Catch::Contains("symbolic link"));
  std::string why;
  CHECK(sim::open_output(link, why) == -1);
  CHECK_THAT(why, Catch::Contains("symbolic link"));
  CHECK_THAT(sim::write_output_file(link, [](std::ostream& out) { out << "trace\n"; }), Catch::Contains("symbolic link"));
  CHECK(file_text(victim) == "VICTIM\n");
}

TEST_CASE("an output that is a FIFO or a device is refused at once, never waited on") {
  const std::string fifo = loopsim::testing::temp_path("files-fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {fifo, std::string("/dev/null"), std::string("/dev/full")}) {
    INFO(path);
    CHECK_THAT(sim::unwritable_output(path), Catch::Contains("not a regular file"));
    std::string why;
    CHECK(sim::open_output(path, why) == -1);
    CHECK_THAT(why, Catch::Contains("not a regular file"));
  }
}

TEST_CASE("a regular output is emptied and written whole, and only then") {
  const std::string path = loopsim::testing::temp_path("files-regular.txt");
  write_text(path, "a much longer old content\n");
  CHECK(sim::unwritable_output(path).empty());
  CHECK(sim::write_output_file(path, [](std::ostream& out) { out << "new\n"; }).empty());
  CHECK(file_text(path) == "new\n");
  const std::string fresh = loopsim::testing::temp_path("files-fresh.txt");
  CHECK(sim::write_output_file(fresh, [](std::ostream& out) { out << std::string(200'000, 'x'); }).empty());
  CHECK(std::filesystem::file_size(fresh) == 200'000);
}

TEST_CASE("an output is compared with the inputs as a file, not as a name") {
  const std::string folder = loopsim::testing::temp_path("files-same");
  std::filesystem::create_directories(folder);
  const std::string input = folder + "/s.toml";
  write_text(input, "name = \"s\"\n");
  const std::string hard = folder + "/hard.toml";
  std::filesystem::create_hard_link(input, hard);
  CHECK(sim::same_file(input, folder + "/../" + std::filesystem::path(folder).filename().string() + "/s.toml"));
  CHECK(sim::input_overwritten(hard, {"", input}) == input);
  CHECK(sim::input_overwritten(folder + "/other.jsonl", {input}).empty());  // not there yet
}
