#pragma once
// One-time join tokens: a device that has no certificate yet proves it was
// invited by presenting one, and the ps, holding the job CA's key, signs its
// certificate request (actors/transport/certificates.hpp). A token works
// once: it is struck from the file before the certificate goes out, so a
// ps that restarts does not honour it again. Pure: a file and a set.
//
// File format: one token per line (16 to 256 printable characters, no
// spaces); blank lines and lines starting with '#' are skipped.
// `deploy/ca.sh tokens DIR N` makes them.

#include <set>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace cleave {

class join_tokens {
 public:
  static caf::expected<join_tokens> load(const std::string& path);
  // The same from the file's text; `path` is where consume() writes.
  static caf::expected<join_tokens> parse(const std::string& text, const std::string& path);
  // Strikes `token` from the set and the file; false (and nothing changes)
  // when it is not there. An error when the file cannot be rewritten: the
  // token is then not honoured either.
  caf::expected<bool> consume(const std::string& token);
  bool has(const std::string& token) const { return tokens_.count(token) > 0; }
  size_t left() const { return tokens_.size(); }

 private:
  std::string path_;
  std::set<std::string> tokens_;
};

}  // namespace cleave
