// SPDX-License-Identifier: Apache-2.0
// `tfork mcp` (cli.md §13): the MCP server, and `mcp config` / `mcp install`, which put it into
// a coding agent's configuration. The server lives in tfork/mcp/; this file parses options,
// checks them before anything starts, and runs the transport asked for.
#include "tfork/commands/mcp.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/core/error.hpp"
#include "tfork/mcp/client_config.hpp"
#include "tfork/mcp/http_front.hpp"
#include "tfork/mcp/log_forwarding.hpp"
#include "tfork/mcp/session.hpp"
#include "tfork/mcp/stdio.hpp"
#include "tfork/mcp/toolbox.hpp"
#include "tfork/mcp/workspace.hpp"
#include "tfork/modules/modules.hpp"
#include "tfork/version.hpp"
#include "tfork/workflow/agent_env.hpp"
#include "tfork/workflow/manifest.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>
#include <unistd.h>

namespace tfork::commands {
namespace {

constexpr std::int64_t k_max_inline_limit = 8 << 20;

// Options that say what the server reaches; `mcp config` and `mcp install` take them too.
struct ModeOptions {
  std::vector<std::string> sources;
  std::string manifest;
  std::string fork;
  bool read_only = false;
  std::int64_t max_inline_bytes = 1 << 20;
  std::string manifest_dir;
};

struct ServerOptions {
  ModeOptions mode;
  std::string listen;
  std::string token_file;
  bool allow_remote = false;
  std::vector<std::string> allowed_origins;
};

void add_mode_options(CLI::App& command, ModeOptions& options) {
  const char* group = "Mode";
  command
      .add_option("--source", options.sources,
                  "Operator mode: the bucket(s) whose forks the server may make and manage "
                  "(repeatable)")
      ->type_name("BUCKET")
      ->group(group);
  command.add_option("--manifest", options.manifest, "Agent mode: the manifest of fork create")
      ->type_name("FILE")
      ->group(group);
  command
      .add_option("--fork", options.fork,
                  "Agent mode: the fork (1-based index or name) whose own key the server uses")
      ->group(group);
  command.add_flag("--read-only", options.read_only, "Leave out every tool that changes anything")
      ->group(group);
  command
      .add_option("--max-inline-bytes", options.max_inline_bytes,
                  "object_get returns bodies up to this inline, a presigned URL beyond "
                  "(default 1048576)")
      ->check(cli::whole_number("--max-inline-bytes", 1, k_max_inline_limit))
      ->group(group);
  command
      .add_option("--manifest-dir", options.manifest_dir,
                  "Operator mode: where fork_create writes its manifests (default: the current "
                  "directory, as fork create)")
      ->type_name("PATH")
      ->group(group);
}

// The server's reach, checked before it starts (exit 64 for a bad one, 3 for a fork the
// manifest does not have).
mcp::ServerConfig server_config(const ModeOptions& options, cli::Context& context) {
  mcp::ServerConfig config;
  const bool agent = !options.manifest.empty() || !options.fork.empty();
  if (agent == !options.sources.empty())
    usage_error(
        "say what the server reaches: --source S (operator mode) or --manifest M --fork F "
        "(agent mode), one of them");
  if (agent) {
    if (options.manifest.empty() || options.fork.empty())
      usage_error("agent mode needs both --manifest M and --fork F");
    if (!options.manifest_dir.empty()) usage_error("--manifest-dir goes with operator mode");
    // The fork must have a usable key now; each call reads the manifest again.
    const auto env = workflow::agent_env(workflow::read_manifest(options.manifest), options.fork);
    config.mode = mcp::AgentMode{std::filesystem::absolute(options.manifest), options.fork};
    spdlog::info("tfork mcp: agent mode, fork {}", env.bucket);
  } else {
    std::vector<std::string> sources;
    for (const auto& source : options.sources) {
      cli::require_bucket_name(source, "source bucket");
      if (std::ranges::find(sources, source) == sources.end()) sources.push_back(source);
    }
    const auto dir = options.manifest_dir.empty() ? std::filesystem::current_path()
                                                  : std::filesystem::absolute(options.manifest_dir);
    if (!std::filesystem::is_directory(dir))
      usage_error("--manifest-dir " + dir.string() + " is not a directory");
    config.mode = mcp::OperatorMode{std::move(sources), dir};
  }
  config.read_only = options.read_only;
  config.max_inline_bytes = options.max_inline_bytes;
  config.global = context.options;
  config.environment = context.env();
  return config;
}

mcp::SessionSettings session_settings(const mcp::ServerConfig& config) {
  mcp::SessionSettings settings;
  settings.server_version = k_version;
  settings.instructions = mcp::server_instructions(config);
  return settings;
}

// $XDG_CONFIG_HOME/tfork/mcp-token, else ~/.config/tfork/mcp-token.
std::string default_token_file(const cli::Environment& env) {
  if (const auto xdg = env("XDG_CONFIG_HOME")) return *xdg + "/tfork/mcp-token";
  const auto home = env("HOME");
  if (!home) usage_error("--token-file is required when neither XDG_CONFIG_HOME nor HOME is set");
  return *home + "/.config/tfork/mcp-token";
}

bool loopback_host(std::string_view host) {
  return host == "127.0.0.1" || host.starts_with("127.") || host == "::1";
}

cli::CommandResult serve_http(const ServerOptions& options, const mcp::ServerConfig& config,
                              cli::Context& context) {
  mcp::ListenOptions listen;
  const auto colon = options.listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == options.listen.size())
    usage_error("--listen must be HOST:PORT, e.g. 127.0.0.1:8765 (got \"" + options.listen + "\")");
  listen.host = options.listen.substr(0, colon);
  if (listen.host.size() > 2 && listen.host.front() == '[' && listen.host.back() == ']')
    listen.host = listen.host.substr(1, listen.host.size() - 2);
  if (listen.host == "localhost") listen.host = "127.0.0.1";
  const auto port_text = options.listen.substr(colon + 1);
  if (!std::ranges::all_of(port_text, [](char c) { return c >= '0' && c <= '9'; }) ||
      port_text.size() > 5 || std::stoi(port_text) > 65535)
    usage_error("--listen needs a port from 0 to 65535 (got \"" + port_text + "\")");
  listen.port = std::stoi(port_text);
  const bool loopback = loopback_host(listen.host);
  if (!loopback && !options.allow_remote)
    usage_error("--listen " + options.listen +
                " is not a loopback address: anyone who reaches it could use your credentials; "
                "pass --allow-remote to mean it");
  const auto token_path =
      options.token_file.empty() ? default_token_file(context.env()) : options.token_file;
  bool created = false;
  const auto token = mcp::load_or_create_token(token_path, created);
  std::cerr << "tfork mcp: bearer token " << (created ? "written to " : "in ") << token_path
            << " (send it as Authorization: Bearer <token>)" << std::endl;

  mcp::WorkerPool workers(8, 1024, 64u << 20);
  const auto settings = session_settings(config);
  const auto tools = mcp::make_tools(config);
  std::unique_ptr<mcp::HttpFront> front;
  auto handler = [&front](const mcp::HttpRequest& request) { return front->handle(request); };
  const auto& module = modules::mcp_http();
  auto error = module.listen(listen, handler, cli::interrupted(), [&](int port) {
    mcp::HttpFrontSettings front_settings{token, port, loopback, options.allowed_origins};
    front = std::make_unique<mcp::HttpFront>(
        std::move(front_settings),
        [&] { return std::make_unique<mcp::Session>(tools, workers, settings); },
        cli::interrupted());
    std::cerr << "tfork mcp: listening on http://"
              << (listen.host.find(':') != std::string::npos ? "[" + listen.host + "]"
                                                             : listen.host)
              << ":" << port << "/mcp" << std::endl;
  });
  if (front) front->close_all();
  cli::CommandResult result;
  if (error) result.error = std::move(*error);
  // SIGINT/SIGTERM is how this server is meant to stop: a clean stop, as `tfork serve`'s.
  cli::interrupted().store(false);
  return result;
}

cli::CommandResult run_server(const ServerOptions& options, cli::Context& context) {
  const auto config = server_config(options.mode, context);
  if (options.listen.empty() &&
      (!options.token_file.empty() || options.allow_remote || !options.allowed_origins.empty()))
    usage_error("--token-file, --allow-remote and --allow-origin go with --listen");
  // A client that goes away closes the pipe: writes fail instead of killing the server.
  std::signal(SIGPIPE, SIG_IGN);
  mcp::install_log_forwarding();
  if (!options.listen.empty()) return serve_http(options, config, context);
  mcp::WorkerPool workers(8, 1024, 64u << 20);
  mcp::Session session(mcp::make_tools(config), workers, session_settings(config));
  const auto end = mcp::serve_stdio(session, STDIN_FILENO, STDOUT_FILENO, cli::interrupted());
  if (end == mcp::StdioEnd::output_closed) spdlog::info("tfork mcp: the client closed stdout");
  // EOF on stdin is the client ending the session: exit 0 (interrupted() decides otherwise).
  return cli::CommandResult{};
}

// The command line that starts this server as the client will: this executable, absolutely.
mcp::ServerCommand server_command(const ModeOptions& options, cli::Context& context) {
  server_config(options, context);  // the same checks as a start
  mcp::ServerCommand server;
  std::error_code error;
  auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  server.command = error ? std::string("tfork") : self.string();
  server.args = {"mcp"};
  for (const auto& source : options.sources) {
    server.args.push_back("--source");
    server.args.push_back(source);
  }
  if (!options.manifest.empty()) {
    server.args.push_back("--manifest");
    server.args.push_back(std::filesystem::absolute(options.manifest).string());
    server.args.push_back("--fork");
    server.args.push_back(options.fork);
  }
  if (!options.manifest_dir.empty()) {
    server.args.push_back("--manifest-dir");
    server.args.push_back(std::filesystem::absolute(options.manifest_dir).string());
  }
  if (options.read_only) server.args.push_back("--read-only");
  if (options.max_inline_bytes != (1 << 20)) {
    server.args.push_back("--max-inline-bytes");
    server.args.push_back(std::to_string(options.max_inline_bytes));
  }
  // The global options the server needs to reach the same service.
  const auto& global = context.options.config;
  const std::pair<const char*, const std::string*> passed[] = {
      {"--endpoint-url", &global.endpoint_url},
      {"--iam-endpoint-url", &global.iam_endpoint_url},
      {"--profile", &global.profile},
      {"--region", &global.region}};
  for (const auto& [flag, value] : passed) {
    if (value->empty()) continue;
    server.args.push_back(flag);
    server.args.push_back(*value);
  }
  return server;
}

mcp::ClientApp client_of(const std::string& name) {
  if (auto client = mcp::parse_client(name)) return *client;
  std::string names;
  for (const auto& known : mcp::client_names())
    names += (names.empty() ? "" : ", ") + std::string(known);
  usage_error("unknown client '" + name + "': one of " + names);
}

void add_client_argument(CLI::App& command, std::string& client) {
  command
      .add_option("CLIENT", client,
                  "The coding agent: claude-code, cursor, vscode, codex or gemini")
      ->transform(cli::one_of("CLIENT", {"claude-code", "cursor", "vscode", "codex", "gemini"}))
      ->required();
}

void add_config(CLI::App& mcp, cli::Context& context) {
  struct Options {
    std::string client;
    ModeOptions mode;
  };
  auto options = std::make_shared<Options>();
  auto* command = mcp.add_subcommand(
      "config", "Print the entry that starts tfork mcp, in the form CLIENT's configuration takes");
  add_client_argument(*command, options->client);
  add_mode_options(*command, options->mode);
  cli::describe(*command, 0, {"tfork mcp config claude-code --source training-data"});
  cli::on_run(*command, context, [options, &context] {
    const auto client = client_of(options->client);
    cli::CommandResult result;
    result.text = mcp::config_snippet(client, server_command(options->mode, context));
    return result;
  });
}

void add_install(CLI::App& mcp, cli::Context& context) {
  struct Options {
    std::string client;
    std::string config_path;
    ModeOptions mode;
  };
  auto options = std::make_shared<Options>();
  auto* command = mcp.add_subcommand(
      "install", "Add tfork mcp to CLIENT's configuration (a backup first, other servers kept)");
  add_client_argument(*command, options->client);
  command
      ->add_option("--config-path", options->config_path,
                   "The file to change (default: the client's own, see man tfork)")
      ->type_name("FILE");
  add_mode_options(*command, options->mode);
  cli::describe(*command, 0, {"tfork mcp install cursor --source training-data"});
  cli::on_run(*command, context, [options, &context] {
    const auto client = client_of(options->client);
    const auto server = server_command(options->mode, context);
    const auto file =
        options->config_path.empty()
            ? mcp::default_config_path(client, context.env(), std::filesystem::current_path())
            : std::filesystem::path(options->config_path);
    const auto outcome = mcp::install_config(client, server, file);
    output::Json document{
        {"client", options->client},
        {"file", outcome.file.string()},
        {"changed", outcome.changed},
        {"backup", outcome.backup ? output::Json(outcome.backup->string()) : output::Json()}};
    std::string text = outcome.changed ? fmt::format("added tfork to {}", outcome.file.string())
                                       : fmt::format(
                                             "{} already has this tfork entry; nothing "
                                             "changed",
                                             outcome.file.string());
    if (outcome.backup) text += fmt::format(" (the previous file is {})", outcome.backup->string());
    return cli::document(std::move(document), text + "\n");
  });
}

}  // namespace

void register_mcp(CLI::App& root, cli::Context& context) {
  auto options = std::make_shared<ServerOptions>();
  auto* mcp = root.add_subcommand(
      "mcp", "Run an MCP server that lets agents make, use and remove forks (stdio, or HTTP)");
  mcp->footer(
      "Operator mode (--source S...): snapshot, fork, diff, merge and tear down forks of the\n"
      "sources, and read and write objects of their forks; the sources are only ever written by\n"
      "a fork_merge with confirm: true. Agent mode (--manifest M --fork F): one fork, with the\n"
      "fork's own key, and nothing else. Messages on stdin/stdout (newline-delimited JSON-RPC),\n"
      "logs on stderr; EOF ends it (exit 0). --listen serves MCP's Streamable HTTP on /mcp\n"
      "instead, with a bearer token (--token-file, made 0600 when missing).\n"
      "  tfork mcp config claude-code --source training-data   # print the client's entry\n"
      "  tfork mcp install cursor --source training-data       # merge it into its file\n\n" +
      mcp->get_footer());
  add_mode_options(*mcp, options->mode);
  const char* group = "HTTP";
  mcp->add_option("--listen", options->listen,
                  "Serve Streamable HTTP on HOST:PORT (loopback; port 0 picks one) instead of "
                  "stdio")
      ->type_name("HOST:PORT")
      ->group(group);
  mcp->add_option("--token-file", options->token_file,
                  "The bearer token clients must send (default ~/.config/tfork/mcp-token, made "
                  "0600 when missing)")
      ->type_name("FILE")
      ->group(group);
  mcp->add_flag("--allow-remote", options->allow_remote,
                "Allow --listen on an address that is not loopback")
      ->group(group);
  mcp->add_option("--allow-origin", options->allowed_origins,
                  "Also accept requests with this Origin (repeatable; default: this server's own)")
      ->group(group);
  cli::describe(
      *mcp, cli::honours::service,
      {"tfork mcp --source training-data", "tfork mcp --manifest run.json --fork 2 --read-only"});
  add_config(*mcp, context);
  add_install(*mcp, context);
  // The server runs only when no subcommand (config, install) was given.
  mcp->callback([mcp, options, &context] {
    if (!mcp->get_subcommands().empty()) return;
    context.selected_command = [options, &context] { return run_server(*options, context); };
  });
}

}  // namespace tfork::commands
