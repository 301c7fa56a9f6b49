// Whatever a string holds, the TOML loopsim writes reads back as it was: a counterexample
// (pinned_scenario), a target's scenario and a generated one keep every string they carry.
// A description holding ''' and a line break once closed the literal toml++ chose early, and
// the counterexample did not load.
#include "scenario/toml_writer.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"

namespace {

using namespace loopsim;
using namespace loopsim::sim;

// Every kind of string that once could, or might, end a TOML string early or be refused.
std::vector<std::string> hostile_strings() {
  std::vector<std::string> out = {
      "",          "'",        "''",         "'''",        "a'''\nb",        "'''\n'''",  "\"",
      "\"\"\"",    "x\"\"\"\ny", "back\\slash", "\\u0041",    "line\nbreak",   "\r\n",      "tab\there",
      "# not a comment", "[table]", "key = 1", "é ü 東京 🙂", "'''\"\"\"\\\n\t",
  };
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls += char(c);
  controls += char(0x7f);
  out.push_back(controls);
  return out;
}

// Names refuse control characters: they keep the rest.
std::string without_controls(const std::string& value) {
  std::string out;
  for (char c : value)
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) out += c;
  return out;
}

std::string scenario_with(const std::string& value) {
  return "name = " + toml_string("n" + without_controls(value)) + "\ndescription = " + toml_string(value) +
         "\n[[clients]]\nname = " + toml_string("g" + without_controls(value)) + "\n";
}

}  // namespace

TEST_CASE("toml_text writes every string basic-quoted, and it reads back as it was") {
  for (const std::string& s : hostile_strings()) {
    INFO("string: " << toml_string(s));
    toml::table t;
    t.insert("v", s);
    const std::string text = toml_text(t);
    CHECK((text.find("'''") == std::string::npos || s.find("'''") != std::string::npos));
    const toml::table back = toml::parse(text);
    CHECK(back["v"].value<std::string>() == s);
  }
}

TEST_CASE("a counterexample keeps every string its scenario holds: quotes, triple quotes, line breaks, controls") {
  for (const std::string& s : hostile_strings()) {
    INFO("string: " << toml_string(s));
    const std::string text = scenario_with(s);
    const Scenario original = parse_scenario(text, "t.toml");
    const std::string pinned = pinned_scenario(text, "t.toml", Arm{"base", {}, {}}, {}, {model::Choice{model::ChoiceKind::order, 2, 1}});
    const Scenario back = parse_scenario(pinned, "p.toml");
    CHECK(back.name == original.name);
    CHECK(back.description == s);
    REQUIRE(back.clients.size() == 1);
    CHECK(back.clients[0].name == "g" + without_controls(s));
    CHECK(back.choices.size() == 1);
  }
}

TEST_CASE("a string set on the command line is written back as it was given") {
  const std::string text = scenario_with("plain");
  for (const std::string& s : hostile_strings()) {
    if (s.find('\n') != std::string::npos || s.empty()) continue;  // one line, as an argument is
    INFO("string: " << toml_string(s));
    const Override o{"description", toml_string(s)};
    const std::string pinned = pinned_scenario(text, "t.toml", Arm{"base", {}, {}}, {o}, {});
    CHECK(parse_scenario(pinned, "p.toml").description == s);
  }
}

TEST_CASE("bytes that are not UTF-8 are refused at their place, in the file and on the command line") {
  const std::string bad = std::string("x\xff\xfe") + "y";
  CHECK_THROWS_WITH(parse_scenario("description = \"" + bad + "\"\n[[clients]]\nname = \"c\"\n", "t.toml"),
                    Catch::StartsWith("t.toml:1:"));
  const std::string text = scenario_with("plain");
  CHECK_THROWS_WITH(pinned_scenario(text, "t.toml", Arm{"base", {}, {}}, {Override{"description", bad}}, {}),
                    Catch::Contains("the value is not UTF-8 text: byte 2"));
  const Override typed = parse_override("description=" + bad);
  CHECK_THROWS_WITH(parse_scenario(text, "t.toml", {typed}), Catch::StartsWith("--set:1:14: --set description: the value is not UTF-8 text: byte 2"));
  for (const std::string& overlong : {std::string("\xc0\xaf"), std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82")}) {
    CHECK_THROWS_WITH(parse_scenario(text, "t.toml", {Override{"description", overlong}}), Catch::Contains("not UTF-8"));
  }
  CHECK(parse_scenario(text, "t.toml", {Override{"description", "\"\xe2\x82\xac \xf0\x9f\x99\x82\""}}).description == "\xe2\x82\xac \xf0\x9f\x99\x82");
}
