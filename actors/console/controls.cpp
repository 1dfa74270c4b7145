#include "actors/console/controls.hpp"

#include <charconv>
#include <fstream>

#include "schema/errors.hpp"

namespace cleave {

const char* to_string(control_kind k) {
  switch (k) {
    case control_kind::drain: return "drain";
    case control_kind::pause: return "pause";
    case control_kind::resume: return "resume";
    case control_kind::checkpoint: return "checkpoint";
  }
  return "?";
}

std::optional<control_request> control_of_path(std::string_view path) {
  constexpr std::string_view prefix = "/api/control/";
  if (path.substr(0, prefix.size()) != prefix) return std::nullopt;
  const auto what = path.substr(prefix.size());
  if (what == "pause") return control_request{control_kind::pause};
  if (what == "resume") return control_request{control_kind::resume};
  if (what == "checkpoint") return control_request{control_kind::checkpoint};
  constexpr std::string_view drain = "drain/";
  if (what.substr(0, drain.size()) != drain) return std::nullopt;
  const auto id = what.substr(drain.size());
  int32_t device = -1;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), device);
  if (id.empty() || ec != std::errc{} || end != id.data() + id.size() || device < 0)
    return std::nullopt;
  return control_request{control_kind::drain, device};
}

caf::expected<std::string> read_admin_token(const std::string& spec) {
  constexpr size_t max_token_bytes = 256;
  std::string token = spec;
  std::string where = "--admin-token";
  if (!spec.empty() && spec.front() == '@') {
    where = "--admin-token file " + spec.substr(1);
    std::ifstream in(spec.substr(1), std::ios::binary);
    if (!in) return fail("cannot read " + where);
    token.assign(max_token_bytes + 2, '\0');
    in.read(token.data(), static_cast<std::streamsize>(token.size()));
    token.resize(static_cast<size_t>(in.gcount()));
    token = token.substr(0, token.find_first_of("\r\n"));
  }
  if (token.empty()) return fail(where + " holds no token");
  if (token.size() > max_token_bytes)
    return fail(where + ": the token is longer than " + std::to_string(max_token_bytes) + " bytes");
  for (char c : token)
    if (c <= ' ' || c > '~')
      return fail(where + ": the token may hold printable ASCII only, without spaces");
  return token;
}

bool same_secret(std::string_view given, std::string_view secret) {
  unsigned diff = given.size() == secret.size() ? 0u : 1u;
  // Every byte of the secret is looked at whatever `given` holds.
  for (size_t i = 0; i < secret.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= g ^ static_cast<unsigned char>(secret[i]);
  }
  return diff == 0;
}

std::optional<control_answer> refuse_unauthorized(std::string_view token,
                                                  std::string_view authorization) {
  if (token.empty())
    return control_answer{403, "controls are off: start the console with --admin-token\n"};
  constexpr std::string_view scheme = "Bearer ";
  if (authorization.substr(0, scheme.size()) != scheme)
    return control_answer{401, "a control needs the header Authorization: Bearer <admin token>\n"};
  if (!same_secret(authorization.substr(scheme.size()), token))
    return control_answer{401, "wrong admin token\n"};
  return std::nullopt;
}

std::optional<control_answer> refuse_for_loop(const control_request& req, const loop_state& loop) {
  if (req.kind == control_kind::drain) return std::nullopt;
  if (!loop.attached) return control_answer{409, "no training loop is running here\n"};
  if (req.kind == control_kind::checkpoint && !loop.has_checkpoint_dir)
    return control_answer{409, "this run has no --checkpoint-dir: nowhere to write a checkpoint\n"};
  if (req.kind == control_kind::pause && loop.paused)
    return control_answer{409, "training is already paused\n"};
  if (req.kind == control_kind::resume && !loop.paused)
    return control_answer{409, "training is not paused\n"};
  return std::nullopt;
}

}  // namespace cleave
