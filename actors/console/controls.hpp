#pragma once
// The operator's controls on the console's port, decided without an actor:
// which POST path is which control, whether the request carries the admin
// token, and whether the run can obey it now.
//
//   POST /api/control/drain/ID   the planner gives device ID no new work
//   POST /api/control/pause      the training loop waits before its next step
//   POST /api/control/resume     ... and goes on
//   POST /api/control/checkpoint a checkpoint at the next step boundary

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace cleave {

enum class control_kind { drain, pause, resume, checkpoint };

const char* to_string(control_kind k);

struct control_request {
  control_kind kind = control_kind::pause;
  int32_t device = -1;  // drain only
};

// The control a POST path names; nullopt for any other path.
std::optional<control_request> control_of_path(std::string_view path);

// An answer to a control that is not carried out (or, status 200, one that is).
struct control_answer {
  int status = 200;
  std::string text;
};

// Whether `authorization` (the request's Authorization field) carries
// `token` as "Bearer TOKEN". The comparison takes the same time wherever the
// two differ. Refused: 403 when no token is configured (controls are off),
// 401 when it is missing or wrong.
std::optional<control_answer> refuse_unauthorized(std::string_view token,
                                                  std::string_view authorization);

// The token --admin-token names: the value itself, or @FILE, the file's
// first line. Refused: empty, longer than 256 bytes, or holding anything
// but printable ASCII without spaces (it travels in a header).
caf::expected<std::string> read_admin_token(const std::string& spec);

// Equal strings, compared in a time that depends on `secret`'s length only.
bool same_secret(std::string_view given, std::string_view secret);

// What the console knows of the training loop.
struct loop_state {
  bool attached = false;            // a loop registered for controls
  bool has_checkpoint_dir = false;  // it can write checkpoints
  bool paused = false;              // asked to pause and not resumed since
};

// Why the loop cannot take `req` now (409), or nullopt. Drains go to the
// planner, which judges them itself.
std::optional<control_answer> refuse_for_loop(const control_request& req, const loop_state& loop);

}  // namespace cleave
