// SPDX-License-Identifier: Apache-2.0
#include "tfork/cli/context.hpp"

#include "tfork/core/ascii.hpp"
#include "tfork/core/error.hpp"
#include "tfork/modules/modules.hpp"
#include "tfork/version.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

namespace tfork::cli {

std::atomic<bool>& interrupted() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
std::atomic<int> g_signal{0};

extern "C" void on_interrupt(int signal) {
  g_signal.store(signal);
  interrupted().store(true);
  // A second Ctrl-C (or SIGTERM) stops at once.
  std::signal(signal, SIG_DFL);
}

sigset_t interrupt_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}
}  // namespace

void block_interrupts() {
  const auto signals = interrupt_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

// SIGTERM is handled exactly like SIGINT (CI cancels with SIGTERM, cli.md §5): in-flight
// requests end, the manifest is complete, and the exit code says which signal it was.
void install_interrupt_handler() {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  // One that arrived since main() blocked them is delivered now.
  const auto signals = interrupt_signals();
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
}

int interrupted_exit_code(int code) {
  if (code == 130 && g_signal.load() == SIGTERM) return 143;
  return code;
}

http::Options transport_options(const GlobalOptions& options, const Config& config) {
  http::Options transport;
  transport.connect_timeout =
      std::chrono::milliseconds(static_cast<long>(options.connect_timeout * 1000));
  transport.read_timeout =
      std::chrono::milliseconds(static_cast<long>(options.read_timeout * 1000));
  transport.retry.max_attempts = config.max_attempts;
  transport.ca_bundle = config.ca_bundle;
  transport.verify_tls = !options.no_verify_ssl;
  transport.user_agent = std::string("tfork/") + k_version;
  transport.debug = options.debug;
  transport.verbosity = options.verbose;
  transport.cancel = &interrupted();
  return transport;
}

Context::Context(Environment env) : env_(std::move(env)) {}
Context::~Context() = default;

const Config& Context::config() {
  if (!config_) {
    auto overrides = options.config;
    if (options.path_style) overrides.path_style = true;
    if (options.virtual_hosted) overrides.path_style = false;
    auto config = resolve_config(overrides, env_);
    if (options.virtual_hosted) {
      // Virtual hosting makes each bucket a host name (bucket.HOST): an IP address has no
      // such names, and localhost's are not served as buckets (tfork serve is path-style).
      auto host = std::string_view(config.endpoint);
      if (const auto scheme = host.find("://"); scheme != std::string_view::npos)
        host.remove_prefix(scheme + 3);
      host = host.substr(0, host.starts_with('[') ? host.find(']') + 1 : host.find_first_of(":/"));
      const bool numeric = !host.empty() && (host.front() == '[' ||
                                             host.find_first_not_of("0123456789.") == host.npos);
      if (numeric || host == "localhost" || host.ends_with(".localhost"))
        usage_error(fmt::format(
            "--virtual-hosted needs an endpoint with a DNS name (buckets become bucket.HOST), "
            "and {} is {}: leave --virtual-hosted out (path-style is the default here)",
            config.endpoint, numeric ? "an IP address" : "localhost"));
    }
    config_ = std::move(config);
  }
  return *config_;
}

tigris::Client& Context::client() {
  if (!client_) {
    const auto& cfg = config();
    auto credentials = resolve_credentials(options.config, env_);
    transport_.reset(modules::curl().make_transport(transport_options(options, cfg)));
    client_ = std::make_unique<tigris::Client>(
        tigris::ClientSettings{cfg.endpoint, cfg.iam_endpoint, cfg.region, cfg.path_style,
                               std::move(credentials.credentials)},
        *transport_);
  }
  return *client_;
}

std::optional<std::string> Context::access_key_in_use() const {
  if (!client_) return std::nullopt;
  return client_->settings().credentials.access_key_id;
}

std::string Context::identity_hint() const {
  if (!client_) return {};
  const auto& settings = client_->settings();
  return "sent to " + settings.endpoint + " (IAM " + settings.iam_endpoint + ") with access key " +
         settings.credentials.access_key_id;
}

output::Format Context::format() const {
  if (options.json) return output::Format::json;
  auto value = options.output;
  if (value.empty()) value = env_("TFORK_OUTPUT").value_or("table");
  if (value == "json") return output::Format::json;
  if (value == "table") return output::Format::table;
  usage_error("--output / TFORK_OUTPUT must be 'json' or 'table', got '" + value + "'");
}

output::ProgressMode Context::progress_mode() const {
  if (options.progress == "json") return output::ProgressMode::json;
  if (options.quiet || options.no_progress || options.progress == "none")
    return output::ProgressMode::none;
  if (options.progress == "plain" || ::isatty(STDERR_FILENO) != 1)
    return output::ProgressMode::plain;
  return output::ProgressMode::terminal;
}

bool Context::progress_for_people() const {
  const auto mode = progress_mode();
  return mode == output::ProgressMode::terminal || mode == output::ProgressMode::plain;
}

output::ProgressSink* Context::progress() {
  if (!progress_made_) {
    progress_ = output::make_progress_sink(progress_mode(), stderr);
    progress_made_ = true;
  }
  return progress_.get();
}

void Context::end_progress() {
  if (progress_) progress_->close();
}

workflow::BatchSettings Context::batch_settings() {
  return {static_cast<std::size_t>(options.concurrency), &interrupted(), progress()};
}

namespace {

std::string form_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() &&
               std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// A request body as --dry-run shows it: a JSON body as is; a form body (IAM) as its fields,
// a field holding a JSON document (Tigris's Req) as that document; null otherwise.
output::Json readable_body(std::string_view body) {
  if (body.empty()) return nullptr;
  auto json = output::Json::parse(body, nullptr, false);
  if (!json.is_discarded()) return json;
  output::Json fields = output::Json::object();
  std::size_t start = 0;
  while (start <= body.size()) {
    const auto end = std::min(body.find('&', start), body.size());
    const auto pair = body.substr(start, end - start);
    const auto equals = pair.find('=');
    if (equals == std::string_view::npos) return nullptr;  // not a form
    const auto value = form_decode(pair.substr(equals + 1));
    auto nested = output::Json::parse(value, nullptr, false);
    if (nested.is_object()) return nested;
    fields[form_decode(pair.substr(0, equals))] = value;
    start = end + 1;
  }
  return fields;
}

// What the table shows under a request of --dry-run: the Tigris headers that decide what it
// does (fork source and snapshot version, force delete, snapshot name...) and, for a key, its
// name, role and bucket.
std::vector<std::string> dry_run_details(const tigris::Operation& operation,
                                         const output::Json& body) {
  std::vector<std::string> lines;
  for (const auto& [name, value] : operation.headers) {
    const auto lower = ascii::lower(name);
    if (lower.starts_with("x-tigris-") || lower.starts_with("tigris-"))
      lines.push_back(name + ": " + output::printable(value));
  }
  if (!body.is_object()) return lines;
  if (const auto key = body.find("name"); key != body.end() && key->is_string())
    lines.push_back("key name: " + output::printable(key->get<std::string>()));
  if (const auto roles = body.find("buckets_role"); roles != body.end() && roles->is_array()) {
    for (const auto& role : *roles) {
      if (!role.is_object()) continue;
      lines.push_back("role " + output::printable(role.value("role", "")) + " on bucket " +
                      output::printable(role.value("bucket", "")) + " only");
    }
  }
  return lines;
}

}  // namespace

void Context::confirm(const std::string& question) const {
  if (options.yes) return;
  if (::isatty(STDIN_FILENO) != 1 || ::isatty(STDERR_FILENO) != 1)
    throw TforkError(ErrorKind::usage, "UsageError",
                     question + ": not on a terminal, so pass --yes to confirm");
  std::cerr << question << " [y/N] " << std::flush;
  // Read by hand rather than through std::cin: a read restarts after SIGINT, a poll does not,
  // so Ctrl-C at the question ends tfork at once (exit 130) instead of waiting for a line.
  std::string answer;
  for (;;) {
    if (interrupted())
      throw TforkError(ErrorKind::interrupted, "Interrupted",
                       "interrupted at the question; nothing was changed");
    pollfd ready{STDIN_FILENO, POLLIN, 0};
    if (::poll(&ready, 1, 250) <= 0) continue;  // a signal (EINTR), or the 250 ms backstop
    char c = 0;
    const auto n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;  // end of input is no
    answer += c;
  }
  if (answer != "y" && answer != "Y" && answer != "yes")
    throw TforkError(ErrorKind::other, "NotConfirmed", "not confirmed; nothing was changed");
}

CommandResult Context::dry_run(std::span<const tigris::Operation> operations) {
  // Signing needs no secret to be shown, but it does need credentials to be resolvable
  // for the signature to be real; a dry run must work without any, so sign with a
  // placeholder when none are configured.
  const auto& cfg = config();
  sigv4::Credentials credentials{"DRYRUNACCESSKEY", "dry-run-secret", ""};
  try {
    credentials = resolve_credentials(options.config, env_).credentials;
  } catch (const TforkError&) {
  }
  // Preparing requests needs no network: a transport that never sends.
  class NoNetwork final : public http::Transport {
   public:
    void send_batch(http::Batch& batch, std::size_t) override {
      while (const auto ready = batch.next())
        batch.done(ready->id,
                   std::unexpected(http::TransportError{http::TransportError::Kind::other,
                                                        "--dry-run sends nothing", 0}));
    }
  } no_network;
  tigris::Client client({cfg.endpoint, cfg.iam_endpoint, cfg.region, cfg.path_style, credentials},
                        no_network);
  output::Json requests = output::Json::array();
  std::string text;
  for (const auto& operation : operations) {
    const auto request = client.prepare(operation);
    output::Json headers = output::Json::object();
    for (const auto& [name, value] : request.headers)
      headers[name] = http::redact_header_value(name, value);
    output::Json entry{{"operation", operation.name},
                       {"method", request.method},
                       {"url", request.url},
                       {"headers", headers}};
    // An IAM request's body says which key it makes (name, role, bucket): no secret.
    const auto body = readable_body(operation.body);
    if (body.is_object()) entry["body"] = body;
    requests.push_back(std::move(entry));
    text += operation.name + "  " + request.method + " " + request.url + "\n";
    for (const auto& line : dry_run_details(operation, body))
      text += "    " + line + "\n";
  }
  return document(output::Json{{"dry_run", true}, {"requests", requests}}, std::move(text));
}

}  // namespace tfork::cli
