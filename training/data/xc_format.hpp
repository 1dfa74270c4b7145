#pragma once
// Extreme-classification data in the XMLRepository text format, the one
// Amazon-670K and WikiLSHTC are shipped in and build_xc_datasets.py (beside
// this file) writes:
//
//   samples features labels            header: three counts
//   3,17 0:1 42:0.5 1033:2.25          one line per sample: labels, then feature:value
//    5:1 9:1                           a sample without labels starts with a space
//
// Labels are 0-based ids in [0, labels), comma-separated (a comma may be
// followed by blanks, as in LSHTC's files); features are 0-based ids in
// [0, features) with a finite value, separated by spaces or tabs. A file is
// hostile until read: the header's counts are capped before anything is sized
// by them, every id is checked against the header, the number of sample lines
// must match it, and each error is one line naming the file, the line number
// and the problem.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "schema/errors.hpp"

namespace cleave {

// Samples as two CSR matrices over the same rows: features (ids and values)
// and labels (ids only). Within a row both are sorted by id, without repeats.
struct sparse_dataset {
  int64_t samples = 0, features = 0, labels = 0;  // the header's counts
  std::vector<int64_t> feature_offsets{0};        // samples + 1; row i is [off[i], off[i+1])
  std::vector<int32_t> feature_ids;
  std::vector<float> values;
  std::vector<int64_t> label_offsets{0};          // samples + 1
  std::vector<int32_t> label_ids;
};

// The caps a header is held to: ids must fit an int32 with room to spare.
inline constexpr int64_t xc_max_samples = int64_t{1} << 26;
inline constexpr int64_t xc_max_features = int64_t{1} << 26;
inline constexpr int64_t xc_max_labels = int64_t{1} << 26;
inline constexpr size_t xc_max_line_bytes = size_t{1} << 26;

// Parses a whole file's text; name is what errors call it. Rows come back
// sorted by id (files need not be), so a repeated id is an error.
caf::expected<sparse_dataset> parse_xc(std::string_view text, const std::string& name);

// Reads path line by line (never the whole file at once).
caf::expected<sparse_dataset> read_xc(const std::string& path);

// The text of d: ids ascending, values in the shortest form that reads back
// to the same float. Refuses a dataset that read_xc would refuse (ids out of
// range or unsorted, offsets that do not add up, values not finite).
caf::expected<std::string> format_xc(const sparse_dataset& d);

// Writes format_xc(d) to path through schema/atomic_file (all or nothing).
caf::error write_xc(const sparse_dataset& d, const std::string& path);

struct xc_split {
  sparse_dataset train, test;
};

// dir/train.txt and dir/test.txt, which must agree on features and labels.
caf::expected<xc_split> load_xc_dir(const std::string& dir);

// The names --dataset takes for extreme classification: "gcide-nextword" and
// "spell-670k" (built by training/data/build_xc_datasets.py into data_dir/NAME/) or
// "xc:DIR" (any train.txt/test.txt pair, e.g. Amazon-670K). A task that is not
// built yet is an error giving the command that builds it.
bool is_xc_dataset(const std::string& spec);
caf::expected<xc_split> load_xc_dataset(const std::string& spec, const std::string& data_dir);

// Where build_xc_datasets.py writes by default: $CLEAVE_XC_DATA if set, else
// build/xc-data under the working directory (the repository's root).
std::string default_xc_data_dir();

}  // namespace cleave
