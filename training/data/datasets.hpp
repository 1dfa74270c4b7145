#pragma once
// Dataset readers for the parameter server: Fashion-MNIST (gzipped IDX files)
// and a byte-level text corpus built from the Debian `fortunes` package.
//
// Every file is treated as hostile: headers are validated before anything is
// allocated, payload lengths must match the header exactly, and corrupt gzip
// streams are errors. Every error is one line naming the file and the problem.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "schema/errors.hpp"

namespace cleave {

struct image_set {
  int64_t count = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // count*height*width, row-major per image
  std::vector<int32_t> labels;  // count, each in [0, 10)
};

struct fashion_mnist {
  image_set train, test;
};

// Reads an IDX images file (magic 0x00000803) and an IDX labels file (magic
// 0x00000801). Either may be gzipped (detected by the magic bytes 1f 8b) or
// uncompressed.
caf::expected<image_set> read_idx_pair(const std::string& images_path,
                                       const std::string& labels_path);

// dir holds train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz.
caf::expected<fashion_mnist> load_fashion_mnist(const std::string& dir);

inline constexpr const char* default_fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

struct text_corpus {
  std::vector<uint8_t> train;      // byte-level tokens
  std::vector<uint8_t> val;        // held-out split
  std::vector<std::string> files;  // files read, sorted
};

// Reads the plain-text fortune files under dir: regular files (symlinks
// followed), skipping *.dat, *.u8, dot files and subdirectories (off/ holds
// rot13 text), sorted by name. Fortunes are separated by lines consisting of
// "%"; separator lines are dropped. Each fortune is its lines, each ending in
// '\n'; fortunes are joined with '\n' (so a blank line separates them). Over
// the whole sorted corpus, fortune number i (counting non-blank fortunes from
// 0) goes to val if i % 10 == 9, otherwise to train. Errors if dir is missing,
// holds no usable files, the corpus is under 10 KB, the val split is empty, or
// the files total more than 256 MiB.
caf::expected<text_corpus> load_fortunes(const std::string& dir);

inline constexpr const char* default_fortunes_dir = "/usr/share/games/fortunes";

}  // namespace cleave
