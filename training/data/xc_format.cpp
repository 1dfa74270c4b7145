#include "training/data/xc_format.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <system_error>
#include <utility>

#include "schema/atomic_file.hpp"
#include "training/data/regular_file.hpp"

namespace cleave {

namespace {

bool blank_char(char c) { return c == ' ' || c == '\t'; }

// A token as an error message shows it: clipped, control bytes escaped, so a
// binary file cannot fill the terminal with garbage.
std::string shown(std::string_view t) {
  std::string out = "'";
  for (size_t i = 0; i < t.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (t.size() > 40 ? "...'" : "'");
}

// A whole token as a non-negative decimal integer, or -1.
int64_t parse_count(std::string_view t) {
  int64_t v = -1;
  if (t.empty() || t[0] == '-') return -1;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc{} || end != t.data() + t.size()) return -1;
  return v;
}

// Splits at runs of spaces and tabs.
std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && blank_char(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !blank_char(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Fed one line at a time (without its '\n'), so a file and a string in memory
// take the same path. size_bound is the input's size in bytes: no header may
// promise more samples than that many bytes can hold.
class xc_reader {
 public:
  xc_reader(std::string name, uint64_t size_bound) : name_(std::move(name)), size_bound_(size_bound) {}

  caf::error line(std::string_view s) {
    ++line_no_;
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (line_no_ == 1) return header(s);
    if (d_.feature_offsets.size() > static_cast<size_t>(d_.samples))
      return problem("more sample lines than the " + std::to_string(d_.samples) + " the header promises");
    return sample(s);
  }

  caf::expected<sparse_dataset> finish() {
    if (line_no_ == 0) return fail(name_ + ": empty file (no header line `samples features labels`)");
    const int64_t got = static_cast<int64_t>(d_.feature_offsets.size()) - 1;
    if (got != d_.samples)
      return problem("the file ends after " + std::to_string(got) + " sample line(s); the header promises " +
                     std::to_string(d_.samples));
    return std::move(d_);
  }

  caf::error too_long() {
    return fail(name_ + ", line " + std::to_string(line_no_ + 1) + ": longer than the limit of " +
                std::to_string(xc_max_line_bytes) + " bytes");
  }

 private:
  caf::error problem(const std::string& what) const {
    return fail(name_ + ", line " + std::to_string(line_no_) + ": " + what);
  }

  caf::error header(std::string_view s) {
    const auto w = words(s);
    if (w.size() != 3)
      return problem("the header must be three counts `samples features labels`, found " +
                     std::to_string(w.size()) + " field(s)");
    static const char* const names[] = {"samples", "features", "labels"};
    static const int64_t caps[] = {xc_max_samples, xc_max_features, xc_max_labels};
    int64_t v[3];
    for (int i = 0; i < 3; ++i) {
      v[i] = parse_count(w[i]);
      if (v[i] < 0) return problem(std::string("header: ") + names[i] + " count " + shown(w[i]) +
                                   " is not a non-negative integer");
      if (v[i] == 0) return problem(std::string("header: ") + names[i] + " count is 0");
      if (v[i] > caps[i])
        return problem(std::string("header: ") + names[i] + " count " + std::to_string(v[i]) +
                       " exceeds the limit of " + std::to_string(caps[i]));
    }
    // Every sample line holds at least one byte and its newline (the last
    // may lack one), so the input's size bounds the count before we reserve.
    if (static_cast<uint64_t>(v[0]) > size_bound_ / 2 + 1)
      return problem("header promises " + std::to_string(v[0]) + " samples, but " + std::to_string(size_bound_) +
                     " bytes cannot hold that many lines");
    d_.samples = v[0];
    d_.features = v[1];
    d_.labels = v[2];
    d_.feature_offsets.reserve(static_cast<size_t>(d_.samples) + 1);
    d_.label_offsets.reserve(static_cast<size_t>(d_.samples) + 1);
    return {};
  }

  caf::error sample(std::string_view s) {
    if (s.empty()) return problem("empty line (a sample needs labels or features)");
    size_t pos = 0;
    const size_t label_start = d_.label_ids.size(), feature_start = d_.feature_ids.size();
    if (!blank_char(s[0])) {
      // The labels end at the first blank not after a comma: LSHTC's files
      // write `545, 32 8:1`.
      for (;;) {
        while (pos < s.size() && !blank_char(s[pos])) ++pos;
        if (pos == s.size() || s[pos - 1] != ',') break;
        while (pos < s.size() && blank_char(s[pos])) ++pos;
      }
      if (auto err = labels(s.substr(0, pos))) return err;
    }
    for (auto w : words(s.substr(pos)))
      if (auto err = feature(w)) return err;
    if (d_.label_ids.size() == label_start && d_.feature_ids.size() == feature_start)
      return problem("the sample has neither labels nor features");
    if (auto err = sort_row(feature_start, label_start)) return err;
    d_.feature_offsets.push_back(static_cast<int64_t>(d_.feature_ids.size()));
    d_.label_offsets.push_back(static_cast<int64_t>(d_.label_ids.size()));
    return {};
  }

  caf::error labels(std::string_view t) {
    if (t.find(':') != std::string_view::npos)
      return problem("labels expected before the first feature, found " + shown(t) +
                     " (a sample without labels starts with a space)");
    size_t i = 0;
    for (;;) {
      const size_t comma = std::min(t.find(',', i), t.size());
      auto item = t.substr(i, comma - i);
      while (!item.empty() && blank_char(item.front())) item.remove_prefix(1);
      const int64_t id = parse_count(item);
      if (item.empty()) return problem("empty label in " + shown(t));
      if (id < 0) return problem("label " + shown(item) + " is not a non-negative integer");
      if (id >= d_.labels)
        return problem("label " + std::to_string(id) + " is out of range [0, " + std::to_string(d_.labels) + ")");
      d_.label_ids.push_back(static_cast<int32_t>(id));
      if (comma == t.size()) return {};
      i = comma + 1;
    }
  }

  caf::error feature(std::string_view t) {
    const size_t colon = t.find(':');
    if (colon == std::string_view::npos) return problem("feature " + shown(t) + " is not `id:value`");
    const int64_t id = parse_count(t.substr(0, colon));
    if (id < 0) return problem("feature id in " + shown(t) + " is not a non-negative integer");
    if (id >= d_.features)
      return problem("feature id " + std::to_string(id) + " is out of range [0, " + std::to_string(d_.features) +
                     ")");
    const auto v = t.substr(colon + 1);
    float value = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || ec == std::errc::invalid_argument || end != v.data() + v.size())
      return problem("feature value in " + shown(t) + " is not a number");
    if (ec == std::errc::result_out_of_range || !std::isfinite(value))
      return problem("feature value in " + shown(t) + " is not a finite float");
    d_.feature_ids.push_back(static_cast<int32_t>(id));
    d_.values.push_back(value);
    return {};
  }

  // Files need not sort a row, but a repeated id would be ambiguous.
  caf::error sort_row(size_t feature_start, size_t label_start) {
    auto lb = d_.label_ids.begin() + static_cast<std::ptrdiff_t>(label_start);
    std::sort(lb, d_.label_ids.end());
    if (auto dup = std::adjacent_find(lb, d_.label_ids.end()); dup != d_.label_ids.end())
      return problem("label " + std::to_string(*dup) + " appears twice");
    const size_t n = d_.feature_ids.size() - feature_start;
    int32_t* ids = d_.feature_ids.data() + feature_start;
    float* vals = d_.values.data() + feature_start;
    if (!std::is_sorted(ids, ids + n)) {
      std::vector<size_t> order(n);
      std::iota(order.begin(), order.end(), size_t{0});
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
      std::vector<int32_t> sorted_ids(n);
      std::vector<float> sorted_vals(n);
      for (size_t k = 0; k < n; ++k) sorted_ids[k] = ids[order[k]], sorted_vals[k] = vals[order[k]];
      std::copy(sorted_ids.begin(), sorted_ids.end(), ids);
      std::copy(sorted_vals.begin(), sorted_vals.end(), vals);
    }
    if (auto dup = std::adjacent_find(ids, ids + n); dup != ids + n)
      return problem("feature id " + std::to_string(*dup) + " appears twice");
    return {};
  }

  std::string name_;
  uint64_t size_bound_;
  int64_t line_no_ = 0;
  sparse_dataset d_;
};

// What read_xc would refuse in one CSR half of a dataset (its offsets, and
// ids that must lie in [0, bound)), or nothing. what names the half.
caf::error check_rows(const std::vector<int64_t>& offsets, const std::vector<int32_t>& ids, int64_t samples,
                      int64_t bound, const char* what) {
  const std::string w = what;
  if (static_cast<int64_t>(offsets.size()) != samples + 1 || offsets.front() != 0 ||
      offsets.back() != static_cast<int64_t>(ids.size()))
    return fail("cannot write: the " + w + " offsets do not describe " + std::to_string(samples) + " rows of " +
                std::to_string(ids.size()) + " ids");
  for (int64_t r = 0; r < samples; ++r) {
    const int64_t a = offsets[r], b = offsets[r + 1];
    if (a > b) return fail("cannot write: " + w + " offsets decrease at row " + std::to_string(r));
    for (int64_t k = a; k < b; ++k) {
      if (ids[k] < 0 || ids[k] >= bound)
        return fail("cannot write: row " + std::to_string(r) + " has " + w + " id " + std::to_string(ids[k]) +
                    " out of range [0, " + std::to_string(bound) + ")");
      if (k > a && ids[k] <= ids[k - 1])
        return fail("cannot write: row " + std::to_string(r) + "'s " + w + " ids are not strictly ascending");
    }
  }
  return {};
}

caf::error check_writable(const sparse_dataset& d) {
  if (d.samples < 1 || d.samples > xc_max_samples || d.features < 1 || d.features > xc_max_features ||
      d.labels < 1 || d.labels > xc_max_labels)
    return fail("cannot write: counts " + std::to_string(d.samples) + " " + std::to_string(d.features) + " " +
                std::to_string(d.labels) + " are outside [1, 2^26]");
  if (auto err = check_rows(d.feature_offsets, d.feature_ids, d.samples, d.features, "feature")) return err;
  if (auto err = check_rows(d.label_offsets, d.label_ids, d.samples, d.labels, "label")) return err;
  if (d.values.size() != d.feature_ids.size())
    return fail("cannot write: " + std::to_string(d.values.size()) + " values for " +
                std::to_string(d.feature_ids.size()) + " feature ids");
  for (size_t k = 0; k < d.values.size(); ++k)
    if (!std::isfinite(d.values[k])) return fail("cannot write: value " + std::to_string(k) + " is not finite");
  for (int64_t r = 0; r < d.samples; ++r)
    if (d.feature_offsets[r] == d.feature_offsets[r + 1] && d.label_offsets[r] == d.label_offsets[r + 1])
      return fail("cannot write: row " + std::to_string(r) + " has neither labels nor features");
  return {};
}

}  // namespace

caf::expected<sparse_dataset> parse_xc(std::string_view text, const std::string& name) {
  xc_reader reader(name, text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    if (nl - pos > xc_max_line_bytes) return reader.too_long();
    if (auto err = reader.line(text.substr(pos, nl - pos))) return err;
    pos = nl + 1;
  }
  return reader.finish();
}

caf::expected<sparse_dataset> read_xc(const std::string& path) {
  auto opened = open_regular(path);
  if (!opened) return std::move(opened.error());
  auto& [f, size] = *opened;
  xc_reader reader(path, size);
  std::string carry;  // the start of a line the last chunk cut
  std::vector<char> chunk(size_t{1} << 20);
  for (;;) {
    const size_t got = std::fread(chunk.data(), 1, chunk.size(), f.get());
    if (got < chunk.size() && std::ferror(f.get()))
      return fail(path + ": read error: " + std::strerror(errno ? errno : EIO));
    if (got == 0) break;
    std::string_view buf(chunk.data(), got);
    size_t pos = 0;
    for (size_t nl; (nl = buf.find('\n', pos)) != std::string_view::npos; pos = nl + 1) {
      auto piece = buf.substr(pos, nl - pos);
      if (carry.size() + piece.size() > xc_max_line_bytes) return reader.too_long();
      if (carry.empty()) {
        if (auto err = reader.line(piece)) return err;
      } else {
        carry.append(piece);
        if (auto err = reader.line(carry)) return err;
        carry.clear();
      }
    }
    carry.append(buf.substr(pos));
    if (carry.size() > xc_max_line_bytes) return reader.too_long();
  }
  if (!carry.empty())
    if (auto err = reader.line(carry)) return err;
  return reader.finish();
}

caf::expected<std::string> format_xc(const sparse_dataset& d) {
  if (auto err = check_writable(d)) return err;
  std::string out = std::to_string(d.samples) + " " + std::to_string(d.features) + " " +
                    std::to_string(d.labels) + "\n";
  char buf[64];
  for (int64_t r = 0; r < d.samples; ++r) {
    for (int64_t k = d.label_offsets[r]; k < d.label_offsets[r + 1]; ++k) {
      if (k > d.label_offsets[r]) out += ',';
      out += std::to_string(d.label_ids[k]);
    }
    // A row without labels still starts with the space that says so.
    for (int64_t k = d.feature_offsets[r]; k < d.feature_offsets[r + 1]; ++k) {
      out += ' ';
      out += std::to_string(d.feature_ids[k]);
      out += ':';
      const auto res = std::to_chars(buf, buf + sizeof buf, d.values[k]);
      out.append(buf, res.ptr);
    }
    out += '\n';
  }
  return out;
}

caf::error write_xc(const sparse_dataset& d, const std::string& path) {
  auto text = format_xc(d);
  if (!text) return std::move(text.error());
  return write_file_atomically(path, {*text}, "extreme-classification data");
}

caf::expected<xc_split> load_xc_dir(const std::string& dir) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  auto train = read_xc(base + "train.txt");
  if (!train) return std::move(train.error());
  auto test = read_xc(base + "test.txt");
  if (!test) return std::move(test.error());
  if (train->features != test->features || train->labels != test->labels)
    return fail(dir + ": train.txt has " + std::to_string(train->features) + " features and " +
                std::to_string(train->labels) + " labels but test.txt has " + std::to_string(test->features) +
                " and " + std::to_string(test->labels));
  return xc_split{std::move(*train), std::move(*test)};
}

namespace {
const char* const built_tasks[] = {"gcide-nextword", "spell-670k"};
}

bool is_xc_dataset(const std::string& spec) {
  return spec.rfind("xc:", 0) == 0 || std::find(std::begin(built_tasks), std::end(built_tasks), spec) !=
                                           std::end(built_tasks);
}

caf::expected<xc_split> load_xc_dataset(const std::string& spec, const std::string& data_dir) {
  if (spec.rfind("xc:", 0) == 0) {
    if (spec.size() == 3) return fail("--dataset=xc:DIR needs a directory holding train.txt and test.txt");
    return load_xc_dir(spec.substr(3));
  }
  if (!is_xc_dataset(spec))
    return fail("unknown extreme-classification dataset '" + spec +
                "' (known: gcide-nextword, spell-670k, xc:DIR)");
  const std::string dir = data_dir + "/" + spec;
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/train.txt", ec) || !std::filesystem::exists(dir + "/test.txt", ec))
    return fail(spec + " is not built in " + data_dir + ": run `python3 training/data/build_xc_datasets.py --out " +
                data_dir + " " + spec + "` from the repository (it needs the Debian packages " +
                (spec == "spell-670k" ? "wamerican-insane" : "dict-gcide") + ")");
  return load_xc_dir(dir);
}

std::string default_xc_data_dir() {
  const char* env = std::getenv("CLEAVE_XC_DATA");
  return env && *env ? env : "build/xc-data";
}

}  // namespace cleave
