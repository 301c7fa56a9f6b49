// The scenario as a TOML document, before it becomes a Scenario: parsed with its nesting
// bounded, overridden (--set, an arm's `set`) with every override checked like the file and
// traced back to where it was written, scoped to one arm, and written back with the choices of
// a run pinned (the counterexample and worst-case files of `loopsim explore`).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "scenario/scenario.hpp"
#include "scenario/scenario_reading.hpp"
#include "scenario/units.hpp"

namespace loopsim::sim {
namespace reading {
namespace {

constexpr std::string_view syntax_hint =
    R"(check the TOML syntax here; strings need quotes, e.g. horizon = "20s")";

std::vector<std::string_view> split_key(std::string_view key) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}


void check_key(C c, const OverrideOrigin& origin, const Section<Scenario>& section,
               std::string_view key) {
  if (find_field(section, key) != nullptr) return;
  const Problem problem = key_problem(section, key);
  c.fail(origin, problem.message, problem.hint, true);
}

// An override names a top-level key (seed) or a key in [kernel] or [loop] (loop.accept_batch).
void check_override_key(C c, const OverrideOrigin& origin,
                        const std::vector<std::string_view>& parts) {
  const bool empty_part = std::find(parts.begin(), parts.end(), std::string_view{}) != parts.end();
  if (parts.size() > 2 || empty_part)
    c.fail(origin, "an override names a top-level key or section.key",
           "e.g. --set seed=7 or --set loop.accept_batch=0", true);
  if (is_array_table(parts[0]))
    c.fail(origin, cat("[[", parts[0], "]] is an array of tables; overrides cannot change it"),
           "override single keys such as loop.accept_batch; edit the file to change [[clients]], "
           "[[expect]] or [[arms]]", true);
  const Section<Scenario>* section = override_section(parts[0]);
  if (section == nullptr) check_key(c, origin, root_fields(), parts[0]);
  if (section == nullptr && parts.size() == 2)
    c.fail(origin, cat(parts[0], " is not a table"), "e.g. --set loop.accept_batch=0", true);
  if (section != nullptr && parts.size() == 1)
    c.fail(origin, cat("name a key inside [", parts[0], "]"),
           cat("e.g. --set ", parts[0], ".", section->fields[0].key, "=..."), true);
  if (section != nullptr) check_key(c, origin, *section, parts[1]);
}

// Where `text` stops being UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF), or npos where it is UTF-8 throughout.
std::size_t utf8_invalid_at(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
    const unsigned lead = byte(0);
    std::size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || lead == 0xc0 || lead == 0xc1 || lead > 0xf4) return i;
    for (std::size_t k = 1; k < n; ++k)
      if ((byte(k) >> 6) != 0x2) return i;
    const unsigned second = byte(1);
    if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second > 0x9f) || (lead == 0xf0 && second < 0x90) ||
        (lead == 0xf4 && second > 0x8f))
      return i;
    i += n;
  }
  return std::string_view::npos;
}

// The override's value as a one-key document "v = ...", parsed with the origin's label as its
// source path. Text that is not one TOML value (kqueue, 10ms) is taken as a string. Bytes that
// are not UTF-8 are refused: TOML cannot hold them, and toml++ would write each as a Latin-1
// character, another string than the one given.
toml::table parse_value(C c, const std::string& value, const OverrideOrigin& origin) {
  if (const std::size_t bad = utf8_invalid_at(value); bad != std::string_view::npos) {
    OverrideOrigin at = origin;
    if (at.file == "--set") at.where.column += static_cast<toml::source_index>(bad);  // the byte itself
    c.fail(at, cat("the value is not UTF-8 text: byte ", bad + 1, " of it cannot start or continue a character"),
           "values are TOML, which is UTF-8");
  }
  try {
    toml::table doc = toml::parse("v = " + value, std::string_view{origin.label});
    if (doc.size() == 1 && doc.contains("v")) return doc;
  } catch (const toml::parse_error&) {
  }
  try {
    return toml::parse("v = " + toml_text(toml::value<std::string>(value)),
                       std::string_view{origin.label});
  } catch (const toml::parse_error& e) {
    c.fail(origin, cat("cannot read the value: ", e.description()),
           "values are TOML: 0, false, \"10ms\", \"kqueue\"");
  }
}

toml::table& section_table(C c, toml::table& root, std::string_view name) {
  toml::node* node = root.get(name);
  if (node == nullptr) return *root.insert(name, toml::table{}).first->second.as_table();
  as_table(c, *node, name);  // fails unless it is a table
  return *node->as_table();
}

// Where a --set override came from: its value's column in the argument, when it has one.
OverrideOrigin command_line_origin(const Override& o) {
  if (o.value_column == 0) return {cat("--set ", o.key), {1, 1}, "", {}};
  return {cat("--set ", o.key), {1, o.value_column}, "--set", {1, 1}};
}

void apply_override(Context& c, toml::table& root, const Override& o, OverrideOrigin origin) {
  const std::vector<std::string_view> parts = split_key(o.key);
  check_override_key(c, origin, parts);
  toml::table doc = parse_value(c, o.value, origin);
  toml::table& target = parts.size() == 1 ? root : section_table(c, root, parts[0]);
  target.insert_or_assign(parts.back(), std::move(*doc.get("v")));
  c.add_origin(std::move(origin));
}

// Where the arm's override of `key` was written: the key in its set table, else the table.
toml::source_position arm_position(const toml::table& root, const Arm& arm, std::string_view key) {
  const toml::array* arms = root["arms"].as_array();
  for (std::size_t i = 0; arms != nullptr && i < arms->size(); ++i) {
    const toml::table* table = arms->get(i)->as_table();
    if (table == nullptr || (*table)["name"].value_or(std::string_view{}) != arm.name) continue;
    const toml::table* set = table->get_as<toml::table>("set");
    if (set == nullptr) return table->source().begin;
    for (auto&& [name, value] : *set)
      if (name.str() == key) return name.source().begin;
    return set->source().begin;
  }
  return {1, 1};
}

// toml++ bounds the nesting of values (256) but not of dotted keys: a[.a]x60000 recurses until
// the stack runs out. So a line may hold at most this many dots outside strings and comments;
// a scenario's keys have one or two.
constexpr int key_dots_max = 256;

void check_key_depth(const std::string& text, const std::string& file) {
  enum class In { code, basic, literal, multi_basic, multi_literal, comment } in = In::code;
  std::uint32_t line = 1, column = 0;
  int dots = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    ++column;
    const bool triple = text.compare(i, 3, ch == '"' ? "\"\"\"" : "'''") == 0;
    switch (in) {
      case In::code:
        if (ch == '#') in = In::comment;
        else if (ch == '"' || ch == '\'') {
          in = ch == '"' ? (triple ? In::multi_basic : In::basic) : (triple ? In::multi_literal : In::literal);
          if (triple) i += 2, column += 2;
        } else if (ch == '.' && ++dots > key_dots_max) {
          throw ScenarioError(located(file, {line, column}, cat("more than ", key_dots_max, " dots in one line: a key nested this deep cannot be read")),
                              "keys look like loop.accept_batch; split the line");
        }
        break;
      case In::basic:
      case In::multi_basic:
        if (ch == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i, ++column;
        else if (ch == '"' && (in == In::basic || triple)) {
          if (in == In::multi_basic) i += 2, column += 2;
          in = In::code;
        }
        break;
      case In::literal:
      case In::multi_literal:
        if (ch == '\'' && (in == In::literal || triple)) {
          if (in == In::multi_literal) i += 2, column += 2;
          in = In::code;
        }
        break;
      case In::comment: break;
    }
    if (text[i] == '\n') {  // a single-line string or a comment ends at the line's end
      ++line;
      column = 0;
      dots = 0;
      if (in == In::comment || in == In::basic || in == In::literal) in = In::code;
    }
  }
}

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return std::string(text.substr(first, text.find_last_not_of(" \t") - first + 1));
}


}  // namespace

toml::table parse_document(const std::string& text, const std::string& file) {
  check_key_depth(text, file);
  try {
    return toml::parse(text, std::string_view{file});
  } catch (const toml::parse_error& e) {
    // TOML has no \x escape, and a scenario's bytes do (scenario/scenario.cpp, read_escaped).
    const bool byte_escape = e.description().find("escape") != std::string_view::npos &&
                             e.description().find("\\x") != std::string_view::npos;
    throw ScenarioError(located(file, e.source().begin, e.description()),
                        byte_escape ? "write bytes in single quotes, bytes = '\\xC0\\x00' (TOML reads a literal "
                                      "string as it is), and loopsim reads each \\xHH as one byte"
                                    : std::string(syntax_hint));
  }
}

// The document with the arm's overrides and then the command line's applied.
toml::table overridden(Context& c, const std::string& text, const std::string& file, const Arm* arm,
                       const std::vector<Override>& overrides) {
  toml::table root = parse_document(text, file);
  if (arm != nullptr)
    for (const Override& o : arm->set)
      apply_override(c, root, o,
                     {cat("arm \"", arm->name, "\" set ", o.key), arm_position(root, *arm, o.key), "", {}});
  for (const Override& o : overrides) apply_override(c, root, o, command_line_origin(o));
  return root;
}

// The faults as `arm` runs them: those scoped to other arms left out, the scopes erased.
void scope_faults(toml::table& root, const std::string& arm) {
  toml::array* faults = root["faults"].as_array();
  for (std::size_t i = faults == nullptr ? 0 : faults->size(); i-- > 0;) {
    toml::table* fault = faults->get(i)->as_table();
    const toml::array* arms = fault == nullptr ? nullptr : fault->get_as<toml::array>("arms");
    if (arms == nullptr) continue;
    bool mine = std::any_of(arms->begin(), arms->end(), [&](const toml::node& n) { return n.value_or(std::string()) == arm; });
    if (mine) {
      fault->erase("arms");
    } else {
      faults->erase(faults->begin() + std::ptrdiff_t(i));
    }
  }
  if (faults != nullptr && faults->empty()) root.erase("faults");
}


}  // namespace reading

using namespace reading;

namespace {

// Sets `root`'s target.dir so that, written as `to`, the target runs where it ran as `from`.
void keep_target_folder(toml::table& root, const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  toml::table* target = root["target"].as_table();
  if (target == nullptr) return;
  std::error_code error;
  const fs::path folder = target_folder(from, (*target)["dir"].value_or(std::string()));
  const fs::path written = fs::absolute(fs::path(to).parent_path().empty() ? fs::path(".") : fs::path(to).parent_path(), error);
  fs::path relative = folder.lexically_relative(written.lexically_normal());
  if (relative.empty()) relative = folder;  // no relative way (another root): as it is
  target->insert_or_assign("dir", relative.empty() || relative == "." ? std::string(".") : relative.string());
}

}  // namespace

std::string pinned_scenario(const std::string& text, const std::string& name, const Arm& arm,
                            const std::vector<Override>& overrides,
                            const std::vector<model::Choice>& choices,
                            const Shrinks& shrinks, const std::string& written_to) {
  Context c(name);
  toml::table root = overridden(c, text, name, arm.name == "base" ? nullptr : &arm, overrides);
  if (!written_to.empty()) keep_target_folder(root, name, written_to);
  if (toml::array* exec = shrinks.arguments ? root["target"]["exec"].as_array() : nullptr; exec != nullptr && !exec->empty()) {
    toml::array kept;
    kept.push_back(toml::node_view<toml::node>(exec->get(0)).value_or(std::string()));
    for (const std::string& argument : *shrinks.arguments) kept.push_back(argument);
    root["target"].as_table()->insert_or_assign("exec", std::move(kept));
  }
  scope_faults(root, arm.name);
  // After scoping, the faults stand as Scenario::faults does, which the indices name.
  if (toml::array* faults = root["faults"].as_array()) {
    for (std::size_t i = faults->size(); i-- > 0;)
      if (std::find(shrinks.faults_dropped.begin(), shrinks.faults_dropped.end(), i) != shrinks.faults_dropped.end())
        faults->erase(faults->begin() + std::ptrdiff_t(i));
    if (faults->empty()) root.erase("faults");
  }
  root.erase("arms");
  if (toml::array* clients = root["clients"].as_array()) {
    for (std::size_t i = clients->size(); i-- > 0;) {
      toml::table* group = clients->get(i)->as_table();
      const std::string group_name((*group)["name"].value_or(std::string_view{}));
      if (auto found = shrinks.clients.find(group_name); found != shrinks.clients.end()) {
        if (found->second == 0) {
          clients->erase(clients->begin() + std::ptrdiff_t(i));
          continue;
        }
        group->insert_or_assign("count", found->second);
      }
      if (auto at = shrinks.connect_at.find(group_name); at != shrinks.connect_at.end())
        group->insert_or_assign("connect_at", instant_text(at->second));
      if (auto body = shrinks.body.find(group_name); body != shrinks.body.end()) {
        if (body->second == 0) group->erase("body");
        else group->insert_or_assign("body", body->second);
      }
      if (auto at = shrinks.request_at.find(group_name); at != shrinks.request_at.end()) {
        if (toml::array* requests = (*group)["requests"].as_array()) {
          for (const auto& [k, t] : at->second)
            if (toml::table* request = k < requests->size() ? requests->get(k)->as_table() : nullptr)
              request->insert_or_assign("at", instant_text(t));
        }
      }
      if (auto kept = shrinks.script.find(group_name); kept != shrinks.script.end()) {
        if (toml::array* requests = (*group)["requests"].as_array()) {
          toml::array fewer;
          for (std::size_t k : kept->second)
            if (const toml::table* request = k < requests->size() ? requests->get(k)->as_table() : nullptr)
              fewer.push_back(toml::table(*request));
          group->insert_or_assign("requests", std::move(fewer));
        }
      }
      if (auto n = shrinks.closed_requests.find(group_name); n != shrinks.closed_requests.end()) {
        group->insert_or_assign("requests", n->second);
        if (group->get("pipeline") && (*group)["pipeline"].value_or(std::int64_t(1)) > n->second)
          group->insert_or_assign("pipeline", n->second);
      }
    }
  }
  root.erase("choices");
  toml::array pinned;
  for (const model::Choice& choice : choices) {
    pinned.push_back(cat(model::choice_kind_name(choice.kind), ":", choice.options, ":", choice.pick));
  }
  root.insert("choices", std::move(pinned));
  return toml_text(root) + '\n';
}

Override parse_override(const std::string& assignment) {
  const auto eq = assignment.find('=');
  const std::string_view value = eq == std::string::npos ? std::string_view{} : std::string_view(assignment).substr(eq + 1);
  Override o{trimmed(std::string_view(assignment).substr(0, eq)), trimmed(value)};
  std::size_t column = 1;  // where the missing piece belongs
  if (eq == std::string::npos) column = assignment.size() + 1;
  else if (!o.key.empty()) column = eq + 2;
  if (eq == std::string::npos || o.key.empty() || o.value.empty()) {
    const char* missing = eq == std::string::npos ? "expected key=value" : o.key.empty() ? "the key is missing" : "the value is missing";
    throw ScenarioError(cat("--set:1:", column, ": ", missing, " in \"", assignment, "\""),
                        "e.g. --set loop.accept_batch=0");
  }
  o.value_column = static_cast<std::uint32_t>(eq + 2 + value.find_first_not_of(" \t"));
  check_key_depth(assignment, "--set");  // the value is TOML too
  // A key no scenario has is refused here, before anything runs, rather than in each file.
  check_override_key(Context("--set"), command_line_origin(o), split_key(o.key));
  return o;
}

}  // namespace loopsim::sim
