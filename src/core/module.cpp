// SPDX-License-Identifier: Apache-2.0
#include "tfork/core/module.hpp"

#include "tfork/core/error.hpp"

#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#ifndef TFORK_MODULE_INSTALL_DIR
#define TFORK_MODULE_INSTALL_DIR "/usr/local/lib/tfork"
#endif

namespace tfork {
namespace {

// Where the tfork at `executable` (empty: none known) finds its modules, in order.
std::vector<std::filesystem::path> module_directories(const std::filesystem::path& executable) {
  std::vector<std::filesystem::path> directories;
  if (!executable.empty()) {
    directories.push_back(executable.parent_path());
    directories.push_back(executable.parent_path().parent_path() / "lib" / "tfork");
  }
  directories.emplace_back(TFORK_MODULE_INSTALL_DIR);
  return directories;
}

std::vector<std::filesystem::path> module_directories() {
  std::error_code error;
  const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
  return module_directories(error ? std::filesystem::path() : executable);
}

}  // namespace

std::vector<std::filesystem::path> module_files(const std::filesystem::path& executable) {
  std::vector<std::filesystem::path> files;
  for (const auto& directory : module_directories(executable)) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
      const auto name = entry.path().filename().string();
      if (name.starts_with("tfork-") && name.ends_with(".so") && entry.is_regular_file(error))
        files.push_back(entry.path());
    }
  }
  return files;
}

void* module_symbol(std::string_view name, const char* symbol) {
  // Modules stay loaded for the life of the process: objects they create are used until exit.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::string tried;
  for (const auto& directory : module_directories()) {
    const auto path = directory / name;
    if (!std::filesystem::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path.string();
      continue;
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      throw TforkError(ErrorKind::other, "ModuleLoadFailed",
                       "cannot load " + path.string() + ": " + ::dlerror());
    }
    if (void* address = ::dlsym(handle, symbol)) return address;
    throw TforkError(ErrorKind::other, "ModuleLoadFailed",
                     path.string() + " has no " + symbol + " (a module from another build?)");
  }
  throw TforkError(
      ErrorKind::other, "ModuleNotFound",
      std::string(name) + " is missing (looked in " + tried + "); reinstall tfork or rebuild it");
}

}  // namespace tfork
