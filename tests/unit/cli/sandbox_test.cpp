// SPDX-License-Identifier: Apache-2.0
// The agent sandbox (cli.md §12, issue 21 §1): the rules that decide what an agent sees, and
// real agents run under bubblewrap by the runner (exit codes, signals, the view).
#include "tfork/workflow/sandbox.hpp"

#include "tfork/core/error.hpp"
#include "tfork/workflow/agent_runner.hpp"

#include <catch2/catch.hpp>

#include "agent_manifest.hpp"
#include "temp_dir.hpp"
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfork;
using namespace tfork::workflow;
namespace fs = std::filesystem;

using tfork::test::TempDir;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

const std::string k_manifest_text =
    R"({"source": "data", "forks": [{"bucket": "run-1", "secret_access_key": "tsec_x"}]})";

Manifest sample_manifest() {
  return testing::agent_manifest(2);
}

SandboxRequest request_in(const TempDir& dir) {
  SandboxRequest request;
  request.manifest = dir.path() / "runs/run.manifest.json";
  request.cwd = dir.path() / "cwd";
  fs::create_directories(request.cwd);
  write(request.manifest, k_manifest_text);
  return request;
}

std::vector<std::string> environment_for(const TempDir& dir) {
  fs::create_directories(dir.path() / "home");
  return {"PATH=/usr/bin:/bin", "HOME=" + (dir.path() / "home").string()};
}

bool has_step(const Sandbox& sandbox, MountStep::Kind kind, const fs::path& destination) {
  return std::ranges::any_of(sandbox.view, [&](const MountStep& step) {
    return step.kind == kind && step.destination == destination.string();
  });
}

bool binds_source(const Sandbox& sandbox, const fs::path& source) {
  return std::ranges::any_of(sandbox.view,
                             [&](const MountStep& step) { return step.source == source.string(); });
}

}  // namespace

TEST_CASE("--bind and --ro-bind take SRC or SRC:DST", "[sandbox]") {
  const auto both = parse_shared_path("/data:/mnt/data", true);
  CHECK(both.source == "/data");
  CHECK(both.destination == "/mnt/data");
  CHECK(both.writable);
  const auto one = parse_shared_path("models", false);
  CHECK(one.destination == "models");
  CHECK_FALSE(one.writable);
  CHECK_THROWS_WITH(parse_shared_path(":/x", false), Catch::Contains("SRC or SRC:DST"));
  CHECK_THROWS_WITH(parse_shared_path("/x:rel", false), Catch::Contains("absolute"));
}

TEST_CASE("--sandbox, --env and --workdir are checked before anything is made", "[sandbox]") {
  TempDir dir;
  auto request = request_in(dir);
  const auto environment = environment_for(dir);
  request.mode = "docker";
  CHECK_THROWS_WITH(plan_sandbox(request, environment), Catch::Contains("--sandbox must be"));
  request.mode = "none";
  for (const auto* name : {"AWS_ACCESS_KEY_ID", "TIGRIS_STORAGE_SECRET_ACCESS_KEY", "AWS_PROFILE",
                           "HOME", "TIGRIS_BUCKET"}) {
    request.pass_env = {name};
    CHECK_THROWS_WITH(plan_sandbox(request, environment), Catch::Contains("tfork sets"));
  }
  request.pass_env = {"1BAD"};
  CHECK_THROWS_WITH(plan_sandbox(request, environment), Catch::Contains("variable name"));
  request.pass_env = {"HF_HOME"};
  const auto none = plan_sandbox(request, environment);
  CHECK(none.kind == SandboxKind::none);
  CHECK(none.workdir_root.empty());  // as before the sandbox, unless --workdir
  request.workdir = "/";
  CHECK_THROWS_WITH(plan_sandbox(request, environment), Catch::Contains("--workdir /"));
}

TEST_CASE("without bwrap on PATH, the sandbox is refused with a way out", "[sandbox]") {
  TempDir dir;
  const auto request = request_in(dir);
  try {
    const std::vector<std::string> environment = {"PATH=" + (dir.path() / "empty").string()};
    plan_sandbox(request, environment);
    FAIL("planned a sandbox without bwrap");
  } catch (const TforkError& e) {
    CHECK(e.error().kind == ErrorKind::usage);
    CHECK(e.error().message.find("apt-get install bubblewrap") != std::string::npos);
    CHECK(e.error().message.find("--sandbox none") != std::string::npos);
  }
}

TEST_CASE("the view hides the manifests, masks HOME, /tmp and the workdir", "[sandbox]") {
  TempDir dir;
  auto request = request_in(dir);
  const auto runs = fs::canonical(dir.path() / "runs");
  // Beside the run's manifest: another run's manifest and its agents' directories, a JSON
  // file that is no manifest, and the operator's code.
  write(runs / "old.json", k_manifest_text);
  write(runs / "old.work/run-1/notes.txt", "secret notes");
  write(runs / "settings.json", R"({"theme": "dark"})");
  write(runs / "agent.sh", "echo hi");
  write(dir.path() / "cwd/other.manifest.json", k_manifest_text);
  const auto sandbox = plan_sandbox(request, environment_for(dir));
  CHECK(sandbox.kind == SandboxKind::bwrap);
  CHECK(sandbox.workdir_root == runs / "run.work");
  CHECK(sandbox.home == fs::canonical(dir.path() / "home"));
  CHECK(has_step(sandbox, MountStep::Kind::tmpfs, "/tmp"));
  CHECK(has_step(sandbox, MountStep::Kind::tmpfs, sandbox.home));
  CHECK(has_step(sandbox, MountStep::Kind::tmpfs, sandbox.workdir_root));
  CHECK(has_step(sandbox, MountStep::Kind::proc, "/proc"));
  for (const auto* hidden : {"run.manifest.json", "old.json", "old.work"})
    CHECK(std::ranges::count(sandbox.hidden, runs / hidden) == 1);
  CHECK(std::ranges::count(sandbox.hidden, fs::canonical(dir.path() / "cwd/other.manifest.json")) ==
        1);
  CHECK(std::ranges::count(sandbox.hidden, runs / "settings.json") == 0);
}

TEST_CASE("a shared path never shows a manifest", "[sandbox]") {
  TempDir dir;
  auto request = request_in(dir);
  const auto runs = fs::canonical(dir.path() / "runs");
  write(runs / "code/agent.py", "print(1)");
  // Read-only: the directory is rebuilt inside the share without the manifest.
  request.shared = {parse_shared_path(runs.string() + ":/mnt/runs", false)};
  const auto shared = plan_sandbox(request, environment_for(dir));
  CHECK(has_step(shared, MountStep::Kind::tmpfs, "/mnt/runs"));
  CHECK(has_step(shared, MountStep::Kind::ro_bind, "/mnt/runs/code"));
  CHECK_FALSE(has_step(shared, MountStep::Kind::ro_bind, "/mnt/runs/run.manifest.json"));
  CHECK_FALSE(binds_source(shared, runs / "run.manifest.json"));
  // Writable, it would expose the manifest to writes and reads: refused. So is sharing the
  // manifest itself.
  request.shared = {parse_shared_path(runs.string(), true)};
  CHECK_THROWS_WITH(plan_sandbox(request, environment_for(dir)),
                    Catch::Contains("would show") && Catch::Contains("--ro-bind"));
  request.shared = {parse_shared_path((runs / "run.manifest.json").string(), false)};
  CHECK_THROWS_WITH(plan_sandbox(request, environment_for(dir)), Catch::Contains("would show"));
}

TEST_CASE("working directories: empty, ours, never a planted link", "[sandbox]") {
  TempDir dir;
  auto request = request_in(dir);
  request.workdir = dir.path() / "work";
  const auto sandbox = plan_sandbox(request, environment_for(dir));
  const std::vector<std::string> buckets = {"run-1", "run-2"};
  fs::create_directories(dir.path() / "work");
  fs::create_directory_symlink(dir.path() / "home", dir.path() / "work/run-2");
  CHECK_THROWS_WITH(prepare_workdirs(sandbox, buckets), Catch::Contains("symbolic link"));
  fs::remove(dir.path() / "work/run-2");
  prepare_workdirs(sandbox, buckets);
  struct stat info {};
  REQUIRE(::stat((dir.path() / "work/run-1").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
  prepare_workdirs(sandbox, buckets);  // again: the same directories, kept
  const std::vector<std::string> hostile = {".."};
  CHECK_THROWS(prepare_workdirs(sandbox, hostile));
}

TEST_CASE("an agent's launch: secrets only on fd 3, never on a command line", "[sandbox]") {
  TempDir dir;
  auto request = request_in(dir);
  const auto environment = environment_for(dir);
  const auto sandbox = plan_sandbox(request, environment);
  const auto env = agent_env(sample_manifest(), "2");
  const auto launch = launch_for(sandbox, env, {"./agent.sh", "{bucket}"}, environment);
  REQUIRE(launch.argv.size() == 6);
  CHECK(launch.argv[1] == "--args");
  CHECK(launch.argv[2] == "3");
  CHECK(launch.argv[4] == (fs::current_path() / "agent.sh").string());  // where it was typed
  for (const auto& arg : launch.argv)
    CHECK(arg.find("tsec_agent2") == std::string::npos);
  CHECK(launch.environment.empty());  // bwrap's own: nothing for /proc/1/environ to show
  std::string options = launch.bwrap_arguments;
  std::ranges::replace(options, '\0', ' ');
  for (const auto* part :
       {"--new-session", "--die-with-parent", "--unshare-pid", "--cap-drop ALL", "--clearenv",
        "--setenv AWS_SECRET_ACCESS_KEY tsec_agent2", "--setenv TIGRIS_BUCKET run-2",
        "--setenv PATH /usr/bin:/bin", "--info-fd 4", "--perms 0600 --file 5"})
    CHECK(options.find(part) != std::string::npos);
  CHECK(options.find("--chdir " + sandbox.workdir_of("run-2").string()) != std::string::npos);
  REQUIRE(launch.files.size() == 2);
  CHECK(launch.files[0].find("endpoint_url = http://127.0.0.1:9000") != std::string::npos);
  CHECK(launch.files[1].find("aws_secret_access_key = tsec_agent2") != std::string::npos);
}

TEST_CASE("a manifest value cannot add lines to the agent's AWS files", "[sandbox]") {
  auto manifest = sample_manifest();
  manifest.endpoint = "http://127.0.0.1:9000\ncredential_process = /bin/evil";
  const auto env = agent_env(manifest, "1");
  CHECK_THROWS_WITH(aws_config_file(env), Catch::Contains("control character"));
  manifest = sample_manifest();
  manifest.forks[0].secret_access_key = "x\n[profile evil]";
  CHECK_THROWS_AS(aws_credentials_file(agent_env(manifest, "1")), TforkError);
}

namespace {

// Runs `script` as each of the two agents in a real bubblewrap sandbox.
ExecOutcome run_in_sandbox(const TempDir& dir, const std::string& script, ExecOptions options,
                           std::ostringstream& lines,
                           const std::function<StopRequests()>& stop = {}) {
  const auto environment = environment_for(dir);
  options.sandbox = plan_sandbox(request_in(dir), environment);
  std::vector<AgentSpec> specs;
  for (const auto& env : agent_envs(sample_manifest()))
    specs.push_back(AgentSpec{env, {"/bin/sh", "-c", script}});
  prepare_workdirs(options.sandbox, std::vector<std::string>{"run-1", "run-2"});
  return run_agents(specs, options, environment, stop, lines);
}

}  // namespace

TEST_CASE("bwrap: exit codes, its own working directory, HOME and PID namespace",
          "[sandbox][bwrap]") {
  TempDir dir;
  std::ostringstream lines;
  const auto outcome =
      run_in_sandbox(dir,
                     "echo \"pwd $PWD home $HOME pid $$ ppid $PPID\"; echo mine >own.txt; "
                     "ls -A \"$HOME\" | tr '\\n' ' '; echo; wc -c </proc/1/environ; "
                     "ls ../ | tr '\\n' ' '; echo; exit $TFORK_AGENT_INDEX",
                     ExecOptions{}, lines);
  const auto root = fs::canonical(dir.path() / "runs/run.work");
  for (int i = 1; i <= 2; ++i) {
    const auto& agent = outcome.agents[static_cast<std::size_t>(i - 1)];
    const auto bucket = "run-" + std::to_string(i);
    INFO(lines.str());
    CHECK(agent.exit_code == i);
    CHECK(agent.sandbox == "bwrap");
    CHECK(agent.workdir == root / bucket);
    CHECK(lines.str().find("[" + bucket + "] pwd " + (root / bucket).string() + " home " +
                           fs::canonical(dir.path() / "home").string() + " pid 2 ppid 1") !=
          std::string::npos);
    CHECK(lines.str().find("[" + bucket + "] .aws \n") != std::string::npos);
    CHECK(lines.str().find("[" + bucket + "] 0\n") != std::string::npos);  // /proc/1/environ
    CHECK(lines.str().find("[" + bucket + "] " + bucket + " \n") != std::string::npos);
    CHECK(fs::exists(root / bucket / "own.txt"));  // kept after the run
  }
}

TEST_CASE("bwrap: a stop request reaches the agent's own trap", "[sandbox][bwrap]") {
  TempDir dir;
  std::ostringstream lines;
  const auto stop = [&lines] {
    const auto text = lines.str();
    return text.find("[run-1] ready") != std::string::npos &&
                   text.find("[run-2] ready") != std::string::npos
               ? StopRequests{SIGTERM, 1}
               : StopRequests{};
  };
  const auto outcome = run_in_sandbox(
      dir, "trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.05; done",
      ExecOptions{}, lines, stop);
  CHECK(outcome.interrupted_by == SIGTERM);
  for (const auto& agent : outcome.agents) {
    INFO(lines.str());
    CHECK(agent.exit_code == 42);
  }
  CHECK(lines.str().find("[run-2] got TERM\n") != std::string::npos);
}

TEST_CASE("bwrap: a timeout ends an agent that ignores TERM, and all it started",
          "[sandbox][bwrap]") {
  TempDir dir;
  ExecOptions options;
  options.timeout = std::chrono::milliseconds(300);
  options.kill_after = std::chrono::milliseconds(300);
  std::ostringstream lines;
  const auto outcome = run_in_sandbox(
      dir, "trap '' TERM; (sleep 1000 &); echo ready; while :; do sleep 1; done", options, lines);
  for (const auto& agent : outcome.agents) {
    CHECK(agent.timed_out);
    CHECK(agent.signal == SIGKILL);
    CHECK_FALSE(agent.exit_code);
  }
}
