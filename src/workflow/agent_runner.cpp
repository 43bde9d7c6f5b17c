// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/agent_runner.hpp"

#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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
  pid_t pid = -1;        // the agent, or its bwrap
  SteadyClock::time_point started;
  std::optional<SteadyClock::time_point> kill_at;  // SIGKILL due (after a timeout's SIGTERM)
  Stream out;
  Stream err;
  // Under bwrap: where it says the sandbox's pid is (its first JSON object), that pid (the
  // sandbox's init, leader of the agent's session), and a signal not delivered yet.
  bool sandboxed = false;
  int info_fd = -1;
  std::string info;
  pid_t sandbox_pid = 0;
  int pending_signal = 0;
  bool signalled = false;  // tfork sent it a signal (for bwrap's 128+N)
  // Readable once the process has ended (Linux 5.3+; -1 elsewhere, then the poll's timeout
  // finds the end): the loop wakes at an agent's end instead of at its next tick.
  int exit_fd = -1;
};

// A line as the operator's terminal may show it: SGR colour sequences (ESC [ digits m) kept,
// every other control character escaped (output::printable), a CR before the end dropped.
std::string terminal_safe(std::string_view line) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  std::string out;
  std::size_t plain = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b' || i + 1 >= line.size() || line[i + 1] != '[') continue;
    std::size_t end = i + 2;
    while (end < line.size() && ((line[end] >= '0' && line[end] <= '9') || line[end] == ';'))
      ++end;
    if (end >= line.size() || line[end] != 'm') continue;
    out += output::printable(line.substr(plain, i - plain));
    out.append(line.substr(i, end + 1 - i));
    plain = end + 1;
    i = end;
  }
  out += output::printable(line.substr(plain));
  return out;
}

void write_line(std::ostream& sink, const std::string& bucket, std::string_view line) {
  sink << '[' << output::printable(bucket) << "] " << terminal_safe(line) << '\n';
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

// Reads bwrap's --info-fd: the first JSON object names the sandbox's pid. Only that object
// counts: bwrap writes it whole before the agent runs, and the agent inherits the pipe.
void read_info(Running& agent) {
  if (agent.info_fd < 0) return;
  char buffer[1024];
  while (true) {
    const auto n = ::read(agent.info_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n > 0 && agent.info.size() < 4096) agent.info.append(buffer, static_cast<std::size_t>(n));
    const auto end = agent.info.find('}');
    if (n > 0 && end == std::string::npos) continue;
    if (end != std::string::npos) {
      const auto key = agent.info.find("\"child-pid\":");
      if (key != std::string::npos && key < end) {
        const auto pid = std::atol(agent.info.c_str() + key + 12);
        if (pid > 1) agent.sandbox_pid = static_cast<pid_t>(pid);
      }
    }
    ::close(agent.info_fd);  // the object, end of file, or a read error
    agent.info_fd = -1;
    return;
  }
}

// The agent's process is in the sandbox: its init has a child (or /proc cannot tell).
bool sandbox_has_agent(pid_t sandbox_pid) {
  std::ifstream children(fmt::format("/proc/{0}/task/{0}/children", sandbox_pid));
  if (!children) return true;
  std::string first;
  return static_cast<bool>(children >> first);
}

// Sends what is pending once the agent is there to get it (bwrap: after its setsid and fork;
// before that, a group signal would reach nobody or only the sandbox's init, which ignores it).
void deliver_pending(Running& agent) {
  if (agent.pending_signal == 0) return;
  if (agent.sandbox_pid == 0 || !sandbox_has_agent(agent.sandbox_pid)) return;
  if (::kill(-agent.sandbox_pid, agent.pending_signal) == 0 || errno != ESRCH)
    agent.pending_signal = 0;
}

void signal_agent(Running& agent, int sig) {
  agent.signalled = true;
  if (!agent.sandboxed) {
    ::kill(-agent.pid, sig);
    return;
  }
  if (sig == SIGKILL) {
    // The sandbox's init dies, and the kernel ends every process of its PID namespace;
    // bwrap itself (and a sandbox still being set up) goes with its group.
    if (agent.sandbox_pid > 0) ::kill(agent.sandbox_pid, SIGKILL);
    ::kill(-agent.pid, SIGKILL);
    agent.pending_signal = 0;
    return;
  }
  agent.pending_signal = sig;
  deliver_pending(agent);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// A sealed in-memory file holding `content`, read from its start by bwrap.
int memory_file(std::string_view name, std::string_view content) {
  const int fd = ::memfd_create(std::string(name).c_str(), MFD_CLOEXEC);
  if (fd < 0)
    throw TforkError(ErrorKind::other, "Memfd",
                     std::string("memfd_create: ") + std::strerror(errno));
  for (std::size_t done = 0; done < content.size();) {
    const auto n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw TforkError(ErrorKind::other, "Memfd", std::string("write: ") + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

// Closes every fd in `fds` that is open.
void close_all(std::initializer_list<int> fds) {
  for (const int fd : fds)
    if (fd >= 0) ::close(fd);
}

// Starts one agent. Everything the child needs is prepared before fork(): between fork and
// exec it only calls async-signal-safe functions.
Running start(const AgentSpec& spec, std::size_t slot, const ExecOptions& options, int logs_dir,
              const std::vector<std::string>& base, AgentResult& result) {
  const auto& sandbox = options.sandbox;
  auto launch = launch_for(sandbox, spec.env, spec.argv, base);
  result.sandbox = std::string(sandbox_name(sandbox.kind));
  result.workdir = sandbox.workdir_of(spec.env.bucket);
  const bool sandboxed = sandbox.kind == SandboxKind::bwrap;
  auto argv_strings = launch.argv;
  auto env_strings = launch.environment;
  auto argv = c_strings(argv_strings);
  auto envp = c_strings(env_strings);
  const std::string workdir = launch.workdir.string();
  const std::string cannot_run =
      fmt::format("tfork: cannot run {}: ", spec.argv.empty() ? "" : spec.argv.front());

  // The fds the child keeps (the rest close at exec): bwrap's options, its info pipe, and
  // the private files, moved to the numbers the options name (sandbox.hpp).
  std::vector<int> passed;
  int info_pipe[2] = {-1, -1};
  const auto close_passed = [&] {
    for (const int fd : passed)
      ::close(fd);
    close_all({info_pipe[0]});
  };
  if (sandboxed) {
    passed.push_back(memory_file("tfork-bwrap-args", launch.bwrap_arguments));
    if (::pipe2(info_pipe, O_CLOEXEC) != 0) {
      close_passed();
      throw TforkError(ErrorKind::other, "Pipe", std::string("pipe: ") + std::strerror(errno));
    }
    passed.push_back(info_pipe[1]);
    for (const auto& file : launch.files) {
      try {
        passed.push_back(memory_file("tfork-agent-file", file));
      } catch (...) {
        close_passed();
        throw;
      }
    }
  }

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int log_fd = -1;
  if (logs_dir >= 0) {
    const auto name = spec.env.bucket + ".log";
    log_fd = ::openat(logs_dir, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                      0600);
    if (log_fd < 0) {
      const int saved = errno;
      close_passed();
      throw TforkError(ErrorKind::other, "LogFile",
                       fmt::format("cannot write {}: {}", (*options.logs_dir / name).string(),
                                   std::strerror(saved)));
    }
  } else if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    close_passed();
    close_all({out_pipe[0], out_pipe[1]});
    throw TforkError(ErrorKind::other, "Pipe", std::string("pipe: ") + std::strerror(errno));
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<int> staged(passed.size(), -1);

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int saved = errno;
    close_all({out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], log_fd, null_fd});
    close_passed();
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
    // Out of the way first (a passed fd may sit on a number another one goes to), then each
    // to its number; dup2 clears close-on-exec on the copy.
    for (std::size_t i = 0; i < passed.size(); ++i)
      staged[i] = ::fcntl(passed[i], F_DUPFD_CLOEXEC, 1024);
    for (std::size_t i = 0; i < passed.size(); ++i)
      ::dup2(staged[i], k_bwrap_args_fd + static_cast<int>(i));
    // Nothing else of tfork's reaches the agent (a connection, another agent's pipe).
    ::close_range(static_cast<unsigned>(k_bwrap_args_fd + static_cast<int>(passed.size())), ~0U, 0);
    if (!workdir.empty() && ::chdir(workdir.c_str()) != 0) {
      const char* reason = std::strerror(errno);
      [[maybe_unused]] auto w1 = ::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
      [[maybe_unused]] auto w2 = ::write(STDERR_FILENO, reason, std::strlen(reason));
      [[maybe_unused]] auto w3 = ::write(STDERR_FILENO, "\n", 1);
      ::_exit(126);
    }
    if (sandboxed)
      ::execve(argv[0], argv.data(), envp.data());
    else
      ::execvpe(argv[0], argv.data(), envp.data());
    const int saved = errno;
    [[maybe_unused]] auto w1 = ::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
    const char* reason = std::strerror(saved);
    [[maybe_unused]] auto w2 = ::write(STDERR_FILENO, reason, std::strlen(reason));
    [[maybe_unused]] auto w3 = ::write(STDERR_FILENO, "\n", 1);
    ::_exit(saved == ENOENT ? 127 : 126);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before a kill
  close_all({out_pipe[1], err_pipe[1], log_fd, null_fd});
  for (const int fd : passed)
    ::close(fd);
  Running running;
  running.slot = slot;
  running.pid = pid;
  running.exit_fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  running.started = SteadyClock::now();
  running.out.fd = out_pipe[0];
  running.err.fd = err_pipe[0];
  running.sandboxed = sandboxed;
  running.info_fd = info_pipe[0];
  for (const int fd : {running.out.fd, running.err.fd, running.info_fd})
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  result.started = true;
  return running;
}

// The agent's end from its process's status (bwrap's: 128+N for a signal N).
void record_end(AgentResult& result, const Running& agent, int status) {
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    return;
  }
  if (!WIFEXITED(status)) return;
  const int code = WEXITSTATUS(status);
  if (agent.sandboxed && agent.sandbox_pid == 0) {
    // bwrap never said it had a sandbox: it failed before the agent (its message is in the
    // agent's output).
    result.started = false;
    result.error = fmt::format("the sandbox did not start (bwrap exited {})", code);
    return;
  }
  if (agent.sandboxed && agent.signalled && code > 128 && code <= 128 + 64) {
    result.signal = code - 128;
    return;
  }
  result.exit_code = code;
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
  // The log directory is opened once, before any agent runs: an agent cannot redirect a later
  // agent's log by replacing a path (the names are bucket names, so they stay inside it).
  int logs_dir = -1;
  if (options.logs_dir) {
    std::filesystem::create_directories(*options.logs_dir);
    logs_dir = ::open(options.logs_dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (logs_dir < 0)
      throw TforkError(
          ErrorKind::other, "LogFile",
          fmt::format("cannot open {}: {}", options.logs_dir->string(), std::strerror(errno)));
  }
  const std::size_t width = options.parallel == 0 ? agents.size() : options.parallel;

  std::vector<Running> running;
  std::size_t next = 0;
  bool killed_all = false;
  while (true) {
    // Signals first: once interrupted, nothing new starts.
    if (const auto stop = stop_requests ? stop_requests() : StopRequests{}; stop.count > 0) {
      if (outcome.interrupted_by == 0) {
        outcome.interrupted_by = stop.signal;
        for (auto& agent : running)
          signal_agent(agent, stop.signal);
      }
      if (stop.count > 1 && !killed_all) {
        killed_all = true;  // asked twice: no more waiting for agents that ignore the first
        for (auto& agent : running)
          signal_agent(agent, SIGKILL);
      }
    }
    while (outcome.interrupted_by == 0 && next < agents.size() && running.size() < width) {
      try {
        running.push_back(
            start(agents[next], next, options, logs_dir, base_environment, outcome.agents[next]));
      } catch (const TforkError& e) {
        outcome.agents[next].error = e.error().message;
      }
      ++next;
    }
    if (running.empty()) break;

    std::vector<pollfd> fds;
    for (const auto& agent : running) {
      for (const int fd : {agent.out.fd, agent.err.fd, agent.info_fd, agent.exit_fd})
        if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), k_poll_ms);
    for (auto& agent : running) {
      read_info(agent);
      deliver_pending(agent);
      drain(agent.out, agents[agent.slot].env.bucket, lines);
      drain(agent.err, agents[agent.slot].env.bucket, lines);
    }

    const auto now = SteadyClock::now();
    for (auto it = running.begin(); it != running.end();) {
      auto& agent = *it;
      auto& result = outcome.agents[agent.slot];
      if (options.timeout && !result.timed_out && now - agent.started >= *options.timeout) {
        result.timed_out = true;
        signal_agent(agent, SIGTERM);
        agent.kill_at = now + options.kill_after;
      }
      if (agent.kill_at && now >= *agent.kill_at) {
        signal_agent(agent, SIGKILL);
        agent.kill_at.reset();
      }
      int status = 0;
      const pid_t done = ::waitpid(agent.pid, &status, WNOHANG);
      if (done != agent.pid) {
        ++it;
        continue;
      }
      read_info(agent);
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
      close_all({agent.info_fd, agent.exit_fd});
      // The agent's own children are not waited for, but they must not outlive it unnoticed
      // after a timeout or an interrupt (under bwrap they end with its sandbox anyway).
      if (!agent.sandboxed && (result.timed_out || outcome.interrupted_by != 0))
        ::kill(-agent.pid, SIGKILL);
      result.seconds = std::chrono::duration<double>(SteadyClock::now() - agent.started).count();
      record_end(result, agent, status);
      it = running.erase(it);
    }
  }
  if (logs_dir >= 0) ::close(logs_dir);
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
        {"timed_out", agent.timed_out},
        {"sandbox", agent.sandbox.empty() ? output::Json() : output::Json(agent.sandbox)},
        {"workdir", output::json_or_null(agent.workdir.string())}};
    if (!agent.error.empty()) item["error"] = agent.error;
    if (agent.usage) {
      item["usage"] =
          agent.usage->error.empty()
              ? output::Json{{"objects", agent.usage->objects}, {"bytes", agent.usage->bytes}}
              : output::Json{
                    {"objects", nullptr}, {"bytes", nullptr}, {"error", agent.usage->error}};
    }
    agents.push_back(std::move(item));
  }
  return agents;
}

std::string agents_table(const ExecOutcome& outcome) {
  const bool usage = std::ranges::any_of(
      outcome.agents, [](const AgentResult& agent) { return agent.usage.has_value(); });
  std::vector<std::string> columns = {"FORK", "INDEX", "EXIT", "SIGNAL", "SECONDS"};
  if (usage) columns.insert(columns.end(), {"OBJECTS", "BYTES"});
  output::Table table(columns);
  for (const auto& agent : outcome.agents) {
    std::string exit = agent.exit_code ? std::to_string(*agent.exit_code) : "-";
    if (!agent.started) exit = "not started";
    std::string signal = agent.signal ? signal_name(*agent.signal) : "-";
    if (agent.timed_out) signal += " (timeout)";
    std::vector<std::string> row = {agent.bucket, std::to_string(agent.index), exit, signal,
                                    agent.started ? fmt::format("{:.1f}", agent.seconds) : "-"};
    if (usage) {
      const bool known = agent.usage && agent.usage->error.empty();
      row.push_back(known ? std::to_string(agent.usage->objects) : "-");
      row.push_back(known ? std::to_string(agent.usage->bytes) : "-");
    }
    table.row(row);
  }
  return table.render();
}

std::string agents_summary(const ExecOutcome& outcome) {
  std::size_t succeeded = 0;
  double longest = 0;
  std::int64_t objects = 0;
  std::int64_t bytes = 0;
  bool usage = false;
  for (const auto& agent : outcome.agents) {
    succeeded += agent.succeeded() ? 1 : 0;
    longest = std::max(longest, agent.seconds);
    if (agent.usage && agent.usage->error.empty()) {
      usage = true;
      objects += agent.usage->objects;
      bytes += agent.usage->bytes;
    }
  }
  const auto sandboxed = std::ranges::any_of(
      outcome.agents, [](const AgentResult& agent) { return agent.sandbox == "bwrap"; });
  std::string out = fmt::format(
      "{} of {} agents exited 0 ({}); the longest took {:.1f} s", succeeded, outcome.agents.size(),
      sandboxed ? "each in a bwrap sandbox" : "without a sandbox", longest);
  if (usage) out += fmt::format("; they wrote {} objects, {} bytes", objects, bytes);
  const auto with_workdir = std::ranges::find_if(
      outcome.agents, [](const AgentResult& agent) { return !agent.workdir.empty(); });
  if (with_workdir != outcome.agents.end())
    out += "; working directories in " +
           output::printable(with_workdir->workdir.parent_path().string());
  return out;
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
      if (!agent.workdir.empty()) record.workdir = agent.workdir.string();
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

namespace tfork::workflow {
namespace {

// The names of an agent's variables (never their values) under this sandbox.
std::vector<std::string> variable_names(const AgentSpec& spec, const Sandbox& sandbox) {
  std::vector<std::string> names;
  for (const auto& entry :
       agent_process_environment(sandboxed_env(sandbox, spec.env), current_environment(),
                                 sandbox.pass_env, sandbox.home.string()))
    names.push_back(entry.substr(0, entry.find('=')));
  return names;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv)
    out += (out.empty() ? "" : " ") + shell_quote(arg);
  return out;
}

}  // namespace

output::Json agents_plan_json(const std::vector<AgentSpec>& specs, const Sandbox& sandbox) {
  output::Json agents = output::Json::array();
  for (const auto& spec : specs) {
    agents.push_back(output::Json{
        {"bucket", spec.env.bucket},
        {"index", spec.env.index},
        {"command", spec.argv},
        {"sandbox", sandbox_name(sandbox.kind)},
        {"workdir", output::json_or_null(sandbox.workdir_of(spec.env.bucket).string())},
        {"variables", variable_names(spec, sandbox)}});
  }
  return agents;
}

std::string agents_plan_table(const std::vector<AgentSpec>& specs, const Sandbox& sandbox) {
  output::Table table({"FORK", "INDEX", "SANDBOX", "WORKDIR", "COMMAND"});
  for (const auto& spec : specs) {
    const auto workdir = sandbox.workdir_of(spec.env.bucket);
    table.row(
        {spec.env.bucket, std::to_string(spec.env.index), std::string(sandbox_name(sandbox.kind)),
         workdir.empty() ? std::string("(tfork's)") : workdir.string(), command_line(spec.argv)});
  }
  std::string text = table.render();
  if (!specs.empty()) {
    std::string names;
    for (const auto& name : variable_names(specs.front(), sandbox))
      names += (names.empty() ? "" : " ") + name;
    text += "variables of each agent: " + names + "\n";
  }
  for (const auto& path : sandbox.hidden)
    text += "hidden from the agents: " + output::printable(path.string()) + "\n";
  return text;
}

}  // namespace tfork::workflow
