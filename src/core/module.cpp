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

std::vector<std::filesystem::path> module_directories() {
  std::vector<std::filesystem::path> directories;
  std::error_code error;
  const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    directories.push_back(executable.parent_path());
    directories.push_back(executable.parent_path().parent_path() / "lib" / "tfork");
  }
  directories.emplace_back(TFORK_MODULE_INSTALL_DIR);
  return directories;
}

}  // namespace

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
