// SPDX-License-Identifier: Apache-2.0
// tfork completion bash|zsh|fish (cli.md §2): prints a completion script generated from the
// CLI11 command tree at run time, so it always matches the binary. The same scripts are
// committed under completions/ (tests/e2e/completion.sh checks that they do not drift).
#include "tfork/commands/completion.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/output/render.hpp"
#include "tfork/version.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace tfork::commands {
namespace {

// ---- the command tree, as completion needs it

struct OptionSpec {
  std::vector<std::string> names;  // "-o", "--output"
  std::string description;
  bool takes_value = false;
  std::vector<std::string> choices;  // from an IsMember check: "{table,json}"
  bool file = false;                 // an ExistingFile check, or a FILE / PATH value
};

struct CommandSpec {
  std::string path;  // "" for the root, "fork create" below it
  std::string description;
  std::vector<OptionSpec> options;
  std::vector<std::string> positional_choices;
  bool positional_file = false;
  std::vector<std::pair<std::string, std::string>> subcommands;  // name, description
};

// "TEXT:{table,json}" → {"table", "json"}.
std::vector<std::string> choices_from_type(const std::string& type) {
  std::vector<std::string> choices;
  const auto open = type.find('{');
  const auto close = type.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return choices;
  std::string item;
  for (char c : type.substr(open + 1, close - open - 1)) {
    if (c == ',') {
      choices.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  if (!item.empty()) choices.push_back(item);
  return choices;
}

bool is_file_type(const std::string& type, const std::string& name) {
  return type.find("FILE") != std::string::npos || type.find("PATH") != std::string::npos ||
         name == "--manifest" || name == "--data";
}

// The first sentence, on one line, for completion menus.
std::string short_description(std::string text) {
  std::ranges::replace(text, '\n', ' ');
  if (const auto stop = text.find(". "); stop != std::string::npos) text.resize(stop);
  if (const auto paren = text.find(" ("); paren != std::string::npos && paren > 20)
    text.resize(paren);
  if (text.size() > 70) text = text.substr(0, 67) + "...";
  return text;
}

void collect(const CLI::App& app, const std::string& path, std::vector<CommandSpec>& out) {
  CommandSpec spec;
  spec.path = path;
  spec.description = short_description(app.get_description());
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden
    const auto type = option->get_type_name();
    if (!option->nonpositional()) {
      auto choices = choices_from_type(type);
      spec.positional_choices.insert(spec.positional_choices.end(), choices.begin(), choices.end());
      if (type.find("FILE") != std::string::npos) spec.positional_file = true;
      continue;
    }
    // --help of a subcommand is the root's, offered everywhere already.
    if (!path.empty() && option->get_lnames() == std::vector<std::string>{"help"}) continue;
    OptionSpec item;
    for (const auto& name : option->get_snames())
      item.names.push_back("-" + name);
    for (const auto& name : option->get_lnames())
      item.names.push_back("--" + name);
    item.description = short_description(option->get_description());
    // A flag expects 0 values (CLI11 gives it a type size of 1 all the same).
    item.takes_value = option->get_expected_min() > 0;
    if (item.takes_value) {
      item.choices = choices_from_type(type);
      item.file = item.choices.empty() && is_file_type(type, item.names.back());
    }
    spec.options.push_back(std::move(item));
  }
  std::vector<const CLI::App*> children = app.get_subcommands([](const CLI::App* child) {
    return !child->get_name().empty() && !child->get_group().empty();
  });
  std::ranges::sort(children, {}, &CLI::App::get_name);
  for (const auto* child : children)
    spec.subcommands.emplace_back(child->get_name(), short_description(child->get_description()));
  out.push_back(std::move(spec));
  for (const auto* child : children)
    collect(*child, path.empty() ? child->get_name() : path + " " + child->get_name(), out);
}

std::vector<CommandSpec> command_tree(const CLI::App& root) {
  std::vector<CommandSpec> tree;
  collect(root, "", tree);
  return tree;
}

std::string join(const std::vector<std::string>& items, const std::string& separator = " ") {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : separator) + item;
  return out;
}

std::vector<std::string> option_names(const CommandSpec& spec, bool values_only) {
  std::vector<std::string> names;
  for (const auto& option : spec.options)
    if (!values_only || option.takes_value)
      names.insert(names.end(), option.names.begin(), option.names.end());
  return names;
}

// fish inside single quotes: only \ and ' are special.
std::string fish_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string header(const std::string& shell) {
  return "# " + shell + " completion for tfork " + std::string(k_version) +
         ". Generated by `tfork completion " + shell + "`; do not edit.\n";
}

// ---- bash

std::string bash_script(const std::vector<CommandSpec>& tree) {
  std::string s = header("bash");
  s += "# Install: copy to /usr/share/bash-completion/completions/tfork, or source it.\n\n";
  auto table = [&](const std::string& function, auto&& field) {
    s += function + "() {\n  case \"$1\" in\n";
    for (const auto& spec : tree) {
      const auto value = field(spec);
      if (!value.empty())
        s += "    " + output::shell_quote(spec.path) + ") echo " + output::shell_quote(value) +
             " ;;\n";
    }
    s += "  esac\n}\n\n";
  };
  table("_tfork_subcommands", [](const CommandSpec& spec) {
    std::vector<std::string> names;
    for (const auto& [name, description] : spec.subcommands)
      names.push_back(name);
    return join(names);
  });
  table("_tfork_options", [](const CommandSpec& spec) { return join(option_names(spec, false)); });
  table("_tfork_value_options",
        [](const CommandSpec& spec) { return join(option_names(spec, true)); });
  table("_tfork_positional_values", [](const CommandSpec& spec) {
    return spec.positional_file ? std::string("@file") : join(spec.positional_choices);
  });
  s += "_tfork_option_values() {\n  case \"$1|$2\" in\n";
  for (const auto& spec : tree) {
    for (const auto& option : spec.options) {
      if (!option.takes_value || (option.choices.empty() && !option.file)) continue;
      std::vector<std::string> keys;
      for (const auto& name : option.names)
        keys.push_back(output::shell_quote(spec.path + "|" + name));
      s += "    " + join(keys, " | ") + ") echo " +
           output::shell_quote(option.file ? "@file" : join(option.choices)) + " ;;\n";
    }
  }
  s += "  esac\n}\n\n";
  s += R"SH(# Global options (those of the root) are accepted after any subcommand.
_tfork_takes_value() {
  local names=" $(_tfork_value_options "$1") $(_tfork_value_options '') "
  [[ $names == *" $2 "* ]]
}

_tfork() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" cmdpath="" word values i
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    case "$word" in
      --*=* | =) ;;
      -*) if _tfork_takes_value "$cmdpath" "$word"; then ((i++)); fi ;;
      *)
        if [[ " $(_tfork_subcommands "$cmdpath") " == *" $word "* ]]; then
          cmdpath="${cmdpath:+$cmdpath }$word"
        fi
        ;;
    esac
  done
  ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD - 1]}"
  # --option=value, with '=' in COMP_WORDBREAKS: the words are --option, =, value.
  if [[ $prev == "=" ]] && ((COMP_CWORD > 1)); then
    prev="${COMP_WORDS[COMP_CWORD - 2]}"
  elif [[ $cur == "=" ]]; then
    prev="${COMP_WORDS[COMP_CWORD - 1]}" cur=""
  fi
  if [[ $prev == -* ]] && _tfork_takes_value "$cmdpath" "$prev"; then
    values="$(_tfork_option_values "$cmdpath" "$prev")"
    [[ -z $values ]] && values="$(_tfork_option_values '' "$prev")"
    if [[ $values == "@file" ]]; then
      COMPREPLY=($(compgen -f -- "$cur"))
    elif [[ -n $values ]]; then
      COMPREPLY=($(compgen -W "$values" -- "$cur"))
    fi
    return 0
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_tfork_options "$cmdpath") $(_tfork_options '')" -- "$cur"))
    return 0
  fi
  values="$(_tfork_subcommands "$cmdpath")"
  [[ -z $values ]] && values="$(_tfork_positional_values "$cmdpath")"
  if [[ $values == "@file" ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  elif [[ -n $values ]]; then
    COMPREPLY=($(compgen -W "$values" -- "$cur"))
  fi
  return 0
}

complete -F _tfork tfork
)SH";
  return s;
}

// ---- zsh

std::string zsh_script(const std::vector<CommandSpec>& tree) {
  std::string s = "#compdef tfork\n" + header("zsh");
  s += "# Install: copy to a directory in $fpath as _tfork (then compinit), or source it.\n\n";
  // Each helper sets $reply; _describe takes "name:description" entries.
  auto table = [&](const std::string& function, auto&& field) {
    s += function + "() {\n  reply=()\n  case $1 in\n";
    for (const auto& spec : tree) {
      const auto values = field(spec);
      if (values.empty()) continue;
      std::vector<std::string> quoted;
      for (const auto& value : values)
        quoted.push_back(output::shell_quote(value));
      s += "    " + output::shell_quote(spec.path) + ") reply=(" + join(quoted) + ") ;;\n";
    }
    s += "  esac\n}\n\n";
  };
  auto escape_colon = [](std::string text) {
    std::string out;
    for (char c : text) {
      if (c == ':') out += '\\';
      out += c;
    }
    return out;
  };
  table("_tfork_subcommands", [&](const CommandSpec& spec) {
    std::vector<std::string> entries;
    for (const auto& [name, description] : spec.subcommands)
      entries.push_back(escape_colon(name) + ":" + description);
    return entries;
  });
  table("_tfork_options", [&](const CommandSpec& spec) {
    std::vector<std::string> entries;
    for (const auto& option : spec.options)
      for (const auto& name : option.names)
        entries.push_back(escape_colon(name) + ":" + option.description);
    return entries;
  });
  table("_tfork_value_options", [](const CommandSpec& spec) { return option_names(spec, true); });
  table("_tfork_positional_values", [](const CommandSpec& spec) {
    return spec.positional_file ? std::vector<std::string>{"@file"} : spec.positional_choices;
  });
  s += "_tfork_option_values() {\n  reply=()\n  case \"$1|$2\" in\n";
  for (const auto& spec : tree) {
    for (const auto& option : spec.options) {
      if (!option.takes_value || (option.choices.empty() && !option.file)) continue;
      std::vector<std::string> keys;
      for (const auto& name : option.names)
        keys.push_back(output::shell_quote(spec.path + "|" + name));
      std::vector<std::string> values;
      for (const auto& value : option.file ? std::vector<std::string>{"@file"} : option.choices)
        values.push_back(output::shell_quote(value));
      s += "    " + join(keys, " | ") + ") reply=(" + join(values) + ") ;;\n";
    }
  }
  s += "  esac\n}\n\n";
  s += R"SH(# Global options (those of the root) are accepted after any subcommand.
_tfork_takes_value() {
  local -a names
  _tfork_value_options "$1"; names=($reply)
  _tfork_value_options ''; names+=($reply)
  (( ${names[(Ie)$2]} ))
}

_tfork() {
  local cmdpath='' word cur prev
  local -a reply entries
  integer i
  for (( i = 2; i < CURRENT; i++ )); do
    word=${words[i]}
    case $word in
      --*=*) ;;
      -*) _tfork_takes_value "$cmdpath" "$word" && (( i++ )) ;;
      *)
        _tfork_subcommands "$cmdpath"
        if (( ${reply[(I)${(b)word}:*]} )); then
          cmdpath=${cmdpath:+$cmdpath }$word
        fi
        ;;
    esac
  done
  cur=${words[CURRENT]}
  prev=${words[CURRENT-1]}
  if [[ $cur == --*=* ]]; then
    # --option=value: complete the value after the '='.
    prev=${cur%%=*}
    compset -P '*='
  fi
  if [[ $prev == -* ]] && _tfork_takes_value "$cmdpath" "$prev"; then
    _tfork_option_values "$cmdpath" "$prev"
    (( ${#reply} )) || _tfork_option_values '' "$prev"
    if [[ ${reply[1]} == @file ]]; then
      _files
    elif (( ${#reply} )); then
      compadd -- $reply
    else
      _message 'value'
    fi
    return
  fi
  if [[ $cur == -* ]]; then
    _tfork_options "$cmdpath"; entries=($reply)
    _tfork_options ''; [[ -n $cmdpath ]] && entries+=($reply)
    _describe -t options 'tfork option' entries
    return
  fi
  _tfork_subcommands "$cmdpath"
  if (( ${#reply} )); then
    entries=($reply)
    _describe -t commands 'tfork command' entries
    return
  fi
  _tfork_positional_values "$cmdpath"
  if [[ ${reply[1]} == @file ]]; then
    _files
  elif (( ${#reply} )); then
    compadd -- $reply
  fi
}

if [[ $funcstack[1] == _tfork ]]; then
  _tfork "$@"
else
  compdef _tfork tfork
fi
)SH";
  return s;
}

// ---- fish

std::string fish_script(const std::vector<CommandSpec>& tree) {
  std::string s = header("fish");
  s += "# Install: copy to ~/.config/fish/completions/tfork.fish, or source it.\n\n";
  auto table = [&](const std::string& function, auto&& field) {
    s += "function " + function + "\n    switch \"$argv[1]\"\n";
    for (const auto& spec : tree) {
      const auto values = field(spec);
      if (values.empty()) continue;
      std::vector<std::string> quoted;
      for (const auto& value : values)
        quoted.push_back(fish_quote(value));
      s += "        case " + fish_quote(spec.path) + "\n            printf '%s\\n' " +
           join(quoted) + "\n";
    }
    s += "    end\nend\n\n";
  };
  table("__tfork_subcommands", [](const CommandSpec& spec) {
    std::vector<std::string> names;
    for (const auto& [name, description] : spec.subcommands)
      names.push_back(name);
    return names;
  });
  table("__tfork_value_options", [](const CommandSpec& spec) { return option_names(spec, true); });
  s += R"SH(# The subcommand path of the command line so far ("" at the top, "fork create" below).
function __tfork_path
    set -l tokens (commandline -opc)
    set -l cmdpath
    set -l skip 0
    for token in $tokens[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $token
            case '--*=*'
            case '-*'
                if contains -- $token (__tfork_value_options (string join ' ' -- $cmdpath)) (__tfork_value_options '')
                    set skip 1
                end
            case '*'
                if contains -- $token (__tfork_subcommands (string join ' ' -- $cmdpath))
                    set -a cmdpath $token
                end
        end
    end
    string join ' ' -- $cmdpath
end

function __tfork_at
    set -l cmdpath (__tfork_path)
    test "$cmdpath" = "$argv[1]"
end

complete -c tfork -f
)SH";
  for (const auto& spec : tree) {
    const auto condition = "-n " + fish_quote("__tfork_at " + fish_quote(spec.path));
    for (const auto& [name, description] : spec.subcommands) {
      s += "complete -c tfork " + condition + " -a " + fish_quote(name) + " -d " +
           fish_quote(description) + "\n";
    }
    for (const auto& option : spec.options) {
      // The root's options are global: offered at every level.
      std::string line = "complete -c tfork";
      if (!spec.path.empty()) line += " " + condition;
      for (const auto& name : option.names) {
        if (name.starts_with("--"))
          line += " -l " + name.substr(2);
        else if (name.size() == 2)
          line += " -s " + name.substr(1);
        else
          line += " -o " + name.substr(1);
      }
      if (option.takes_value) {
        // -x: a value is required and no file is offered; -r -F: a file name.
        if (option.file)
          line += " -r -F";
        else
          line += " -x";
        if (!option.choices.empty()) line += " -a " + fish_quote(join(option.choices));
      }
      line += " -d " + fish_quote(option.description);
      s += line + "\n";
    }
    if (!spec.positional_choices.empty()) {
      s += "complete -c tfork " + condition + " -a " + fish_quote(join(spec.positional_choices)) +
           "\n";
    } else if (spec.positional_file) {
      s += "complete -c tfork " + condition + " -F\n";
    }
  }
  return s;
}

// The script for `shell` (bash, zsh or fish) of the whole command tree of `root`.
cli::CommandResult run_completion(const std::string& shell, const CLI::App& root) {
  const auto tree = command_tree(root);
  cli::CommandResult result;
  if (shell == "bash")
    result.text = bash_script(tree);
  else if (shell == "zsh")
    result.text = zsh_script(tree);
  else
    result.text = fish_script(tree);
  return result;
}

}  // namespace

void register_completion(CLI::App& root, cli::Context& context) {
  auto shell = std::make_shared<std::string>();
  auto* command =
      root.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  command->footer(
      "Load it now:  source <(tfork completion bash)   (zsh: the same; fish: | source)\n"
      "The same scripts ship under completions/ (tfork.bash, _tfork, tfork.fish)." +
      std::string("\n\n") + command->get_footer());
  command->add_option("SHELL", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value == "bash" || value == "zsh" || value == "fish") return {};
            return "tfork completion writes scripts for bash, zsh and fish, not '" +
                   output::printable(value) + "'";
          },
          "{bash,zsh,fish}"));
  // The whole tree exists by the time the command runs (every command is registered). The
  // script is text whatever --output says.
  const CLI::App* app = &root;
  cli::describe(*command, 0,
                {"tfork completion bash > /etc/bash_completion.d/tfork",
                 "tfork completion zsh > \"${fpath[1]}/_tfork\""});
  cli::on_run(*command, context, [shell, app] { return run_completion(*shell, *app); });
}

}  // namespace tfork::commands
