// SPDX-License-Identifier: Apache-2.0
#include "tfork/cli/root.hpp"

#include "tfork/cli/command.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/usage.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/commands/bucket.hpp"
#include "tfork/commands/completion.hpp"
#include "tfork/commands/doctor.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/commands/mcp.hpp"
#include "tfork/commands/run.hpp"
#include "tfork/commands/serve.hpp"
#include "tfork/commands/snapshot.hpp"
#include "tfork/commands/teardown.hpp"
#include "tfork/commands/version.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/version.hpp"
#include "tfork/workflow/agent_env.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace tfork::cli {
namespace {

void configure_logging(const GlobalOptions& options, const Environment& env) {
  const bool color = !options.no_color && !env("NO_COLOR") && ::isatty(STDERR_FILENO) == 1;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(
      color ? spdlog::color_mode::automatic : spdlog::color_mode::never);
  auto logger = std::make_shared<spdlog::logger>("tfork", sink);
  // On a terminal a log line first clears the line it lands on: a progress line may be
  // showing there, and is redrawn below it on its next tick.
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  logger->set_pattern(std::string(terminal ? "\r\033[K" : "") + "tfork: %^%l%$: %v");
  auto level = spdlog::level::warn;
  if (options.quiet) level = spdlog::level::err;
  if (options.verbose == 1) level = spdlog::level::info;
  if (options.verbose >= 2 || options.debug) level = spdlog::level::debug;
  logger->set_level(level);
  spdlog::set_default_logger(logger);
}

void add_global_options(CLI::App& app, GlobalOptions& o) {
  const char* group = "Global options";
  app.add_option("-o,--output", o.output, "Output format: table or json (env TFORK_OUTPUT)")
      ->transform(one_of("--output", {"table", "json"}))
      ->group(group);
  app.add_flag("--json", o.json, "Shorthand for --output json")->group(group);
  app.add_option("--endpoint-url", o.config.endpoint_url,
                 "S3 endpoint (else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, "
                 "TIGRIS_STORAGE_ENDPOINT, the profile, https://t3.storage.dev)")
      ->group(group);
  app.add_option("--iam-endpoint-url", o.config.iam_endpoint_url,
                 "IAM endpoint (else AWS_ENDPOINT_URL_IAM, TIGRIS_IAM_ENDPOINT, the profile, "
                 "the S3 endpoint when it is not Tigris, https://iam.storageapi.dev)")
      ->group(group);
  app.add_option("--profile", o.config.profile, "Profile in ~/.aws/credentials and ~/.aws/config")
      ->group(group);
  app.add_option("--region", o.config.region,
                 "Signing region (default auto; Tigris endpoints ignore AWS_REGION)")
      ->group(group);
  auto* path = app.add_flag("--path-style", o.path_style,
                            "Address buckets as https://host/bucket (default for non-Tigris hosts)")
                   ->group(group);
  app.add_flag("--virtual-hosted", o.virtual_hosted,
               "Address buckets as https://bucket.host (default for Tigris hosts)")
      ->excludes(path)
      ->group(group);
  app.add_option("--ca-bundle", o.config.ca_bundle, "CA certificates file (env AWS_CA_BUNDLE)")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_flag("--no-verify-ssl", o.no_verify_ssl, "Do not verify TLS certificates")->group(group);
  app.add_option("--concurrency", o.concurrency, "Requests in flight at most, 1-1024 (default 32)")
      ->check(whole_number("--concurrency", 1, 1024))
      ->group(group);
  app.add_option("--max-attempts", o.config.max_attempts,
                 "Sends per request, retries included (env AWS_MAX_ATTEMPTS; default 3)")
      ->check(whole_number("--max-attempts", 1, 20))
      ->group(group);
  app.add_option("--connect-timeout", o.connect_timeout, "Connect timeout in seconds (default 10)")
      ->check(positive_seconds("--connect-timeout"))
      ->group(group);
  app.add_option("--read-timeout", o.read_timeout,
                 "Fail a request that receives nothing for this many seconds (default 60)")
      ->check(positive_seconds("--read-timeout"))
      ->group(group);
  app.add_flag(
         "-v,--verbose", o.verbose,
         "-v: what the run does (snapshot, retries and why, rollback); -vv: every request too")
      ->group(group);
  app.add_flag("--debug", o.debug,
               "Log every request and response line on stderr (secrets redacted)")
      ->group(group);
  app.add_flag("-q,--quiet", o.quiet, "Only errors on stderr; no progress")->group(group);
  app.add_flag("--no-progress", o.no_progress, "No progress lines on stderr")->group(group);
  app.add_option("--progress", o.progress,
                 "Progress on stderr: auto, plain, json or none (auto: a live line on a "
                 "terminal, plain lines elsewhere; json: one event per line, for programs)")
      ->transform(one_of("--progress", {"auto", "plain", "json", "none"}))
      ->type_name("MODE")
      ->group(group);
  app.add_flag("--no-color", o.no_color, "No colour on stderr (also NO_COLOR)")->group(group);
  app.add_flag("-y,--yes", o.yes, "Do not ask for confirmation")->group(group);
  app.add_flag("--dry-run", o.dry_run,
               "Print the requests a mutating command would send, and send nothing")
      ->group(group);
}

void report_error(const Error& error, const Context& context, bool json) {
  if (json) {
    nlohmann::ordered_json doc;
    doc["error"] = {
        {"code", error.code},
        {"message", error.message},
        {"http_status",
         error.http_status ? nlohmann::ordered_json(error.http_status) : nlohmann::ordered_json()},
        {"request_id", error.request_id.empty() ? nlohmann::ordered_json()
                                                : nlohmann::ordered_json(error.request_id)},
        {"exit_code", exit_code(error.kind)}};
    std::cerr << doc.dump() << '\n';
    return;
  }
  const bool color =
      !context.options.no_color && !context.env()("NO_COLOR") && ::isatty(STDERR_FILENO) == 1;
  std::string detail;
  if (error.http_status != 0 || !error.request_id.empty()) {
    detail = " (" + error.code;
    if (error.http_status) detail += ", HTTP " + std::to_string(error.http_status);
    if (!error.request_id.empty()) detail += ", request id " + error.request_id;
    detail += ")";
  }
  // The message and code may carry a server's text: never raw control characters.
  std::cerr << (color ? "\033[31mtfork: error:\033[0m " : "tfork: error: ")
            << output::printable(error.message) << output::printable(detail) << '\n';
}

// The one road out of a command (cli.md §6): its result on stdout, then its error, if any,
// on stderr (one JSON object with --output json), and the exit code of that error's kind.
int report_result(CommandResult result, Context& context, const std::string& usage_hint) {
  context.end_progress();
  auto format = output::Format::table;
  try {
    format = context.format();
  } catch (const TforkError& error) {
    // A bad --output / TFORK_OUTPUT only matters when there is a document to print.
    if (result.document) {
      result = CommandResult{};
      result.error = error.error();
    }
  }
  const bool json = format == output::Format::json;
  if (result.document && json) {
    std::cout << result.document->dump(2) << '\n';
  } else {
    std::cout << result.text;
  }
  std::cout.flush();
  if (!result.notice.empty() && !json && !context.options.quiet) std::cerr << result.notice << '\n';
  if (!result.error) return 0;
  report_error(*result.error, context, json);
  if (result.error->kind == ErrorKind::usage && !json)
    std::cerr << "Run '" << usage_hint << " --help' for usage.\n";
  return exit_code(result.error->kind);
}

// `tfork help [COMMAND...]`: the help of tfork or of the command named, on stdout.
void register_help(CLI::App& app, Context& context) {
  auto words = std::make_shared<std::vector<std::string>>();
  auto* help = app.add_subcommand(
      "help", "Show the help of tfork, or of a command (tfork help fork create)");
  help->add_option("COMMAND", *words, "The command whose help to show");
  on_run(*help, context, [&app, words] {
    CLI::App* target = &app;
    for (const auto& word : *words) {
      auto* child = find_subcommand(*target, word);
      if (!child) {
        auto message = "unknown command '" + word + "' for '" + command_path(*target) + "'";
        if (auto nearest = nearest_subcommand(*target, word))
          message += "; did you mean '" + *nearest + "'?";
        usage_error(message);
      }
      target = child;
    }
    CommandResult result;
    // Formatted directly: the root's help() would show the help of `help` itself, the
    // subcommand being run.
    result.text = target->get_formatter()->make_help(target, command_path(*target),
                                                     CLI::AppFormatMode::Normal);
    return result;
  });
}

// A command line CLI11 could not parse: one line that says what is wrong in words (an
// unknown command with the nearest one, a value out of range with the range), and where
// the help of the command concerned is; one JSON object on stderr when JSON was asked for.
int report_parse_error(CLI::App& app, const CLI::ParseError& error,
                       const std::vector<std::string>& arguments, Context& context, bool json) {
  CLI::App& reached = deepest_parsed(app);
  std::string message;
  if (auto option = unknown_option_message(app, arguments)) {
    message = *option;
  } else if (auto unknown = unknown_command_message(app, arguments)) {
    message = *unknown;
  } else if (dynamic_cast<const CLI::RequiredError*>(&error) &&
             !reached.get_subcommands([](CLI::App*) { return true; }).empty() &&
             reached.get_subcommands().empty() &&
             std::string_view(error.what()).find("subcommand") != std::string_view::npos) {
    std::string names;
    for (const auto* child : reached.get_subcommands([](CLI::App*) { return true; }))
      names += (names.empty() ? "" : ", ") + child->get_name();
    message = "'" + command_path(reached) + "' needs a command: " + names;
  } else {
    message = validation_message(error.what());
  }
  report_error(Error{ErrorKind::usage, "UsageError", message, 0, {}}, context, json);
  if (!json) std::cerr << "Run '" << command_path(reached) << " --help' for usage.\n";
  return exit_code(ErrorKind::usage);
}

// The first word of `arguments` that is neither a global option of `app` nor an option's value;
// "" when there is none, or when an option comes first that `app` does not know (its value
// could be the next word).
std::string command_word(const CLI::App& app, const std::vector<std::string>& arguments) {
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const auto& word = arguments[i];
    if (!word.starts_with('-') || word == "-") return word;
    if (word.find('=') != std::string::npos) continue;  // --output=json
    const bool long_form = word.starts_with("--");
    const auto* option = app.get_option_no_throw(long_form ? word : word.substr(0, 2));
    if (option == nullptr) return {};
    // "-o json" and "--output json" take the next word; "-ojson" holds its value.
    if (option->get_items_expected_min() > 0 && (long_form || word.size() == 2)) ++i;
  }
  return {};
}

}  // namespace

void register_commands(CLI::App& app, Context& context, std::string_view only) {
  struct Command {
    std::string_view name;
    void (*add)(CLI::App&, Context&);
  };
  // Names that need every command built (help, completion) are not in this list's `only`.
  static constexpr Command k_commands[] = {
      {"bucket", commands::register_bucket},
      {"completion", commands::register_completion},
      {"doctor", commands::register_doctor},
      {"fork", commands::register_fork},
      {"help", register_help},
      {"mcp", commands::register_mcp},
      {"run", commands::register_run},
      {"serve", commands::register_serve},
      {"snapshot", commands::register_snapshot},
      {"teardown", commands::register_teardown},
      {"version", commands::register_version},
  };
  const bool one =
      only != "help" && only != "completion" &&
      std::ranges::any_of(k_commands, [&](const Command& c) { return c.name == only; });
  for (const auto& command : k_commands)
    if (!one || command.name == only) command.add(app, context);
}

std::unique_ptr<CLI::App> make_app(Context& context, const std::vector<std::string>& arguments) {
  auto app = std::make_unique<CLI::App>(
      "tfork: give every agent its own copy-on-write fork of a Tigris bucket", "tfork");
  // Before any subcommand is added: each takes its parent's formatter when it is made.
  app->formatter(make_help_formatter());
  app->set_version_flag("--version", std::string("tfork ") + k_version);
  app->require_subcommand(1);
  app->fallthrough();  // global options are accepted after the subcommand too
  add_global_options(*app, context.options);
  app->footer(
      "Exit codes: 0 ok, 1 other, 2 auth, 3 not found, 4 throttled, 5 network, 6 conflict,\n"
      "7 partial, 64 usage, 130/143 interrupted (SIGINT/SIGTERM). See man tfork.");
  app->parse_complete_callback([&context] { configure_logging(context.options, context.env()); });
  register_commands(*app, context, command_word(*app, arguments));
  add_aliases(*app);
  return app;
}

int run(int argc, char** argv) {
  Context context;
  return run(argc, argv, context);
}

int run(int argc, char** argv, Context& context) {
  std::unique_ptr<CLI::App> app;
  CommandResult result;
  // Everything after the first `--` is an agent's command, kept apart from what CLI11
  // parses.
  std::vector<std::string> arguments(argv + std::min(argc, 1), argv + argc);
  if (const auto separator = std::ranges::find(arguments, "--"); separator != arguments.end()) {
    context.has_separator = true;
    context.command_after_separator.assign(separator + 1, arguments.end());
    arguments.erase(separator, arguments.end());
  }
  const bool json_asked = asks_for_json(arguments, context.env()("TFORK_OUTPUT"));
  std::string usage_hint = "tfork";
  try {
    app = make_app(context, arguments);
    if (arguments.empty() && !context.has_separator) {
      // Bare `tfork`: what it can do, and the usage exit code (nothing was asked).
      std::cerr << app->help();
      return exit_code(ErrorKind::usage);
    }
    // CLI11's vector form takes the arguments in reverse order.
    std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
    app->parse(reversed);
    usage_hint = command_path(deepest_parsed(*app));
    if (context.has_separator && !context.takes_command)
      usage_error("this command takes no command after --");
    // `serve` takes SIGINT/SIGTERM with sigwait; every other command through interrupted().
    if (!context.takes_signals) install_interrupt_handler();
    if (context.options.json && context.options.output == "table")
      spdlog::warn("--json and --output table contradict each other; printing JSON");
    if (context.selected_command) result = context.selected_command();
  } catch (const CLI::Success& done) {  // --help, --version
    return app->exit(done);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app->exit(error);
    return report_parse_error(*app, error, arguments, context, json_asked);
  } catch (const TforkError& error) {
    result = CommandResult{};
    result.error = error.error();
  } catch (const std::exception& error) {
    result = CommandResult{};
    result.error = Error{ErrorKind::other, "InternalError", error.what(), 0, {}};
  }
  // An operator command that fails with an agent's key: say whose key it is (issue 7 §2).
  if (result.error && result.error->kind == ErrorKind::auth) {
    if (const auto who = context.identity_hint(); !who.empty())
      result.error->message += " (" + who + ")";
    if (const auto key = context.access_key_in_use()) {
      if (auto hint = workflow::agent_key_hint(*key, std::filesystem::current_path()))
        result.error->message += "; " + *hint;
    }
  }
  // Ctrl-C decides the exit code unless the command already reported a definite failure.
  if (interrupted().load() && (!result.error || result.error->kind == ErrorKind::partial))
    result.error = Error{ErrorKind::interrupted, "Interrupted", "interrupted", 0, {}};
  // SIGTERM is handled like SIGINT; only the exit code tells them apart (cli.md §6).
  return interrupted_exit_code(report_result(std::move(result), context, usage_hint));
}

}  // namespace tfork::cli
