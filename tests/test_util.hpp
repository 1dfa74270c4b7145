#pragma once
// Shared test helpers: a scratch directory that cleans up after itself.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

namespace cleave::testing {

class scratch_dir {
 public:
  scratch_dir() {
    std::string tmpl = ::testing::TempDir() + "cleave-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace cleave::testing
