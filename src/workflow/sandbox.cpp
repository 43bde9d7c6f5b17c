// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/sandbox.hpp"

#include "tfork/core/error.hpp"
#include "tfork/core/module.hpp"
#include "tfork/output/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <set>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

namespace tfork::workflow {
namespace {

namespace fs = std::filesystem;

// A rebuilt directory costs a mount per entry, for every agent: past this, move the manifest.
constexpr std::size_t k_max_rebuilt_entries = 1024;

// ---- paths

// Absolute, `.` and `..` resolved lexically, no trailing separator.
fs::path absolute_normal(const fs::path& path, const fs::path& cwd) {
  auto out = (path.is_absolute() ? path : cwd / path).lexically_normal();
  if (!out.has_filename() && out != out.root_path()) out = out.parent_path();
  return out;
}

// Symbolic links resolved where the path exists (the sandbox shows targets, not links).
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  auto out = fs::weakly_canonical(path, ec);
  if (ec) return path;
  if (!out.has_filename() && out != out.root_path()) out = out.parent_path();
  return out;
}

std::size_t depth(const fs::path& path) {
  return static_cast<std::size_t>(std::distance(path.begin(), path.end())) - 1;
}

// `dir` is `path` or one of its ancestors.
bool within(const fs::path& path, const fs::path& dir) {
  const auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end();
}

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool present(const fs::path& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

std::optional<std::string> variable(std::span<const std::string> environment,
                                    std::string_view name) {
  for (const auto& entry : environment)
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=')
      return entry.substr(name.size() + 1);
  return std::nullopt;
}

// ---- the run's pieces

SandboxKind parse_mode(std::string_view mode) {
  if (mode == "auto" || mode == "bwrap") return SandboxKind::bwrap;
  if (mode == "none") return SandboxKind::none;
  usage_error(fmt::format("--sandbox must be one of: auto, bwrap, none (got '{}')",
                          output::printable(mode)));
}

bool valid_variable_name(std::string_view name) {
  return !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
         std::ranges::all_of(name, [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_';
         });
}

// --env NAME: a name of the operator's environment passed through; never one tfork sets for
// the agent or removes from it (that would hand the agent the operator's key).
void check_pass_env(const std::vector<std::string>& names) {
  const auto agent_names = agent_variable_names();
  for (const auto& name : names) {
    if (!valid_variable_name(name))
      usage_error(fmt::format("--env needs a variable name such as HF_HOME (got '{}')",
                              output::printable(name)));
    const bool tfork_sets =
        std::ranges::find(agent_names, name) != agent_names.end() || name == "HOME";
    const auto removed = removed_variables();
    if (tfork_sets || std::ranges::find(removed, name) != removed.end())
      usage_error(
          fmt::format("--env {}: tfork sets (or removes) that variable for each agent; "
                      "it cannot be passed through",
                      name));
  }
}

// DIR by default: beside the manifest, named after it ("run-42.manifest.json" ->
// "run-42.work"), so a run's record and its agents' directories sit together.
fs::path default_workdir(const fs::path& manifest) {
  auto stem = manifest.filename().string();
  for (const std::string_view suffix : {".json", ".manifest"})
    if (stem.size() > suffix.size() && stem.ends_with(suffix))
      stem.resize(stem.size() - suffix.size());
  return manifest.parent_path() / (stem + ".work");
}

std::optional<fs::path> find_program(std::span<const std::string> environment,
                                     std::string_view name) {
  const auto path = variable(environment, "PATH").value_or("/usr/bin:/bin");
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto end = std::min(path.find(':', start), path.size());
    const auto dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir[0] != '/') continue;
    const auto candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && !is_dir(candidate)) return candidate;
  }
  return std::nullopt;
}

// The operator's home directories: $HOME and the password file's (they may differ).
std::vector<fs::path> operator_homes(std::span<const std::string> environment) {
  std::vector<fs::path> homes;
  if (const auto home = variable(environment, "HOME"); home && !home->empty())
    homes.push_back(resolved(absolute_normal(*home, "/")));
  std::array<char, 4096> buffer{};
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_dir && found->pw_dir[0] == '/')
    homes.push_back(resolved(absolute_normal(found->pw_dir, "/")));
  std::erase_if(homes, [](const fs::path& home) { return depth(home) == 0 || !is_dir(home); });
  if (homes.size() == 2 && homes[0] == homes[1]) homes.pop_back();
  return homes;  // $HOME first: the agent's HOME is at its path
}

// Run records near the run: every tfork manifest (and the working directories beside it)
// in `dir`, including a half-written one (".<name>.json.tmp-…").
void add_nearby_records(const fs::path& dir, const fs::path& workdir_root,
                        std::set<fs::path>& hidden) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (!name.ends_with(".json") && name.find(".json.tmp-") == std::string::npos) continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || !is_manifest_file(it->path())) continue;
    hidden.insert(it->path());
    const auto work = default_workdir(it->path());
    if (work != workdir_root && is_dir(work)) hidden.insert(work);
  }
}

// A Unix socket named by a variable ("unix:path=/x,guid=…" for D-Bus, a path for SSH).
std::optional<fs::path> socket_path(std::string value) {
  if (value.starts_with("unix:")) {
    const auto at = value.find("path=");
    if (at == std::string::npos) return std::nullopt;
    value = value.substr(at + 5, value.find(',', at) - at - 5);
  }
  if (value.empty() || value[0] != '/') return std::nullopt;
  return fs::path(value);
}

// ---- building the view

constexpr int k_rank_mask = 0;
constexpr int k_rank_bind = 1;
constexpr int k_rank_rebuild = 2;

MountStep step(MountStep::Kind kind, std::string source, const fs::path& destination, int rank,
               int perms = -1) {
  MountStep out;
  out.kind = kind;
  out.source = std::move(source);
  out.destination = destination.string();
  out.perms = perms;
  out.order_depth = depth(destination);
  out.order_rank = rank;
  return out;
}

// Where the machine's path is seen: through the root and through each shared path.
struct Window {
  fs::path source;
  fs::path destination;
  bool writable = false;
  std::string flag;  // "--bind SRC" for messages ("" for the root)
};

std::optional<fs::path> seen_at(const Window& window, const fs::path& path) {
  if (!within(path, window.source)) return std::nullopt;
  const auto rest = path.lexically_relative(window.source);
  return rest == "." ? window.destination : (window.destination / rest).lexically_normal();
}

class ViewBuilder {
 public:
  ViewBuilder(std::vector<Window> windows, std::vector<fs::path> masks,
              std::vector<std::pair<fs::path, int>> mask_perms)
      : windows_(std::move(windows)), masks_(std::move(masks)), perms_(std::move(mask_perms)) {}

  std::vector<MountStep> build(const std::set<fs::path>& hidden) {
    add_masks();
    add_network_files();
    add_shared();
    hide(hidden);
    make_room();
    for (const auto& [at, machine_dir, skip] : rebuilds_)
      rebuild(at, machine_dir, skip);
    steps_.insert(steps_.begin(), step(MountStep::Kind::proc, "", "/proc", k_rank_bind));
    steps_.insert(steps_.begin(), step(MountStep::Kind::dev, "", "/dev", k_rank_bind));
    if (!rebuilt_root_)
      steps_.insert(steps_.begin(), step(MountStep::Kind::ro_bind, "/", "/", k_rank_bind));
    std::ranges::stable_sort(
        steps_, {}, [](const MountStep& s) { return std::pair(s.order_depth, s.order_rank); });
    return std::move(steps_);
  }

 private:
  int perms_of(const fs::path& mask) const {
    for (const auto& [path, perms] : perms_)
      if (path == mask) return perms;
    return -1;
  }

  // A masked path shows empty wherever it is seen, unless a shared path is exactly it (the
  // operator shared that directory on purpose).
  void add_masks() {
    for (const auto& mask : masks_) {
      for (const auto& window : windows_) {
        if (!window.flag.empty() && window.source == mask) continue;
        if (const auto at = seen_at(window, mask)) {
          steps_.push_back(step(MountStep::Kind::tmpfs, "", *at, k_rank_mask, perms_of(mask)));
          covering_.push_back({*at, k_rank_mask, true, nullptr});
        }
      }
    }
  }

  bool masked(const fs::path& path) const {
    return std::ranges::any_of(masks_, [&](const fs::path& mask) { return within(path, mask); });
  }

  // The resolver's files stay reachable when they live in a masked directory (/etc/resolv.conf
  // is often a link into /run): the network is on.
  void add_network_files() {
    for (const auto* file : {"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
                             "/etc/gai.conf", "/etc/localtime"}) {
      const auto target = resolved(file);
      if (target == fs::path(file) || !present(target) || !masked(target)) continue;
      steps_.push_back(step(MountStep::Kind::ro_bind, target.string(), target, k_rank_bind));
    }
  }

  void add_shared() {
    for (const auto& window : windows_) {
      if (window.flag.empty()) {
        covering_.push_back({window.destination, k_rank_bind, false, &window});
        continue;
      }
      steps_.push_back(step(window.writable ? MountStep::Kind::bind : MountStep::Kind::ro_bind,
                            window.source.string(), window.destination, k_rank_bind));
      covering_.push_back({window.destination, k_rank_bind, false, &window});
    }
  }

  // The step a path inside the sandbox finally shows: the deepest mask or bind over it (the
  // later one at the same depth and rank).
  const Window* shown_through(const fs::path& at) const {
    const Cover* top = nullptr;
    for (const auto& cover : covering_) {
      if (!within(at, cover.destination)) continue;
      const auto key = std::pair(depth(cover.destination), cover.rank);
      if (!top || key >= std::pair(depth(top->destination), top->rank)) top = &cover;
    }
    return top && !top->mask ? top->window : nullptr;
  }

  void hide(const std::set<fs::path>& hidden) {
    // Inside a hidden directory, a path needs no hiding of its own (nor a rebuilt parent that
    // would show its name).
    std::vector<fs::path> items;
    for (const auto& path : hidden)
      if (!std::ranges::any_of(
              hidden, [&](const fs::path& other) { return other != path && within(path, other); }))
        items.push_back(path);
    for (const auto& path : items) {
      for (const auto& window : windows_) {
        if (!window.flag.empty() && within(window.source, path))
          usage_error(
              fmt::format("{} would show {} to every agent (a manifest holds every "
                          "agent's key): share a path that does not contain it",
                          window.flag, path.string()));
        const auto at = seen_at(window, path);
        if (!at || shown_through(*at) != &window) continue;
        if (window.writable)
          usage_error(
              fmt::format("{} would show {} to every agent: share it read-only "
                          "(--ro-bind), or a path that does not contain it",
                          window.flag, path.string()));
        rebuild_at(at->parent_path(), path.parent_path()).insert(path.filename().string());
      }
    }
  }

  // What is skipped when `at` (the machine's `machine_dir`) is rebuilt.
  std::set<std::string>& rebuild_at(const fs::path& at, const fs::path& machine_dir) {
    auto it = std::ranges::find_if(rebuilds_,
                                   [&](const auto& rebuild) { return std::get<0>(rebuild) == at; });
    if (it == rebuilds_.end()) {
      rebuilds_.emplace_back(at, machine_dir, std::set<std::string>{});
      it = std::prev(rebuilds_.end());
    }
    return std::get<2>(*it);
  }

  // A shared path's DST that is not there needs a writable parent for bwrap to create it:
  // the deepest directory above it that is there is rebuilt (unless a mask already made it an
  // empty tmpfs).
  void make_room() {
    for (const auto& window : windows_) {
      if (window.flag.empty() || present(window.destination) || masked(window.destination))
        continue;
      auto above = window.destination.parent_path();
      while (!present(above))
        above = above.parent_path();
      if (!is_dir(above))
        usage_error(fmt::format("{}: {} is not a directory", window.flag, above.string()));
      rebuild_at(above, above);
    }
  }

  // `at` becomes an empty tmpfs with every entry of `machine_dir` but `skip` bound back.
  void rebuild(const fs::path& at, const fs::path& machine_dir, const std::set<std::string>& skip) {
    const bool root = at == at.root_path();
    std::vector<MountStep> entries;
    if (root) {
      rebuilt_root_ = true;  // bwrap's root is already an empty tmpfs
    } else {
      entries.push_back(step(MountStep::Kind::tmpfs, "", at, k_rank_rebuild));
    }
    std::error_code ec;
    std::size_t count = 0;
    for (fs::directory_iterator it(machine_dir, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (skip.contains(name) || (root && (name == "proc" || name == "dev"))) continue;
      if (++count > k_max_rebuilt_entries)
        usage_error(fmt::format(
            "{} has more than {} entries: the sandbox rebuilds it for every agent to hide the "
            "manifest; keep the manifest in a smaller directory (--manifest)",
            machine_dir.string(), k_max_rebuilt_entries));
      std::error_code link_ec;
      if (it->is_symlink(link_ec)) {
        entries.push_back(step(MountStep::Kind::symlink, fs::read_symlink(it->path(), link_ec),
                               at / name, k_rank_rebuild));
      } else {
        entries.push_back(
            step(MountStep::Kind::ro_bind, it->path().string(), at / name, k_rank_rebuild));
      }
    }
    // The whole directory goes in at its own place: masks and binds inside it come after.
    for (auto& entry : entries) {
      entry.order_depth = depth(at);
      entry.order_rank = root ? k_rank_mask : k_rank_rebuild;
      steps_.push_back(std::move(entry));
    }
  }

  struct Cover {
    fs::path destination;
    int rank = 0;
    bool mask = false;
    const Window* window = nullptr;
  };

  std::vector<Window> windows_;
  std::vector<fs::path> masks_;
  std::vector<std::pair<fs::path, int>> perms_;
  std::vector<MountStep> steps_;
  std::vector<Cover> covering_;
  // Rebuilt directories: where inside the sandbox, the machine's directory, what to skip.
  std::vector<std::tuple<fs::path, fs::path, std::set<std::string>>> rebuilds_;
  bool rebuilt_root_ = false;
};

// What separates an agent from the machine besides its view (sandbox.hpp): its own
// namespaces, a new session (no controlling terminal: no TIOCSTI), no capabilities (as root
// too: without them a mask cannot be unmounted), and an end with tfork's.
constexpr std::array<std::string_view, 8> k_isolation = {
    "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
    "--unshare-uts",     "--cap-drop",    "ALL",           "--unshare-cgroup-try"};

// One start of bwrap with the agents' namespaces, to learn before any agent whether this
// machine lets it create them. nullopt when it does; else bwrap's first line.
std::optional<std::string> probe_bwrap(const std::string& bwrap) {
  std::vector<std::string> args = {bwrap};
  args.insert(args.end(), k_isolation.begin(), k_isolation.end());
  for (const auto* arg : {"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--setenv",
                          "PATH", "/usr/bin:/bin", "--", "true"})
    args.emplace_back(arg);
  std::vector<char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  char* no_environment[] = {nullptr};
  pid_t pid = -1;
  const int spawned =
      ::posix_spawn(&pid, bwrap.c_str(), &actions, nullptr, argv.data(), no_environment);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(err[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t n; (n = ::read(err[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (message.size() < 4096) message.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(err[0]);
  if (spawned != 0) return fmt::format("cannot start {}: {}", bwrap, std::strerror(spawned));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
  message = message.substr(0, message.find('\n'));
  if (message.empty()) message = fmt::format("{} failed (status {})", bwrap, status);
  return output::printable(message);
}

void append_option(std::string& out, std::string_view text) {
  out.append(text);
  out.push_back('\0');
}

// A value written into an INI file must stay on its line.
const std::string& ini_value(const std::string& value, std::string_view what,
                             std::string_view bucket) {
  if (value.empty() || std::ranges::any_of(value, [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      }))
    usage_error(fmt::format("the manifest's {} of fork {} is empty or has a control character",
                            what, bucket));
  return value;
}

std::string value_of(const AgentEnv& env, std::string_view name) {
  for (const auto& [n, v] : env.variables)
    if (n == name) return v;
  return "";
}

}  // namespace

std::string_view sandbox_name(SandboxKind kind) {
  return kind == SandboxKind::bwrap ? "bwrap" : "none";
}

SharedPath parse_shared_path(std::string_view text, bool writable) {
  const std::string flag = writable ? "--bind" : "--ro-bind";
  const auto colon = text.find(':');
  const auto source = text.substr(0, colon);
  const auto destination = colon == std::string_view::npos ? source : text.substr(colon + 1);
  if (source.empty() || destination.empty())
    usage_error(fmt::format("{} needs SRC or SRC:DST (got '{}')", flag, output::printable(text)));
  if (colon != std::string_view::npos && destination[0] != '/')
    usage_error(fmt::format("{} {}: DST must be an absolute path inside the sandbox", flag,
                            output::printable(text)));
  return SharedPath{fs::path(source), fs::path(destination), writable};
}

fs::path Sandbox::workdir_of(std::string_view bucket) const {
  return workdir_root.empty() ? fs::path() : workdir_root / std::string(bucket);
}

Sandbox plan_sandbox(const SandboxRequest& request, std::span<const std::string> environment) {
  Sandbox sandbox;
  sandbox.kind = parse_mode(request.mode);
  check_pass_env(request.pass_env);
  sandbox.pass_env = request.pass_env;
  const auto cwd = request.cwd.empty() ? fs::current_path() : request.cwd;
  const auto manifest = resolved(absolute_normal(request.manifest, cwd));
  if (request.workdir || sandbox.kind == SandboxKind::bwrap) {
    sandbox.workdir_root =
        resolved(absolute_normal(request.workdir.value_or(default_workdir(manifest)), cwd));
    if (depth(sandbox.workdir_root) == 0)
      usage_error("--workdir /: the agents' directories need a directory of their own");
  }
  const auto homes = operator_homes(environment);
  if (sandbox.kind == SandboxKind::none) {
    if (const auto home = variable(environment, "HOME")) sandbox.home = *home;
    return sandbox;
  }

  const auto bwrap = find_program(environment, "bwrap");
  if (!bwrap)
    usage_error(
        "--sandbox: bubblewrap (bwrap) is not installed (apt-get install bubblewrap); "
        "--sandbox none runs the agents without a sandbox (they can then read your "
        "files)");
  sandbox.bwrap = bwrap->string();
  if (const auto problem = probe_bwrap(sandbox.bwrap))
    usage_error(
        fmt::format("--sandbox: bwrap cannot create the agents' namespaces here ({}); "
                    "--sandbox none runs them without a sandbox (they can then read "
                    "your files)",
                    *problem));

  // The agent's HOME is the operator's path, emptied: what a tool finds through $HOME or
  // through the password file is the agent's own.
  sandbox.home = homes.empty() ? fs::path("/tmp/home") : homes.front();

  std::vector<fs::path> masks;
  std::vector<std::pair<fs::path, int>> perms;
  for (const auto* dir : {"/tmp", "/var/tmp", "/run"})
    if (is_dir(dir)) masks.push_back(resolved(dir));
  perms.emplace_back("/tmp", 01777);
  perms.emplace_back("/var/tmp", 01777);
  if (const auto runtime = variable(environment, "XDG_RUNTIME_DIR"); runtime && !runtime->empty())
    if (const auto dir = resolved(absolute_normal(*runtime, "/")); depth(dir) > 0 && is_dir(dir))
      masks.push_back(dir);
  for (const auto& home : homes) {
    masks.push_back(home);
    perms.emplace_back(home, 0700);
  }
  masks.push_back(sandbox.workdir_root);
  if (request.logs_dir) masks.push_back(resolved(absolute_normal(*request.logs_dir, cwd)));

  std::set<fs::path> hidden{manifest};
  add_nearby_records(manifest.parent_path(), sandbox.workdir_root, hidden);
  add_nearby_records(resolved(cwd), sandbox.workdir_root, hidden);
  for (const auto* name :
       {"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE"}) {
    if (const auto file = variable(environment, name); file && !file->empty()) {
      const auto path = resolved(absolute_normal(*file, cwd));
      if (present(path) && !is_dir(path)) hidden.insert(path);
    }
  }
  for (const auto* name : {"SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS"}) {
    if (const auto value = variable(environment, name))
      if (const auto socket = socket_path(*value); socket && present(*socket))
        hidden.insert(resolved(*socket));
  }

  std::vector<Window> windows{Window{"/", "/", false, ""}};
  for (const auto& shared : request.shared) {
    const std::string flag =
        fmt::format("{} {}", shared.writable ? "--bind" : "--ro-bind", shared.source.string());
    const auto source = resolved(absolute_normal(shared.source, cwd));
    if (!present(source)) usage_error(fmt::format("{}: no such file or directory", flag));
    const auto destination = absolute_normal(shared.destination, cwd);
    if (depth(destination) == 0) usage_error(fmt::format("{}: DST cannot be /", flag));
    windows.push_back(Window{source, destination, shared.writable, flag});
    sandbox.shared.push_back(SharedPath{source, destination, shared.writable});
  }
  ViewBuilder builder(windows, masks, perms);
  sandbox.view = builder.build(hidden);
  sandbox.hidden.assign(hidden.begin(), hidden.end());
  sandbox.masked = masks;
  return sandbox;
}

void prepare_workdirs(const Sandbox& sandbox, std::span<const std::string> buckets) {
  if (sandbox.workdir_root.empty()) return;
  const auto& root = sandbox.workdir_root;
  std::error_code ec;
  fs::create_directories(root.parent_path(), ec);
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST)
    usage_error(fmt::format("--workdir {}: {}", root.string(), std::strerror(errno)));
  const int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) usage_error(fmt::format("--workdir {}: {}", root.string(), std::strerror(errno)));
  struct stat info {};
  ::fstat(dir, &info);
  // Nobody else may put a link where an agent's directory goes (a sticky directory such as
  // /tmp keeps others from replacing what is ours).
  if (info.st_uid != ::geteuid() || ((info.st_mode & 022) != 0 && (info.st_mode & S_ISVTX) == 0)) {
    ::close(dir);
    usage_error(fmt::format("--workdir {}: not a directory only you can write; choose another",
                            root.string()));
  }
  for (const auto& bucket : buckets) {
    const auto failed = [&](std::string why) {
      ::close(dir);
      usage_error(fmt::format("working directory {}: {}", (root / bucket).string(), why));
    };
    if (bucket.empty() || bucket.find('/') != std::string::npos || bucket == "." || bucket == "..")
      failed("not a fork name");
    if (::mkdirat(dir, bucket.c_str(), 0700) != 0 && errno != EEXIST) failed(std::strerror(errno));
    struct stat entry {};
    if (::fstatat(dir, bucket.c_str(), &entry, AT_SYMLINK_NOFOLLOW) != 0)
      failed(std::strerror(errno));
    if (S_ISLNK(entry.st_mode))
      failed("a symbolic link; an agent's directory must be a directory of its own");
    if (!S_ISDIR(entry.st_mode) || entry.st_uid != ::geteuid()) failed("not a directory of yours");
    for (const auto& hidden : sandbox.hidden)
      if (within(hidden, root / bucket))
        failed(fmt::format("it holds {}, which no agent may see: choose another --workdir",
                           hidden.string()));
  }
  ::close(dir);
}

std::string aws_config_file(const AgentEnv& env) {
  const auto s3 = ini_value(value_of(env, "AWS_ENDPOINT_URL_S3"), "endpoint", env.bucket);
  const auto iam = ini_value(value_of(env, "AWS_ENDPOINT_URL_IAM"), "IAM endpoint", env.bucket);
  // `endpoint_url` and the services section are read by AWS CLI 2.13+ / botocore 1.31+, the
  // versions that also read AWS_ENDPOINT_URL; older ones ignore both (README).
  return fmt::format(
      "# tfork: the agent of fork {0}: its own configuration, in its own HOME\n"
      "[default]\n"
      "region = auto\n"
      "endpoint_url = {1}\n"
      "services = tfork\n"
      "\n"
      "[services tfork]\n"
      "s3 =\n"
      "  endpoint_url = {1}\n"
      "iam =\n"
      "  endpoint_url = {2}\n",
      env.bucket, s3, iam);
}

std::string aws_credentials_file(const AgentEnv& env) {
  return fmt::format(
      "# tfork: the key of fork {} (this fork only)\n"
      "[default]\n"
      "aws_access_key_id = {}\n"
      "aws_secret_access_key = {}\n",
      env.bucket, ini_value(value_of(env, "AWS_ACCESS_KEY_ID"), "access key id", env.bucket),
      ini_value(value_of(env, "AWS_SECRET_ACCESS_KEY"), "secret key", env.bucket));
}

AgentEnv sandboxed_env(const Sandbox& sandbox, const AgentEnv& env) {
  AgentEnv out = env;
  if (sandbox.kind != SandboxKind::bwrap) return out;
  for (auto& [name, value] : out.variables) {
    if (name == "AWS_CONFIG_FILE") value = (sandbox.home / ".aws/config").string();
    if (name == "AWS_SHARED_CREDENTIALS_FILE") value = (sandbox.home / ".aws/credentials").string();
  }
  return out;
}

std::string bwrap_options(std::span<const MountStep> steps) {
  std::string out;
  for (const auto& s : steps) {
    if (s.perms >= 0) {
      append_option(out, "--perms");
      append_option(out, fmt::format("{:04o}", s.perms));
    }
    switch (s.kind) {
      case MountStep::Kind::ro_bind:
      case MountStep::Kind::bind:
        append_option(out, s.kind == MountStep::Kind::bind ? "--bind" : "--ro-bind");
        append_option(out, s.source);
        append_option(out, s.destination);
        break;
      case MountStep::Kind::tmpfs:
        append_option(out, "--tmpfs");
        append_option(out, s.destination);
        break;
      case MountStep::Kind::symlink:
        append_option(out, "--symlink");
        append_option(out, s.source);
        append_option(out, s.destination);
        break;
      case MountStep::Kind::proc:
        append_option(out, "--proc");
        append_option(out, s.destination);
        break;
      case MountStep::Kind::dev:
        append_option(out, "--dev");
        append_option(out, s.destination);
        break;
      case MountStep::Kind::file:
        append_option(out, "--file");
        append_option(out, s.source);  // the fd number
        append_option(out, s.destination);
        break;
    }
  }
  return out;
}

AgentLaunch launch_for(const Sandbox& sandbox, const AgentEnv& env,
                       const std::vector<std::string>& command,
                       std::span<const std::string> environment) {
  AgentLaunch launch;
  const auto agent = sandboxed_env(sandbox, env);
  const auto variables =
      agent_process_environment(agent, environment, sandbox.pass_env, sandbox.home.string());
  auto argv = command;
  const auto workdir = sandbox.workdir_of(env.bucket);
  // The command's files: its program when named by path, and the first file it is given (a
  // script for its interpreter). Relative ones are tfork's directory's, where the operator
  // typed them: the agent starts in its own, so they are made absolute.
  std::vector<fs::path> program_files;
  if (!workdir.empty() && !argv.empty()) {
    const auto cwd = fs::current_path();
    if (argv[0].find('/') != std::string::npos && argv[0][0] != '/')
      argv[0] = absolute_normal(argv[0], cwd).string();
    if (argv[0][0] == '/') program_files.emplace_back(argv[0]);
    for (std::size_t i = 1; i < argv.size(); ++i) {
      if (argv[i].empty() || argv[i][0] == '-') continue;
      const auto file = absolute_normal(argv[i], cwd);
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) continue;
      argv[i] = file.string();
      program_files.push_back(file);
      break;
    }
  }
  if (sandbox.kind == SandboxKind::none) {
    launch.argv = std::move(argv);
    launch.environment = variables;
    launch.workdir = workdir;
    return launch;
  }

  std::string options;
  for (const auto flag : k_isolation)
    append_option(options, flag);
  append_option(options, "--info-fd");
  append_option(options, std::to_string(k_bwrap_info_fd));
  append_option(options, "--clearenv");
  for (const auto& entry : variables) {
    const auto equals = entry.find('=');
    append_option(options, "--setenv");
    append_option(options, std::string_view(entry).substr(0, equals));
    append_option(options, std::string_view(entry).substr(equals + 1));
  }

  auto steps = sandbox.view;
  steps.push_back(step(MountStep::Kind::bind, workdir.string(), workdir, k_rank_bind));
  launch.files = {aws_config_file(agent), aws_credentials_file(agent)};
  const std::array<fs::path, 2> file_paths = {sandbox.home / ".aws/config",
                                              sandbox.home / ".aws/credentials"};
  for (std::size_t i = 0; i < launch.files.size(); ++i)
    steps.push_back(step(MountStep::Kind::file,
                         std::to_string(k_bwrap_first_file_fd + static_cast<int>(i)), file_paths[i],
                         k_rank_bind, 0600));
  // A tfork as the agent's program (an agent that forks its own fork): the modules it loads
  // from beside it too, which under a masked directory (~/.local, /tmp) would be hidden with
  // the rest. Only files named tfork-*.so, read-only: nothing of the operator's.
  if (!argv.empty() && argv[0].starts_with('/') && fs::path(argv[0]).filename() == "tfork")
    for (const auto& module : module_files(resolved(argv[0])))
      program_files.push_back(module);
  // Its files, read-only (never a hidden one): the operator means the agent to run them.
  for (const auto& path : program_files) {
    const auto file = resolved(path);
    std::error_code ec;
    if (fs::is_regular_file(file, ec) &&
        std::ranges::find(sandbox.hidden, file) == sandbox.hidden.end())
      steps.push_back(step(MountStep::Kind::ro_bind, file.string(), file, k_rank_bind));
  }
  std::ranges::stable_sort(
      steps, {}, [](const MountStep& s) { return std::pair(s.order_depth, s.order_rank); });
  options += bwrap_options(steps);
  append_option(options, "--chdir");
  append_option(options, workdir.string());

  launch.bwrap_arguments = std::move(options);
  launch.argv = {sandbox.bwrap, "--args", std::to_string(k_bwrap_args_fd), "--"};
  launch.argv.insert(launch.argv.end(), argv.begin(), argv.end());
  return launch;
}

}  // namespace tfork::workflow
