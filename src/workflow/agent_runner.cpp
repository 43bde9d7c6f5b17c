// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/agent_runner.hpp"

#include "tfork/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tfork::workflow {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t k_max_line = 64 * 1024;
// How long one poll waits at most: the loop also has deadlines and signals to look at.
constexpr int k_poll_ms = 50;

// One output stream of a running agent (stdout or stderr) and its unfinished line.
struct Stream {
  int fd = -1;
  std::string pending;
};

struct Running {
  std::size_t slot = 0;  // index into the agents and results
  pid_t pid = -1;
  SteadyClock::time_point started;
  std::optional<SteadyClock::time_point> kill_at;  // SIGKILL due (after a timeout's SIGTERM)
  Stream out;
  Stream err;
};

void write_line(std::ostream& sink, const std::string& bucket, std::string_view line) {
  sink << '[' << bucket << "] " << line << '\n';
  sink.flush();
}

// Emits every complete line of `stream.pending`, and the rest too when `final`.
void emit_lines(Stream& stream, const std::string& bucket, std::ostream& sink, bool final) {
  std::size_t start = 0;
  while (true) {
    const auto newline = stream.pending.find('\n', start);
    if (newline == std::string::npos) break;
    write_line(sink, bucket, std::string_view(stream.pending).substr(start, newline - start));
    start = newline + 1;
  }
  stream.pending.erase(0, start);
  while (stream.pending.size() >= k_max_line) {
    write_line(sink, bucket, std::string_view(stream.pending).substr(0, k_max_line));
    stream.pending.erase(0, k_max_line);
  }
  if (final && !stream.pending.empty()) {
    write_line(sink, bucket, stream.pending);
    stream.pending.clear();
  }
}

// Reads what is available now; closes the stream at end of file. Non-blocking fds.
void drain(Stream& stream, const std::string& bucket, std::ostream& sink) {
  if (stream.fd < 0) return;
  char buffer[16384];
  while (true) {
    const auto n = ::read(stream.fd, buffer, sizeof buffer);
    if (n > 0) {
      stream.pending.append(buffer, static_cast<std::size_t>(n));
      emit_lines(stream, bucket, sink, false);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ::close(stream.fd);  // end of file or a read error
    stream.fd = -1;
    emit_lines(stream, bucket, sink, true);
    return;
  }
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Starts one agent. Everything the child needs is prepared before fork(): between fork and
// exec it only calls async-signal-safe functions.
Running start(const AgentSpec& spec, std::size_t slot, const ExecOptions& options,
              const std::vector<std::string>& base, AgentResult& result) {
  auto argv_strings = spec.argv;
  auto env_strings = process_environment(spec.env, base);
  auto argv = c_strings(argv_strings);
  auto envp = c_strings(env_strings);
  const std::string cannot_run =
      fmt::format("tfork: cannot run {}: ", spec.argv.empty() ? "" : spec.argv.front());

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int log_fd = -1;
  if (options.logs_dir) {
    const auto path = *options.logs_dir / (spec.env.bucket + ".log");
    log_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (log_fd < 0)
      throw TforkError(ErrorKind::other, "LogFile",
                       fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  } else if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw TforkError(ErrorKind::other, "Pipe", std::string("pipe: ") + std::strerror(errno));
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int saved = errno;
    for (const int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], log_fd, null_fd})
      if (fd >= 0) ::close(fd);
    throw TforkError(ErrorKind::other, "Fork", std::string("fork: ") + std::strerror(saved));
  }
  if (pid == 0) {
    // Its own process group: tfork decides which signals reach it (cli.md §11).
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const int sig : {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP})
      ::signal(sig, SIG_DFL);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd >= 0 ? log_fd : out_pipe[1], STDOUT_FILENO);
    ::dup2(log_fd >= 0 ? log_fd : err_pipe[1], STDERR_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int saved = errno;
    [[maybe_unused]] auto w1 = ::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
    const char* reason = std::strerror(saved);
    [[maybe_unused]] auto w2 = ::write(STDERR_FILENO, reason, std::strlen(reason));
    [[maybe_unused]] auto w3 = ::write(STDERR_FILENO, "\n", 1);
    ::_exit(saved == ENOENT ? 127 : 126);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before a kill
  for (const int fd : {out_pipe[1], err_pipe[1], log_fd, null_fd})
    if (fd >= 0) ::close(fd);
  Running running;
  running.slot = slot;
  running.pid = pid;
  running.started = SteadyClock::now();
  running.out.fd = out_pipe[0];
  running.err.fd = err_pipe[0];
  for (const int fd : {running.out.fd, running.err.fd})
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  result.started = true;
  return running;
}

}  // namespace

std::vector<std::string> substitute(const std::vector<std::string>& argv, const AgentEnv& env) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  const std::string index = std::to_string(env.index);
  for (const auto& arg : argv) {
    std::string replaced;
    for (std::size_t i = 0; i < arg.size();) {
      if (arg.compare(i, 8, "{bucket}") == 0) {
        replaced += env.bucket;
        i += 8;
      } else if (arg.compare(i, 7, "{index}") == 0) {
        replaced += index;
        i += 7;
      } else {
        replaced += arg[i++];
      }
    }
    out.push_back(std::move(replaced));
  }
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; entry && *entry; ++entry)
    out.emplace_back(*entry);
  return out;
}

ExecOutcome run_agents(const std::vector<AgentSpec>& agents, const ExecOptions& options,
                       const std::vector<std::string>& base_environment,
                       const std::function<StopRequests()>& stop_requests, std::ostream& lines) {
  ExecOutcome outcome;
  for (const auto& agent : agents) {
    AgentResult result;
    result.bucket = agent.env.bucket;
    result.index = agent.env.index;
    outcome.agents.push_back(std::move(result));
  }
  if (options.logs_dir) std::filesystem::create_directories(*options.logs_dir);
  const std::size_t width = options.parallel == 0 ? agents.size() : options.parallel;

  std::vector<Running> running;
  std::size_t next = 0;
  bool killed_all = false;
  while (true) {
    // Signals first: once interrupted, nothing new starts.
    if (const auto stop = stop_requests ? stop_requests() : StopRequests{}; stop.count > 0) {
      if (outcome.interrupted_by == 0) {
        outcome.interrupted_by = stop.signal;
        for (const auto& agent : running)
          ::kill(-agent.pid, stop.signal);
      }
      if (stop.count > 1 && !killed_all) {
        killed_all = true;  // asked twice: no more waiting for agents that ignore the first
        for (const auto& agent : running)
          ::kill(-agent.pid, SIGKILL);
      }
    }
    while (outcome.interrupted_by == 0 && next < agents.size() && running.size() < width) {
      try {
        running.push_back(
            start(agents[next], next, options, base_environment, outcome.agents[next]));
      } catch (const TforkError& e) {
        outcome.agents[next].error = e.error().message;
      }
      ++next;
    }
    if (running.empty()) break;

    std::vector<pollfd> fds;
    for (const auto& agent : running) {
      for (const auto* stream : {&agent.out, &agent.err})
        if (stream->fd >= 0) fds.push_back(pollfd{stream->fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), k_poll_ms);
    for (auto& agent : running) {
      drain(agent.out, agents[agent.slot].env.bucket, lines);
      drain(agent.err, agents[agent.slot].env.bucket, lines);
    }

    const auto now = SteadyClock::now();
    for (auto it = running.begin(); it != running.end();) {
      auto& agent = *it;
      auto& result = outcome.agents[agent.slot];
      if (options.timeout && !result.timed_out && now - agent.started >= *options.timeout) {
        result.timed_out = true;
        ::kill(-agent.pid, SIGTERM);
        agent.kill_at = now + options.kill_after;
      }
      if (agent.kill_at && now >= *agent.kill_at) {
        ::kill(-agent.pid, SIGKILL);
        agent.kill_at.reset();
      }
      int status = 0;
      const pid_t done = ::waitpid(agent.pid, &status, WNOHANG);
      if (done != agent.pid) {
        ++it;
        continue;
      }
      // What it wrote before it ended is in the pipes; a child it left behind may keep them
      // open, so read what is there and stop listening.
      for (auto* stream : {&agent.out, &agent.err}) {
        drain(*stream, result.bucket, lines);
        if (stream->fd >= 0) {
          ::close(stream->fd);
          stream->fd = -1;
          emit_lines(*stream, result.bucket, lines, true);
        }
      }
      // The agent's own children are not waited for, but they must not outlive it unnoticed
      // after a timeout or an interrupt.
      if (result.timed_out || outcome.interrupted_by != 0) ::kill(-agent.pid, SIGKILL);
      result.seconds = std::chrono::duration<double>(SteadyClock::now() - agent.started).count();
      if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
      it = running.erase(it);
    }
  }
  return outcome;
}

}  // namespace tfork::workflow

namespace tfork::workflow {
namespace {

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGKILL:
      return "SIGKILL";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGABRT:
      return "SIGABRT";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return "SIG" + std::to_string(sig);
  }
}

}  // namespace

std::vector<AgentSpec> plan_agents(const Manifest& manifest,
                                   const std::vector<std::string>& selectors,
                                   const std::vector<std::string>& command) {
  std::vector<AgentEnv> envs;
  if (selectors.empty()) {
    envs = agent_envs(manifest);
    if (envs.empty())
      throw TforkError(ErrorKind::not_found, "NoSuchFork",
                       "the manifest has no live fork with an access key to run an agent in");
  } else {
    for (const auto& selector : selectors) {
      auto env = agent_env(manifest, selector);
      const bool twice = std::ranges::any_of(
          envs, [&](const AgentEnv& other) { return other.bucket == env.bucket; });
      if (!twice) envs.push_back(std::move(env));
    }
    std::ranges::sort(envs, {}, &AgentEnv::index);
  }
  std::vector<AgentSpec> specs;
  for (auto& env : envs) {
    auto argv = substitute(command, env);
    specs.push_back(AgentSpec{std::move(env), std::move(argv)});
  }
  return specs;
}

output::Json agents_json(const ExecOutcome& outcome) {
  output::Json agents = output::Json::array();
  for (const auto& agent : outcome.agents) {
    output::Json item{
        {"bucket", agent.bucket},
        {"index", agent.index},
        {"exit_code", agent.exit_code ? output::Json(*agent.exit_code) : output::Json()},
        {"signal", agent.signal ? output::Json(signal_name(*agent.signal)) : output::Json()},
        {"seconds", std::round(agent.seconds * 1000) / 1000},
        {"started", agent.started},
        {"timed_out", agent.timed_out}};
    if (!agent.error.empty()) item["error"] = agent.error;
    agents.push_back(std::move(item));
  }
  return agents;
}

std::string agents_table(const ExecOutcome& outcome) {
  output::Table table({"FORK", "INDEX", "EXIT", "SIGNAL", "SECONDS"});
  for (const auto& agent : outcome.agents) {
    std::string exit = agent.exit_code ? std::to_string(*agent.exit_code) : "-";
    if (!agent.started) exit = "not started";
    std::string signal = agent.signal ? signal_name(*agent.signal) : "-";
    if (agent.timed_out) signal += " (timeout)";
    table.row({agent.bucket, std::to_string(agent.index), exit, signal,
               agent.started ? fmt::format("{:.1f}", agent.seconds) : "-"});
  }
  return table.render();
}

void record_agents(Manifest& manifest, const ExecOutcome& outcome) {
  for (const auto& agent : outcome.agents) {
    if (!agent.started) continue;
    for (auto& fork : manifest.forks) {
      if (fork.bucket != agent.bucket) continue;
      AgentRecord record;
      record.exit_code = agent.exit_code;
      if (agent.signal) record.signal = signal_name(*agent.signal);
      record.seconds = std::round(agent.seconds * 1000) / 1000;
      fork.agent = record;
    }
  }
}

std::optional<Error> exec_error(const ExecOutcome& outcome) {
  if (outcome.interrupted_by == SIGTERM)
    return Error{ErrorKind::terminated,
                 "Terminated",
                 "terminated: SIGTERM was forwarded to every agent",
                 0,
                 {}};
  if (outcome.interrupted_by != 0)
    return Error{ErrorKind::interrupted,
                 "Interrupted",
                 "interrupted: SIGINT was forwarded to every agent",
                 0,
                 {}};
  std::vector<std::string> failed;
  for (const auto& agent : outcome.agents)
    if (!agent.succeeded()) failed.push_back(agent.bucket);
  if (failed.empty()) return std::nullopt;
  std::string names;
  for (std::size_t i = 0; i < failed.size() && i < 5; ++i)
    names += (i ? ", " : "") + failed[i];
  if (failed.size() > 5) names += ", ...";
  return Error{ErrorKind::partial,
               "AgentsFailed",
               fmt::format("{} of {} agents did not exit 0: {}", failed.size(),
                           outcome.agents.size(), names),
               0,
               {}};
}

}  // namespace tfork::workflow
