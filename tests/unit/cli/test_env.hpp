// SPDX-License-Identifier: Apache-2.0
#pragma once
// A temporary HOME and an injected environment for the config and credential chains.

#include "tfork/cli/config.hpp"

#include "temp_dir.hpp"
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <sys/stat.h>

namespace tfork::testing {

class TempHome {
 public:
  TempHome() : home_("tfork-home"), dir_(home_.path()) {
    std::filesystem::create_directories(dir_ / ".aws");
    vars["HOME"] = dir_.string();
  }

  const std::filesystem::path& dir() const { return dir_; }

  // Writes a file under HOME ("relative" such as ".aws/credentials"); returns its path.
  std::string write(const std::string& relative, const std::string& text, bool executable = false) {
    const auto path = dir_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    if (executable) ::chmod(path.c_str(), 0700);
    return path.string();
  }

  cli::Environment env() const {
    return [vars = vars](std::string_view name) -> std::optional<std::string> {
      auto it = vars.find(std::string(name));
      if (it == vars.end() || it->second.empty()) return std::nullopt;
      return it->second;
    };
  }

  std::map<std::string, std::string> vars;

 private:
  test::TempDir home_;  // kept, with its path printed, when the test failed
  std::filesystem::path dir_;
};

}  // namespace tfork::testing
