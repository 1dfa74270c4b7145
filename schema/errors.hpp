#pragma once
// Errors are values: every fallible call returns caf::expected<T> or
// caf::error built by fail(), and describe() turns one into the one-line
// reason a user reads. (Errors also cross the wire between actors, which is
// why they live beside the wire formats.)

#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace cleave {

inline caf::error fail(std::string reason) {
  return caf::make_error(caf::sec::runtime_error, std::move(reason));
}

inline std::string describe(const caf::error& err) {
  if (!err) return "no error";
  const auto& ctx = err.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0)) return ctx.get_as<std::string>(0);
  return caf::to_string(err);
}

}  // namespace cleave
