#pragma once
// Shared test helpers: a scratch directory that cleans up after itself, and
// a tensor of seeded normal values.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "kernels/random.hpp"
#include "kernels/tensor.hpp"

namespace cleave::testing {

inline tensor random_tensor(int64_t rows, int64_t cols, uint64_t seed) {
  tensor t(rows, cols);
  rng g(seed);
  fill_normal(t, 1.0, g);
  return t;
}

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
