#include "actors/gateway/join_tokens.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "schema/atomic_file.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr size_t max_file_bytes = size_t{4} << 20;

bool valid(const std::string& t) {
  if (t.size() < 16 || t.size() > 256) return false;
  for (char c : t)
    if (c <= ' ' || c > '~') return false;
  return true;
}

}  // namespace

caf::expected<join_tokens> join_tokens::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read the join tokens " + path);
  std::string text(max_file_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return parse(text, path);
}

caf::expected<join_tokens> join_tokens::parse(const std::string& text, const std::string& path) {
  if (text.size() > max_file_bytes) return fail("join tokens " + path + ": over 4 MiB");
  std::istringstream in(text);
  std::string line;
  join_tokens out;
  out.path_ = path;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!valid(line))
      return fail("join tokens " + path + ", line " + std::to_string(n)
                  + ": a token is 16 to 256 printable characters without spaces");
    out.tokens_.insert(line);
  }
  return out;
}

caf::expected<bool> join_tokens::consume(const std::string& token) {
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return false;
  std::ostringstream rest;
  rest << "# one-time join tokens; each line is struck once used\n";
  for (const auto& t : tokens_)
    if (t != token) rest << t << '\n';
  const std::string text = rest.str();
  if (auto err = write_file_atomically(path_, {text}, "join tokens")) return err;
  tokens_.erase(it);
  return true;
}

}  // namespace cleave
