// SPDX-License-Identifier: Apache-2.0
// The agent's environment (cli.md §11, issue 7 §2): one definition for `fork env`,
// `fork exec` and `run`; every credential source of the operator is replaced or removed.
#include "tfork/workflow/agent_env.hpp"

#include "tfork/workflow/agent_runner.hpp"

#include <catch2/catch.hpp>

#include "agent_manifest.hpp"
#include "temp_dir.hpp"
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tfork;
using namespace tfork::workflow;

namespace {

// Three forks; the second failed.
Manifest sample_manifest() {
  auto manifest = testing::agent_manifest(3);
  manifest.forks[1].status = ForkStatus::failed;
  return manifest;
}

std::string value_of(const AgentEnv& env, const std::string& name) {
  for (const auto& [n, v] : env.variables)
    if (n == name) return v;
  return "<unset>";
}

}  // namespace

TEST_CASE("agent_env sets every variable the AWS and Tigris clients read", "[agent_env]") {
  const auto env = agent_env(sample_manifest(), "3");
  CHECK(env.bucket == "run-3");
  CHECK(env.index == 3);
  CHECK(value_of(env, "AWS_ACCESS_KEY_ID") == "tid_agent3");
  CHECK(value_of(env, "AWS_SECRET_ACCESS_KEY") == "tsec_agent3");
  CHECK(value_of(env, "TIGRIS_STORAGE_ACCESS_KEY_ID") == "tid_agent3");
  CHECK(value_of(env, "TIGRIS_STORAGE_SECRET_ACCESS_KEY") == "tsec_agent3");
  for (const auto* name : {"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_IAM",
                           "TIGRIS_STORAGE_ENDPOINT"})
    CHECK(value_of(env, name) == "http://127.0.0.1:9000");
  CHECK(value_of(env, "AWS_REGION") == "auto");
  CHECK(value_of(env, "TIGRIS_STORAGE_BUCKET") == "run-3");
  // The storagesdk adapter's names (issue 21 §4).
  CHECK(value_of(env, "TIGRIS_BUCKET") == "run-3");
  CHECK(value_of(env, "TIGRIS_ACCESS_KEY_ID") == "tid_agent3");
  CHECK(value_of(env, "TIGRIS_SECRET_ACCESS_KEY") == "tsec_agent3");
  CHECK(value_of(env, "TFORK_BUCKET") == "run-3");
  CHECK(value_of(env, "TFORK_AGENT_INDEX") == "3");
  CHECK(value_of(env, "AWS_SHARED_CREDENTIALS_FILE") == "/dev/null");
  CHECK(value_of(env, "AWS_CONFIG_FILE") == "/dev/null");
  for (const auto* name : {"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN",
                           "AWS_SECURITY_TOKEN", "TIGRIS_SESSION_TOKEN"})
    CHECK(std::ranges::count(env.unset, std::string(name)) == 1);
}

TEST_CASE("agent_env refuses forks that are not live or have no key", "[agent_env]") {
  auto manifest = sample_manifest();
  CHECK_THROWS_WITH(agent_env(manifest, "2"), Catch::Contains("failed"));
  CHECK_THROWS_WITH(agent_env(manifest, "run-2"), Catch::Contains("failed"));
  CHECK_THROWS_WITH(agent_env(manifest, "4"), Catch::Contains("no fork 4"));
  CHECK_THROWS_WITH(agent_env(manifest, "nope"), Catch::Contains("no fork named"));
  manifest.forks[0].status = ForkStatus::rolled_back;
  CHECK_THROWS(agent_env(manifest, "1"));
  manifest.forks[2].access_key_id.clear();
  CHECK_THROWS_WITH(agent_env(manifest, "3"), Catch::Contains("no access key"));
  CHECK(agent_envs(manifest).empty());
  CHECK(agent_envs(sample_manifest()).size() == 2);

  auto torn_down = sample_manifest();
  torn_down.forks[0].status = ForkStatus::deleted;
  CHECK_THROWS_WITH(agent_env(torn_down, "1"), Catch::Contains("deleted"));
  torn_down.forks[2].key_revoked = true;
  CHECK_THROWS_WITH(agent_env(torn_down, "3"), Catch::Contains("revoked"));
  CHECK(agent_envs(torn_down).empty());
}

TEST_CASE("durations as typed: --timeout and --older-than", "[agent_runner]") {
  using std::chrono::milliseconds;
  CHECK(parse_duration("1500ms") == milliseconds(1500));
  CHECK(parse_duration("90") == milliseconds(90'000));
  CHECK(parse_duration("2w") == milliseconds(14LL * 86'400'000));
  CHECK_FALSE(parse_duration("0s"));
  CHECK_FALSE(parse_duration("5y"));
  CHECK_FALSE(parse_duration("1.5h"));
  CHECK_FALSE(parse_duration("99999999999w"));
}

TEST_CASE("the three formats of fork env", "[agent_env]") {
  auto manifest = sample_manifest();
  manifest.forks[0].secret_access_key = "it's \"odd\"";
  const auto env = agent_env(manifest, "1");
  const auto shell = to_shell(env);
  CHECK(shell.starts_with("unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN"));
  CHECK(shell.find("export AWS_SECRET_ACCESS_KEY='it'\\''s \"odd\"'\n") != std::string::npos);
  CHECK(shell.find("export TFORK_AGENT_INDEX=1\n") != std::string::npos);
  const auto dotenv = to_dotenv(env);
  CHECK(dotenv.find("AWS_SECRET_ACCESS_KEY=\"it's \\\"odd\\\"\"\n") != std::string::npos);
  // Bare where no quoting is needed: `docker run --env-file` reads values verbatim.
  CHECK(dotenv.find("\nTIGRIS_STORAGE_BUCKET=run-1\n") != std::string::npos);
  const auto json = to_json(env);
  CHECK(json["AWS_ACCESS_KEY_ID"] == "tid_agent1");
  CHECK(json["AWS_PROFILE"].is_null());
}

TEST_CASE("the process environment is an allowlist, not a denylist", "[agent_env]") {
  const auto env = agent_env(sample_manifest(), "1");
  const std::vector<std::string> base = {
      "PATH=/usr/bin",
      "LANG=C.UTF-8",
      "LC_ALL=C",
      "TERM=xterm",
      "TZ=UTC",
      "HF_HOME=/models",
      "AWS_ACCESS_KEY_ID=tid_ROOT",
      "AWS_SECRET_ACCESS_KEY=tsec_ROOT",
      "AWS_SECRET_KEY=tsec_ROOT",
      "TFORK_ROOT_SECRET_KEY=tsec_ROOT",
      "TIGRIS_STORAGE_ACCESS_KEY_ID=tid_ROOT",
      "TIGRIS_STORAGE_SECRET_ACCESS_KEY=tsec_ROOT",
      "TIGRIS_SECRET_ACCESS_KEY=tsec_ROOT",
      "TIGRIS_BUCKET=ROOT-bucket",
      "AWS_PROFILE=operator",
      "AWS_SESSION_TOKEN=token",
      "AWS_SHARED_CREDENTIALS_FILE=/home/op/.aws/credentials",
      "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
      "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus",
      "DISPLAY=:0",
      "HOME=/home/op",
  };
  const std::vector<std::string> pass = {"HF_HOME"};
  const auto out = agent_process_environment(env, base, pass, "/home/agent");
  const auto has = [&](const std::string& entry) { return std::ranges::count(out, entry) == 1; };
  for (const auto* kept : {"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "TZ=UTC",
                           "HF_HOME=/models", "HOME=/home/agent"})
    CHECK(has(kept));
  CHECK(has("AWS_ACCESS_KEY_ID=tid_agent1"));
  CHECK(has("TIGRIS_STORAGE_SECRET_ACCESS_KEY=tsec_agent1"));
  CHECK(has("TIGRIS_SECRET_ACCESS_KEY=tsec_agent1"));
  CHECK(has("TIGRIS_ACCESS_KEY_ID=tid_agent1"));
  CHECK(has("TIGRIS_BUCKET=run-1"));
  CHECK(has("AWS_SHARED_CREDENTIALS_FILE=/dev/null"));
  for (const auto& entry : out) {
    CHECK(entry.find("ROOT") == std::string::npos);
    for (const auto* gone : {"AWS_PROFILE=", "AWS_SESSION_TOKEN=", "SSH_AUTH_SOCK=",
                             "DBUS_SESSION_BUS_ADDRESS=", "DISPLAY=", "HOME=/home/op"})
      CHECK_FALSE(entry.starts_with(gone));
  }
}

TEST_CASE("fork names from a manifest are bucket names before any use", "[agent_env]") {
  for (const std::string name :
       {"..", "../../x", "a/b", "run-1\x1b[31m", "$(touch pwned)", "run 1", "UPPER", ".hidden"}) {
    auto manifest = sample_manifest();
    manifest.forks[0].bucket = name;
    try {
      agent_env(manifest, "1");
      FAIL("accepted the fork name " << name);
    } catch (const TforkError& e) {
      CHECK(e.error().kind == ErrorKind::usage);
      CHECK(e.error().message.find('\x1b') == std::string::npos);
    }
    CHECK_THROWS_AS(agent_envs(manifest), TforkError);
  }
}

TEST_CASE("{bucket} and {index} are replaced in every argument", "[agent_runner]") {
  const auto env = agent_env(sample_manifest(), "3");
  CHECK(substitute({"agent", "--out={bucket}/{index}", "{bucket}{bucket}", "{other}"}, env) ==
        std::vector<std::string>{"agent", "--out=run-3/3", "run-3run-3", "{other}"});
}

namespace {

std::vector<AgentSpec> specs_for(const std::vector<std::string>& script) {
  auto manifest = sample_manifest();
  manifest.forks[1].status = ForkStatus::created;
  std::vector<AgentSpec> specs;
  for (const auto& env : agent_envs(manifest)) {
    std::vector<std::string> argv = {"/bin/sh", "-c"};
    argv.insert(argv.end(), script.begin(), script.end());
    specs.push_back(AgentSpec{env, substitute(argv, env)});
  }
  return specs;
}

}  // namespace

TEST_CASE("run_agents: prefixed lines, exit codes, environment", "[agent_runner]") {
  const auto specs =
      specs_for({"echo \"out $TFORK_BUCKET $AWS_ACCESS_KEY_ID ${AWS_PROFILE-none}\"; echo err >&2; "
                 "printf partial; exit $TFORK_AGENT_INDEX",
                 "sh"});
  std::ostringstream lines;
  const auto outcome =
      run_agents(specs, ExecOptions{}, {"PATH=/usr/bin:/bin", "AWS_PROFILE=op"}, {}, lines);
  REQUIRE(outcome.agents.size() == 3);
  CHECK(outcome.interrupted_by == 0);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& agent = outcome.agents[i];
    const auto bucket = "run-" + std::to_string(i + 1);
    CHECK(agent.bucket == bucket);
    CHECK(agent.started);
    CHECK(agent.exit_code == static_cast<int>(i + 1));
    CHECK_FALSE(agent.signal);
    const auto text = lines.str();
    CHECK(text.find("[" + bucket + "] out " + bucket + " tid_agent" + std::to_string(i + 1) +
                    " none\n") != std::string::npos);
    CHECK(text.find("[" + bucket + "] err\n") != std::string::npos);
    CHECK(text.find("[" + bucket + "] partial\n") != std::string::npos);
  }
}

TEST_CASE("run_agents: --logs writes one file per fork; a missing program exits 127",
          "[agent_runner]") {
  const tfork::test::TempDir logs;
  const auto dir = logs.path() / "logs";  // made by run_agents
  auto specs = specs_for({"echo hello from $TFORK_BUCKET; echo oops >&2"});
  specs[2].argv = {"/nonexistent/agent"};
  ExecOptions options;
  options.logs_dir = dir;
  options.parallel = 1;
  std::ostringstream lines;
  const auto outcome = run_agents(specs, options, {"PATH=/usr/bin:/bin"}, {}, lines);
  CHECK(lines.str().empty());
  CHECK(outcome.agents[0].exit_code == 0);
  CHECK(outcome.agents[2].exit_code == 127);
  std::ifstream log(dir / "run-1.log");
  std::stringstream content;
  content << log.rdbuf();
  CHECK(content.str() == "hello from run-1\noops\n");
  CHECK((std::filesystem::status(dir / "run-1.log").permissions() &
         std::filesystem::perms::others_read) == std::filesystem::perms::none);
  std::ifstream failed(dir / "run-3.log");
  std::stringstream reason;
  reason << failed.rdbuf();
  CHECK(reason.str().find("cannot run /nonexistent/agent") != std::string::npos);
}

TEST_CASE("run_agents: a timeout sends TERM, then KILL to an agent that ignores it",
          "[agent_runner]") {
  auto specs = specs_for({"trap '' TERM; echo ready; while :; do sleep 1; done"});
  specs.resize(1);
  ExecOptions options;
  // The timeout must not fire before the shell has set its trap (a TERM before it would end
  // the shell by TERM, not KILL): 3 s is far beyond a loaded machine's start-up.
  options.timeout = std::chrono::milliseconds(3000);
  options.kill_after = std::chrono::milliseconds(200);
  std::ostringstream lines;
  const auto outcome = run_agents(specs, options, {"PATH=/usr/bin:/bin"}, {}, lines);
  CHECK(outcome.agents[0].timed_out);
  CHECK(outcome.agents[0].signal == SIGKILL);
  CHECK(lines.str().find("[run-1] ready\n") != std::string::npos);
}

TEST_CASE("run_agents: a stop request is forwarded and nothing more starts", "[agent_runner]") {
  // Agent 1 says it is ready, then waits for a signal; the stop request comes once its line
  // was seen (a state, not a sleep). Agent 2 and 3 never start (--parallel 1).
  auto specs =
      specs_for({"trap 'echo got INT; exit 42' INT; echo ready; "
                 "while :; do sleep 0.05; done"});
  ExecOptions options;
  options.parallel = 1;
  std::ostringstream lines;
  const auto stop = [&lines] {
    return lines.str().find("ready") != std::string::npos ? StopRequests{SIGINT, 1}
                                                          : StopRequests{};
  };
  const auto outcome = run_agents(specs, options, {"PATH=/usr/bin:/bin"}, stop, lines);
  CHECK(outcome.interrupted_by == SIGINT);
  CHECK(outcome.agents[0].exit_code == 42);
  CHECK(lines.str().find("[run-1] got INT\n") != std::string::npos);
  CHECK_FALSE(outcome.agents[1].started);
  CHECK_FALSE(outcome.agents[2].started);
}

TEST_CASE("run_agents: an agent's control characters never reach the terminal raw",
          "[agent_runner]") {
  // A carriage return would draw over the [fork] prefix, OSC sets the terminal's title;
  // colours stay.
  auto specs = specs_for({"printf 'a\\rb\\033]0;title\\007 \\033[31mred\\033[0m\\r\\n'"});
  specs.resize(1);
  std::ostringstream lines;
  run_agents(specs, ExecOptions{}, {"PATH=/usr/bin:/bin"}, {}, lines);
  CHECK(lines.str() == "[run-1] a\\rb\\x1b]0;title\\x07 \x1b[31mred\x1b[0m\n");
}
