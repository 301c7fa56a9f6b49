// For tests: a minimal XML well-formedness check (libxml2 is not linked). It accepts the XML
// that loopsim and Graphviz write: a prolog (<?xml?>, comments, <!DOCTYPE>), one root element,
// balanced tags, quoted attributes, entities in text and attribute values; no CDATA.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace loopsim::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;  // values as written (entities not decoded)
};

struct XmlCheck {
  std::string error;  // empty: well-formed
  std::vector<XmlElement> elements;  // in document order
  bool ok() const { return error.empty(); }
  std::size_t count(const std::string& name) const {
    std::size_t n = 0;
    for (const auto& e : elements) n += e.name == name;
    return n;
  }
};

class XmlChecker {
 public:
  explicit XmlChecker(const std::string& text) : s_(text) {}

  XmlCheck run() {
    while (error_.empty() && skip_space() < s_.size()) step();
    if (error_.empty() && !open_.empty()) fail("unclosed <" + open_.back() + ">");
    if (error_.empty() && roots_ != 1) fail("expected one root element, saw " + std::to_string(roots_));
    return {error_, elements_};
  }

 private:
  void fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at byte " + std::to_string(i_);
  }
  std::size_t skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    return i_;
  }
  bool skip_past(const std::string& end) {
    auto at = s_.find(end, i_);
    if (at == std::string::npos) return fail("unterminated markup"), false;
    i_ = at + end.size();
    return true;
  }
  void step() {
    if (s_[i_] != '<') return text();
    if (s_.compare(i_, 4, "<!--") == 0) return void(skip_past("-->"));
    if (s_.compare(i_, 2, "<?") == 0) return void(skip_past("?>"));
    if (s_.compare(i_, 2, "<!") == 0) return void(skip_past(">"));
    if (s_.compare(i_, 2, "</") == 0) return close_tag();
    open_tag();
  }
  void text() {
    if (open_.empty()) return fail("text outside the root element");
    for (; i_ < s_.size() && s_[i_] != '<'; ++i_) {
      if (s_[i_] == '&' && !entity()) return;
    }
  }
  bool entity() {
    auto end = s_.find(';', i_);
    if (end == std::string::npos || end - i_ < 2 || end - i_ > 10) return fail("bad entity"), false;
    i_ = end;
    return true;
  }
  std::string name() {
    std::size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == ':' ||
                              s_[i_] == '-' || s_[i_] == '_' || s_[i_] == '.')) {
      ++i_;
    }
    if (start == i_) fail("expected a name");
    return s_.substr(start, i_ - start);
  }
  void open_tag() {
    ++i_;
    XmlElement element{name(), {}};
    while (error_.empty() && skip_space() < s_.size() && s_[i_] != '>' && s_[i_] != '/') attribute(element);
    if (!error_.empty()) return;
    if (i_ >= s_.size()) return fail("unterminated tag");
    if (open_.empty() && ++roots_ > 1) return fail("a second root element");
    elements_.push_back(element);
    if (s_[i_] == '/') {
      if (s_.compare(i_, 2, "/>") != 0) return fail("expected />");
      i_ += 2;
      return;
    }
    ++i_;
    open_.push_back(element.name);
  }
  void attribute(XmlElement& element) {
    std::string key = name();
    if (!error_.empty()) return;
    if (skip_space() >= s_.size() || s_[i_] != '=') return fail("expected = after " + key);
    ++i_;
    if (skip_space() >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return fail("unquoted value");
    char quote = s_[i_++];
    std::size_t start = i_;
    for (; i_ < s_.size() && s_[i_] != quote; ++i_) {
      if (s_[i_] == '<') return fail("< in an attribute value");
      if (s_[i_] == '&' && !entity()) return;
    }
    if (i_ >= s_.size()) return fail("unterminated attribute value");
    if (element.attributes.count(key)) return fail("duplicate attribute " + key);
    element.attributes[key] = s_.substr(start, i_ - start);
    ++i_;
  }
  void close_tag() {
    i_ += 2;
    std::string closed = name();
    skip_space();
    if (i_ >= s_.size() || s_[i_] != '>') return fail("expected > after </" + closed);
    ++i_;
    if (open_.empty() || open_.back() != closed) return fail("</" + closed + "> closes nothing open");
    open_.pop_back();
  }

  const std::string& s_;
  std::size_t i_ = 0;
  std::string error_;
  std::vector<std::string> open_;
  std::vector<XmlElement> elements_;
  int roots_ = 0;
};

inline XmlCheck check_xml(const std::string& text) { return XmlChecker(text).run(); }

}  // namespace loopsim::testing
