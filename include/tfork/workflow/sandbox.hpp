// SPDX-License-Identifier: Apache-2.0
#pragma once
// The agent sandbox (cli.md §12, issue 21 §1): what an agent of `fork exec` / `run` can see of
// the machine, built from bubblewrap's own options, never a sandbox of tfork's making.
//
// Each agent gets its own PID, IPC, UTS and cgroup namespaces, a new session (no controlling
// terminal, so no TIOCSTI), no capabilities, and dies with tfork. Its file system is the
// machine's, read-only, except:
//   * masked (an empty directory of its own): /tmp, /var/tmp, /run, $XDG_RUNTIME_DIR, the
//     operator's HOME (the agent's private HOME is there), the working-directory root DIR and
//     the --logs directory;
//   * hidden (not there at all): the run's manifest wherever it is, every other tfork manifest
//     (and its agents' working directories) in the manifest's directory and in tfork's
//     working directory, the files the operator's AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE
//     and AWS_WEB_IDENTITY_TOKEN_FILE name, the SSH agent and D-Bus session sockets;
//   * shared on purpose: its own working directory DIR/<fork> (writable), the --bind and
//     --ro-bind paths, the command's program and the first file it is given (read-only: a
//     script for its interpreter; relative ones are made absolute, as typed in tfork's
//     directory), and /etc/resolv.conf's target (the network stays on: the agent must reach
//     its endpoint).
// Hiding a file rebuilds its directory (an empty tmpfs, then each other entry bound back),
// because a file cannot be unmounted away; a masked path inside a shared one is masked there
// too, so `--ro-bind .` never reveals the other agents' directories.
//
// Same uid, same kernel: this is not a container (README "What the sandbox hides").

#include "tfork/workflow/agent_env.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::workflow {

enum class SandboxKind { bwrap, none };
std::string_view sandbox_name(SandboxKind kind);

// --bind SRC[:DST] / --ro-bind SRC[:DST]: a path every agent sees on purpose.
struct SharedPath {
  std::filesystem::path source;       // on the machine
  std::filesystem::path destination;  // inside the sandbox (default: the source's path)
  bool writable = false;
};
// Throws TforkError(usage) for an empty part or a relative DST (a relative SRC is tfork's
// working directory's).
SharedPath parse_shared_path(std::string_view text, bool writable);

struct SandboxRequest {
  std::string mode = "auto";                     // --sandbox auto | bwrap | none
  std::optional<std::filesystem::path> workdir;  // --workdir DIR
  std::vector<SharedPath> shared;                // --bind, --ro-bind, in order
  std::vector<std::string> pass_env;             // --env NAME
  std::filesystem::path manifest;                // the run's manifest
  std::optional<std::filesystem::path> logs_dir;
  std::filesystem::path cwd;  // tfork's working directory
};

// One step of the sandbox's file system; bwrap applies them in order.
struct MountStep {
  enum class Kind { ro_bind, bind, tmpfs, symlink, proc, dev, file };
  Kind kind = Kind::ro_bind;
  std::string source;       // (ro_)bind: the machine's path; symlink: its target; file: content
  std::string destination;  // inside the sandbox
  int perms = -1;           // tmpfs, file: the mode (-1: bwrap's default)
  // Where the step goes: bwrap mounts over what came before, so a deeper path comes after a
  // shallower one; at one depth, masks, then binds, then rebuilt directories.
  std::size_t order_depth = 0;
  int order_rank = 0;
};

struct Sandbox {
  SandboxKind kind = SandboxKind::none;
  std::string bwrap;  // the bwrap program, by absolute path
  // DIR: agent N works in DIR/<fork>. Empty only with --sandbox none and no --workdir (the
  // agents then start in tfork's working directory, as before the sandbox).
  std::filesystem::path workdir_root;
  std::filesystem::path home;   // the agents' HOME (private under bwrap)
  std::vector<MountStep> view;  // every agent's, before its own steps
  std::vector<std::string> pass_env;
  std::vector<std::filesystem::path> hidden;  // what the view hides, for --dry-run
  std::vector<std::filesystem::path> masked;  // what it shows empty, for --dry-run
  // The shared paths (canonical source, destination), for the command's own file check.
  std::vector<SharedPath> shared;

  std::filesystem::path workdir_of(std::string_view bucket) const;
};

// Decides everything once per run, before any agent starts: the mode (auto is bwrap, the one
// sandbox tfork knows), the working-directory root (default <manifest without .json and
// .manifest>.work beside the manifest), the view. `environment` is tfork's (NAME=value).
// Throws TforkError(usage, exit 64), before anything is created: a bad --sandbox, --env,
// --bind or --workdir; no bwrap on PATH, or a bwrap that cannot create its namespaces here
// (unless --sandbox none); a shared path that would show a manifest.
Sandbox plan_sandbox(const SandboxRequest& request, std::span<const std::string> environment);

// Creates DIR (mode 0700) and DIR/<fork> for each bucket (0700; an existing one must be a
// directory of ours, not a symbolic link, so a planted link cannot redirect an agent's
// writes). Throws TforkError(usage) naming the path.
void prepare_workdirs(const Sandbox& sandbox, std::span<const std::string> buckets);

// What tfork starts for one agent. Under bwrap, `argv` is `bwrap --args 3 -- CMD...`: the
// options (with the agent's secrets in --setenv) are read from fd 3, never on a command line
// another user can read; bwrap's own environment is empty, so /proc/1/environ in the sandbox
// holds nothing; bwrap writes the sandbox's pid to fd 4; the private files are fds 5, 6, ...
struct AgentLaunch {
  std::vector<std::string> argv;
  std::vector<std::string> environment;
  std::string bwrap_arguments;     // NUL-separated ("" without bwrap)
  std::vector<std::string> files;  // contents of the --file fds, in order
  std::filesystem::path workdir;   // chdir before exec ("" : stay; bwrap does its own)
};
inline constexpr int k_bwrap_args_fd = 3;
inline constexpr int k_bwrap_info_fd = 4;
inline constexpr int k_bwrap_first_file_fd = 5;

// `command` has {bucket}/{index} replaced already.
AgentLaunch launch_for(const Sandbox& sandbox, const AgentEnv& env,
                       const std::vector<std::string>& command,
                       std::span<const std::string> environment);

// The agent's variables under this sandbox: §11's, with AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE at the private ~/.aws files under bwrap.
AgentEnv sandboxed_env(const Sandbox& sandbox, const AgentEnv& env);

// The private ~/.aws/config and ~/.aws/credentials of an agent (fork's key, endpoint,
// region). Throws TforkError(usage) for a manifest value with a control character (a newline
// would add lines of its own to the file).
std::string aws_config_file(const AgentEnv& env);
std::string aws_credentials_file(const AgentEnv& env);

// The bwrap options for the steps, NUL-separated (for --args).
std::string bwrap_options(std::span<const MountStep> steps);

}  // namespace tfork::workflow
