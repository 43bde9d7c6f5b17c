// SPDX-License-Identifier: Apache-2.0
// `tfork serve` (cli.md §8): run the local Tigris-compatible store until SIGINT/SIGTERM.
#include "tfork/commands/serve.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/core/error.hpp"
#include "tfork/modules/modules.hpp"
#include "tfork/output/render.hpp"
#include "tfork/server/serve.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <unistd.h>
#include <utility>
#include <vector>

namespace tfork::commands {
namespace {

struct ServeCliOptions {
  std::string data;
  std::string listen = "127.0.0.1:9000";
  std::string root_access_key;
  std::optional<std::string> root_secret_key;  // refused: only to say so
  std::string root_secret_key_file;
  int latency_ms = 0;
  double fail_rate = 0.0;
  std::string durability = "normal";
  std::string quirks;
  int consistency_delay_ms = 0;
  int max_connections = 4096;
  int max_anonymous_per_peer = 1024;
  int head_timeout_seconds = 30;
  int body_timeout_seconds = 300;
  bool verify = false;
  bool allow_remote = false;
  std::string env_file;
};

// $XDG_DATA_HOME/tfork/serve, else ~/.local/share/tfork/serve.
std::filesystem::path default_data_dir(const cli::Environment& env) {
  if (const auto xdg = env("XDG_DATA_HOME")) return std::filesystem::path(*xdg) / "tfork" / "serve";
  const auto home = env("HOME");
  if (!home) usage_error("--data is required when neither XDG_DATA_HOME nor HOME is set");
  return std::filesystem::path(*home) / ".local" / "share" / "tfork" / "serve";
}

// The first line of FILE, without its line ending.
std::string read_secret_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage_error("cannot read --root-secret-key-file " + path);
  std::string secret;
  std::getline(in, secret);
  while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' '))
    secret.pop_back();
  if (secret.empty()) usage_error("--root-secret-key-file " + path + " is empty");
  return secret;
}

// HOST:PORT, with [v6]:PORT for IPv6 literals; localhost is 127.0.0.1.
void parse_listen(const std::string& text, server::ServeOptions& options) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    usage_error("--listen must be HOST:PORT, e.g. 127.0.0.1:9000 (got \"" + text + "\")");
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  const auto port_text = text.substr(colon + 1);
  int port = -1;
  try {
    std::size_t used = 0;
    port = std::stoi(port_text, &used);
    if (used != port_text.size()) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535)
    usage_error("--listen port must be 0-65535 (got \"" + port_text + "\")");
  options.host = std::move(host);
  options.port = port;
}

// Whether HOST, an IPv4 or IPv6 address, is reachable from this machine only: 127.0.0.0/8,
// ::1, or 127.x.y.z mapped into IPv6.
bool is_loopback(const std::string& host) {
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1)
    usage_error("--listen HOST must be an IP address or localhost (got \"" + host + "\")");
  const std::span<const std::uint8_t, 16> bytes(v6.s6_addr);
  const auto zeros = [&](std::size_t from, std::size_t to) {
    return std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                       bytes.begin() + static_cast<std::ptrdiff_t>(to),
                       [](std::uint8_t b) { return b == 0; });
  };
  if (zeros(0, 15) && bytes[15] == 1) return true;  // ::1
  return zeros(0, 10) && bytes[10] == 0xff && bytes[11] == 0xff &&
         bytes[12] == 127;  // ::ffff:127.x
}

server::ServeOptions to_serve_options(const ServeCliOptions& cli, const cli::Environment& env) {
  server::ServeOptions options;
  options.data_dir = cli.data.empty() ? default_data_dir(env) : std::filesystem::path(cli.data);
  parse_listen(cli.listen, options);
  if (!is_loopback(options.host)) {
    // The store answers anyone who reaches it, over plain HTTP (keys and data in clear).
    if (!cli.allow_remote) {
      usage_error("--listen " + cli.listen +
                  " is not a loopback address: other machines could reach the store, over plain "
                  "HTTP; pass --allow-remote to mean it");
    }
    spdlog::warn(
        "--listen {}: not a loopback address; other machines can reach the store, over "
        "plain HTTP",
        cli.listen);
  }
  if (cli.root_secret_key) {
    // A secret on the command line is visible to every user in ps and lands in shell history.
    usage_error(
        "--root-secret-key is refused (visible in ps): use --root-secret-key-file FILE or "
        "TFORK_ROOT_SECRET_KEY");
  }
  std::string secret;
  if (!cli.root_secret_key_file.empty()) secret = read_secret_file(cli.root_secret_key_file);
  if (cli.root_access_key.empty() != secret.empty()) {
    usage_error("--root-access-key and --root-secret-key-file must be given together");
  }
  options.root_access_key = cli.root_access_key;
  options.root_secret_key = std::move(secret);
  options.environment_root_access_key = env("TFORK_ROOT_ACCESS_KEY").value_or("");
  options.environment_root_secret_key = env("TFORK_ROOT_SECRET_KEY").value_or("");
  if (cli.latency_ms < 0) usage_error("--latency must be >= 0 milliseconds");
  options.latency_ms = cli.latency_ms;
  if (!(cli.fail_rate >= 0.0 && cli.fail_rate <= 1.0))
    usage_error("--fail-rate must be between 0 and 1");
  options.fail_rate = cli.fail_rate;
  if (cli.durability == "full")
    options.durability = store::Durability::full;
  else if (cli.durability == "normal")
    options.durability = store::Durability::normal;
  else if (cli.durability == "off")
    options.durability = store::Durability::off;
  else
    usage_error("--durability must be full, normal or off");
  auto quirks = server::parse_quirks(cli.quirks);
  if (!quirks) usage_error("--quirks: " + quirks.error());
  options.variance.quirks = std::move(*quirks);
  if (cli.consistency_delay_ms < 0) usage_error("--consistency-delay must be >= 0 milliseconds");
  options.variance.consistency_delay = std::chrono::milliseconds(cli.consistency_delay_ms);
  if (cli.max_connections < 1 || cli.max_connections > 1'000'000)
    usage_error("--max-connections must be between 1 and 1000000");
  options.max_connections = cli.max_connections;
  if (cli.max_anonymous_per_peer < 0 || cli.max_anonymous_per_peer > 1'000'000)
    usage_error("--max-anonymous-per-peer must be between 0 (no limit) and 1000000");
  options.max_anonymous_per_peer = cli.max_anonymous_per_peer;
  if (cli.head_timeout_seconds < 1 || cli.head_timeout_seconds > 3600)
    usage_error("--head-timeout must be between 1 and 3600 seconds");
  options.head_timeout_seconds = cli.head_timeout_seconds;
  if (cli.body_timeout_seconds < 1 || cli.body_timeout_seconds > 86400)
    usage_error("--body-timeout must be between 1 and 86400 seconds");
  options.body_timeout_seconds = cli.body_timeout_seconds;
  return options;
}

// What a client needs (cli.md §8, §15): the endpoint under the names the AWS tools, the Tigris
// CLI and SDKs read, and the root key under both families' names. The first three and the
// last stay where they always were: scripts read the first three, or wait for AWS_REGION.
std::vector<std::pair<std::string, std::string>> client_variables(const std::string& endpoint,
                                                                  const std::string& access_key,
                                                                  const std::string& secret_key) {
  return {{"AWS_ENDPOINT_URL", endpoint},
          {"AWS_ACCESS_KEY_ID", access_key},
          {"AWS_SECRET_ACCESS_KEY", secret_key},
          {"AWS_ENDPOINT_URL_S3", endpoint},
          {"AWS_ENDPOINT_URL_IAM", endpoint},
          {"TIGRIS_STORAGE_ENDPOINT", endpoint},
          {"TIGRIS_STORAGE_ACCESS_KEY_ID", access_key},
          {"TIGRIS_STORAGE_SECRET_ACCESS_KEY", secret_key},
          {"AWS_REGION", "auto"}};
}

// The env file holds the root secret: mode 0600 (mkstemp's), written whole to a temporary file
// in the same directory and renamed into place, so a script waiting for PATH reads either no
// file or all of it.
void write_env_file(const std::filesystem::path& path, const std::string& text) {
  std::string temp = (path.parent_path() / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) {
    throw TforkError(ErrorKind::other, "EnvFile",
                     "cannot write --env-file " + path.string() + ": " + std::strerror(errno));
  }
  std::size_t written = 0;
  while (written < text.size()) {
    const auto n = ::write(fd, text.data() + written, text.size() - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  const int error = written == text.size() ? 0 : errno;
  ::close(fd);
  if (error != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = error != 0 ? error : errno;
    ::unlink(temp.c_str());
    throw TforkError(ErrorKind::other, "EnvFile",
                     "cannot write --env-file " + path.string() + ": " + std::strerror(saved));
  }
}

cli::CommandResult run_serve(const ServeCliOptions& cli, const cli::Environment& env) {
  const auto options = to_serve_options(cli, env);
  cli::CommandResult result;
  if (cli.verify) {
    // No server to stop cleanly: Ctrl-C is a client command's (interrupted(), then the default).
    cli::install_interrupt_handler();
    // A scrub, no server: one line per bad blob, then the counts (stdout); exit 1 if any.
    // Object keys may hold control characters: printed escaped, as every table is.
    result.error = modules::serve().verify_store(options, [](const std::string& line) {
      std::printf("%s\n", output::printable(line).c_str());
      std::fflush(stdout);
    });
    return result;
  }
  const std::filesystem::path env_file = cli.env_file;
  std::error_code ignored;
  if (!env_file.empty()) {
    const auto dir = env_file.parent_path().empty() ? "." : env_file.parent_path();
    if (!std::filesystem::is_directory(dir, ignored))
      usage_error("--env-file " + cli.env_file + ": no directory " + dir.string());
    // One a server left behind (killed) would pass for this one's before it listens.
    std::filesystem::remove(env_file, ignored);
  }
  result.error = modules::serve().run_server(
      options, [&](int port, const std::string& access_key, const std::string& secret_key) {
        const auto host =
            options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
        const auto endpoint = fmt::format("http://{}:{}", host, port);
        std::string lines;
        for (const auto& [name, value] : client_variables(endpoint, access_key, secret_key))
          lines += fmt::format("export {}={}\n", name, value);
        // The lines a client needs, ready for eval (cli.md §8); stdout carries nothing else.
        std::fputs(lines.c_str(), stdout);
        std::fflush(stdout);
        if (!env_file.empty()) write_env_file(env_file, lines);
        std::fprintf(stderr, "tfork serve: listening on %s\n", endpoint.c_str());
        std::fflush(stderr);
      });
  // Stopped: the file no longer describes a server.
  if (!env_file.empty()) std::filesystem::remove(env_file, ignored);
  return result;
}

}  // namespace

void register_serve(CLI::App& root, cli::Context& context) {
  auto cli = std::make_shared<ServeCliOptions>();
  auto* command = root.add_subcommand("serve", "Run a local Tigris-compatible S3 store");
  command
      ->add_option("--data", cli->data,
                   "Data directory (default $XDG_DATA_HOME/tfork/serve or "
                   "~/.local/share/tfork/serve)")
      ->type_name("DIR");
  command
      ->add_option("--listen", cli->listen,
                   "HOST:PORT to listen on (an IP address or localhost; [::1]:PORT for IPv6); "
                   "port 0 picks a free port (default 127.0.0.1:9000)")
      ->type_name("HOST:PORT");
  command->add_flag("--allow-remote", cli->allow_remote,
                    "Let --listen name an address other machines reach (not loopback): they "
                    "reach the store over plain HTTP");
  command
      ->add_option("--env-file", cli->env_file,
                   "Once listening, write the export lines (endpoint, root key) to FILE, "
                   "mode 0600, atomically; removed when the server stops")
      ->type_name("FILE");
  command->add_option("--root-access-key", cli->root_access_key,
                      "Root access key id (else TFORK_ROOT_ACCESS_KEY, else generated once)");
  command
      ->add_option("--root-secret-key-file", cli->root_secret_key_file,
                   "File whose first line is the root secret key (else "
                   "TFORK_ROOT_SECRET_KEY, else generated once)")
      ->type_name("FILE");
  // Kept only to refuse it with a message that names the two safe ways (hidden from --help).
  command->add_option("--root-secret-key", cli->root_secret_key)->group("");
  command->add_option("--latency", cli->latency_ms, "Delay every response by MS milliseconds")
      ->type_name("MS");
  command
      ->add_option("--fail-rate", cli->fail_rate,
                   "Answer this share of requests (0-1) with 503 SlowDown")
      ->type_name("P");
  command
      ->add_option("--durability", cli->durability,
                   "full (fsync everything), normal (survives kill -9; default) or off")
      ->type_name("full|normal|off");
  command
      ->add_option("--quirks", cli->quirks,
                   "Behave like the real gateway where it differs (comma-separated): "
                   "fork-listing-ignores-header, iam-message-errors, snapshot-token-echo, "
                   "fork-conflict-409, parent-delete-400, settings-delay, snapshot-gone-400, "
                   "merge-no-version-header, snapshot-names-verbatim (default: none)")
      ->type_name("LIST");
  command
      ->add_option("--consistency-delay", cli->consistency_delay_ms,
                   "New buckets stay invisible to HeadBucket and listings, deleted ones stay "
                   "visible, for MS milliseconds (default 0)")
      ->type_name("MS");
  command
      ->add_option("--max-connections", cli->max_connections,
                   "Connections open at once; a few more are answered 503 SlowDown and closed "
                   "(default 4096)")
      ->type_name("N");
  command
      ->add_option("--max-anonymous-per-peer", cli->max_anonymous_per_peer,
                   "Connections from one address not yet authenticated and awaiting a request "
                   "head; past it the address's oldest is closed (0: no limit; default 1024)")
      ->type_name("N");
  command
      ->add_option("--head-timeout", cli->head_timeout_seconds,
                   "A request's line and headers must arrive within S seconds of the connection "
                   "opening or the previous response, else the connection is closed (default 30)")
      ->type_name("S");
  command
      ->add_option("--body-timeout", cli->body_timeout_seconds,
                   "A request's body must arrive within S seconds of its head, plus one second "
                   "per MiB it declares, else 400 RequestTimeout and the connection is closed "
                   "(default 300)")
      ->type_name("S");
  command->add_flag("--verify", cli->verify,
                    "Start no server: check every blob in --data against its SHA-256, print each "
                    "corrupt or missing one and the counts; exit 1 if any");
  // SIGINT and SIGTERM stay blocked from main() on: the server takes them with sigwait.
  command->parse_complete_callback([&context] { context.takes_signals = true; });
  cli::describe(
      *command, 0,
      {"tfork serve --data ./store --env-file tfork.env &", "tfork serve --data ./store --verify"});
  cli::on_run(*command, context, [cli, &context] { return run_serve(*cli, context.env()); });
}

}  // namespace tfork::commands
