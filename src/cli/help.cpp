// SPDX-License-Identifier: Apache-2.0
#include "tfork/cli/help.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace tfork::cli {
namespace {

// The families of global options (by long name), in the order their help lists them.
struct Family {
  unsigned bit;
  std::vector<std::string_view> names;
};
const std::vector<Family>& families() {
  static const std::vector<Family> list{
      {honours::output, {"output", "json"}},
      {honours::service,
       {"endpoint-url", "iam-endpoint-url", "profile", "region", "path-style", "virtual-hosted",
        "ca-bundle", "no-verify-ssl", "max-attempts", "connect-timeout", "read-timeout"}},
      {honours::batch, {"concurrency", "progress", "no-progress"}},
      {honours::confirm, {"yes"}},
      {honours::dry_run, {"dry-run"}},
      {0, {"verbose", "debug", "quiet", "no-color"}},  // every command
  };
  return list;
}

struct Extras {
  unsigned globals = 0;
  std::vector<std::string> examples;
};

// CLI11's own names for a value's type, which say nothing to a person.
bool generic_type(std::string_view type) {
  for (std::string_view generic : {"TEXT", "INT", "UINT", "FLOAT", "BOOLEAN", "ENUM", "NUMBER"})
    if (type == generic) return true;
  return type.empty();
}

// The value an option takes, in words: its own type name (DURATION, FILE), else what its check
// says ("{table,json}" becomes table|json; a whole number N; SECONDS), else the last word of
// its long name (--prefix PREFIX, --endpoint-url URL).
std::string value_name(const CLI::Option& option) {
  if (!option.get_option_text().empty()) return option.get_option_text();
  const auto full = option.get_type_name();
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto colon = full.find(':', start);
    parts.push_back(full.substr(start, colon == std::string::npos ? colon : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  // An own type name may hold colons itself (HOST:PORT, SRC[:DST]); a check's words follow it
  // and have spaces or braces, or are CLI11's generic names.
  if (!generic_type(parts.front())) {
    auto own = parts.front();
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const auto& part = parts[i];
      if (generic_type(part) || part.find_first_of(" {}") != std::string::npos) break;
      own += ":" + part;
    }
    return own;
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto& check = parts[i];
    if (check.size() > 2 && check.front() == '{' && check.back() == '}') {
      auto choices = check.substr(1, check.size() - 2);
      std::ranges::replace(choices, ',', '|');
      return choices;
    }
    if (check.starts_with("INT ") || check.starts_with("NUMBER ")) return "N";
    if (!generic_type(check) && check.find(' ') == std::string::npos) return check;
  }
  if (parts.front() == "INT" || parts.front() == "UINT") return "N";
  const auto names = option.get_lnames();
  if (names.empty()) return "VALUE";
  auto word = std::string_view(names.front());
  if (const auto dash = word.rfind('-'); dash != std::string_view::npos)
    word.remove_prefix(dash + 1);
  std::string upper(word);
  for (auto& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

class HelpFormatter final : public CLI::Formatter {
 public:
  HelpFormatter() {
    label("Positionals", "Arguments");
    column_width(34);
  }

  void add(const CLI::App* app, Extras extras) { extras_[app] = std::move(extras); }

  std::string make_option_opts(const CLI::Option* option) const override {
    if (option->get_type_size() == 0 || option->get_expected_max() == 0) return {};  // a flag
    std::string out;
    if (option->nonpositional()) out = " " + value_name(*option);
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (option->get_required() && option->nonpositional()) out += " (required)";
    return out;
  }

  std::string make_option_usage(const CLI::Option* option) const override {
    auto name = option->get_name();
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) name += "...";
    return option->get_required() ? name : "[" + name + "]";
  }

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    std::string out = make_description(app) + make_usage(app, name) + make_positionals(app) +
                      make_groups(app, mode) + make_subcommands(app, mode);
    if (const auto it = extras_.find(app); it != extras_.end()) {
      out += globals_section(*app, it->second.globals);
      if (!it->second.examples.empty()) {
        out += "\nExamples:\n";
        for (const auto& example : it->second.examples)
          out += "  " + example + "\n";
      }
    }
    return out + "\n" + make_footer(app);
  }

 private:
  // "Global options:" and the names of those the command honours, as the root defines them.
  static std::string globals_section(const CLI::App& app, unsigned globals) {
    const CLI::App* root = &app;
    while (root->get_parent() != nullptr)
      root = root->get_parent();
    std::vector<std::string> shown;
    for (const auto& family : families()) {
      if (family.bit != 0 && (globals & family.bit) == 0) continue;
      for (const auto name : family.names) {
        const auto* option = root->get_option_no_throw("--" + std::string(name));
        if (option == nullptr) continue;
        std::string text;
        for (const auto& s : option->get_snames())
          text += "-" + s + ", ";
        text += "--" + std::string(name);
        if (option->get_expected_min() > 0) text += " " + value_name(*option);
        shown.push_back(std::move(text));
      }
    }
    // Wrapped at 90 columns, indented as the options are.
    std::string out = "\nGlobal options (see tfork --help):\n ";
    std::size_t column = 1;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const auto item = shown[i] + (i + 1 < shown.size() ? "," : "");
      if (column + 1 + item.size() > 90) {
        out += "\n ";
        column = 1;
      }
      out += " " + item;
      column += 1 + item.size();
    }
    return out + "\n";
  }

  std::map<const CLI::App*, Extras> extras_;
};

}  // namespace

std::shared_ptr<CLI::Formatter> make_help_formatter() {
  return std::make_shared<HelpFormatter>();
}

void describe(CLI::App& command, unsigned globals,
              std::initializer_list<std::string_view> examples) {
  auto* formatter = dynamic_cast<HelpFormatter*>(command.get_formatter().get());
  if (formatter == nullptr) return;  // an app not made by make_app (a test's own)
  formatter->add(&command, Extras{globals, {examples.begin(), examples.end()}});
}

}  // namespace tfork::cli
