// SPDX-License-Identifier: Apache-2.0
#include "tfork/cli/usage.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace tfork::cli {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 4> k_aliases = {{
    {"ls", "list"},
    {"rm", "delete"},
    {"rm", "remove"},
    {"create", "new"},
}};

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbouring letters each cost 1 ("lst" → "ls" is 1, "tardown" → "teardown" is 1).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::vector<CLI::App*> children(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

// Whether the option `word` ("--output", "-o") of `app` or of a command above it (global
// options are accepted after a subcommand) takes the next word as its value.
bool takes_separate_value(CLI::App& app, std::string_view word) {
  const bool attached =
      word.find('=') != std::string_view::npos || (!word.starts_with("--") && word.size() > 2);
  if (attached) return false;
  for (CLI::App* at = &app; at; at = at->get_parent()) {
    if (const auto* option = at->get_option_no_throw(std::string(word)))
      return option->get_expected_min() > 0;
  }
  return false;
}

}  // namespace

void add_aliases(CLI::App& app) {
  for (auto* child : children(app)) {
    for (const auto& [name, alias] : k_aliases)
      if (child->get_name() == name) child->alias(std::string(alias));
    add_aliases(*child);
  }
}

std::string command_path(const CLI::App& app) {
  std::vector<std::string> words;
  for (const CLI::App* at = &app; at; at = at->get_parent())
    words.push_back(at->get_parent() ? at->get_name() : "tfork");
  std::string path;
  for (auto word = words.rbegin(); word != words.rend(); ++word)
    path += (path.empty() ? "" : " ") + *word;
  return path;
}

CLI::App& deepest_parsed(CLI::App& root) {
  CLI::App* at = &root;
  for (;;) {
    const auto parsed = at->get_subcommands();
    if (parsed.empty()) return *at;
    at = parsed.front();
  }
}

CLI::App* find_subcommand(CLI::App& parent, std::string_view word) {
  for (auto* child : children(parent)) {
    if (child->get_name() == word) return child;
    const auto& aliases = child->get_aliases();
    if (std::ranges::find(aliases, word) != aliases.end()) return child;
  }
  return nullptr;
}

std::optional<std::string> nearest_subcommand(CLI::App& parent, std::string_view word) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (auto* child : children(parent)) {
    std::vector<std::string> names{child->get_name()};
    names.insert(names.end(), child->get_aliases().begin(), child->get_aliases().end());
    for (const auto& name : names) {
      // A prefix of at least two letters ("snap" for snapshot) counts as distance 1.
      std::size_t distance =
          word.size() >= 2 && name.starts_with(word) ? 1 : edit_distance(word, name);
      if (!best || distance < best_distance) {
        best = child->get_name();
        best_distance = distance;
      }
    }
  }
  // One edit in a short word, about a third of a longer one: nearer than that is a guess.
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  if (best && best_distance <= allowed) return best;
  return std::nullopt;
}

std::optional<std::string> unknown_command_message(CLI::App& root,
                                                   const std::vector<std::string>& arguments) {
  // Walk the words as the parser would: each word that names a subcommand goes one level
  // down, an option's value is skipped; the first other word is where the command was
  // unknown.
  CLI::App* at = &root;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const auto& word = arguments[i];
    if (word == "--") break;
    if (word.starts_with("-") && word.size() > 1) {
      if (takes_separate_value(*at, word)) ++i;
      continue;
    }
    if (auto* child = find_subcommand(*at, word)) {
      at = child;
      continue;
    }
    if (children(*at).empty()) return std::nullopt;  // a leaf: the word is an argument
    std::string message = "unknown command '" + word + "' for '" + command_path(*at) + "'";
    if (auto nearest = nearest_subcommand(*at, word))
      message += "; did you mean '" + *nearest + "'?";
    return message;
  }
  return std::nullopt;
}

namespace {

// The option `word` names ("--prefix", "-n", "--output=json", "-ojson", "-vv"), on `app` or a
// command above it; nullptr when none does.
const CLI::Option* known_option(CLI::App& app, std::string_view word) {
  std::string name(word.substr(0, word.find('=')));
  for (CLI::App* at = &app; at; at = at->get_parent()) {
    if (const auto* option = at->get_option_no_throw(name)) return option;
    // A short option with its value or a cluster attached: "-ojson", "-vv".
    if (!name.starts_with("--") && name.size() > 2)
      if (const auto* option = at->get_option_no_throw(name.substr(0, 2))) return option;
  }
  return nullptr;
}

// The nearest option name to a mistyped `word`, among the options of `app` and above.
std::optional<std::string> nearest_option(CLI::App& app, std::string_view word) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (CLI::App* at = &app; at; at = at->get_parent()) {
    for (const auto* option : at->get_options()) {
      for (const auto& long_name : option->get_lnames()) {
        const auto name = "--" + long_name;
        const std::size_t distance = edit_distance(word, name);
        if (!best || distance < best_distance) {
          best = name;
          best_distance = distance;
        }
      }
    }
  }
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  if (best && best_distance <= allowed) return best;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unknown_option_message(CLI::App& root,
                                                  const std::vector<std::string>& arguments) {
  CLI::App* at = &root;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const auto& word = arguments[i];
    if (word == "--") break;
    if (!word.starts_with('-') || word == "-") {
      if (auto* child = find_subcommand(*at, word)) {
        at = child;
        continue;
      }
      if (!children(*at).empty()) return std::nullopt;  // an unknown command: said as such
      continue;                                         // a leaf's argument
    }
    if (known_option(*at, word)) {
      if (takes_separate_value(*at, word)) ++i;
      continue;
    }
    std::string message = "unknown option '" + word + "' for '" + command_path(*at) + "'";
    if (word == "-V")
      message += "; did you mean 'tfork version' (or --version)?";
    else if (auto nearest = nearest_option(*at, word.substr(0, word.find('='))))
      message += "; did you mean '" + *nearest + "'?";
    return message;
  }
  return std::nullopt;
}

bool asks_for_json(const std::vector<std::string>& arguments,
                   const std::optional<std::string>& tfork_output) {
  std::optional<std::string> output;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const auto& word = arguments[i];
    if (word == "--") break;
    if (word == "--json") return true;
    if ((word == "-o" || word == "--output") && i + 1 < arguments.size()) {
      output = arguments[i + 1];
    } else if (word.starts_with("--output=")) {
      output = word.substr(9);
    } else if (word.starts_with("-o") && word.size() > 2 && word[2] != '-') {
      output = word.substr(2);
    }
  }
  if (output) return *output == "json";
  return tfork_output == "json";
}

}  // namespace tfork::cli
