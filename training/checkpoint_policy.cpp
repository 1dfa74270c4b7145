#include "training/checkpoint_policy.hpp"

#include <spdlog/spdlog.h>

#include "schema/errors.hpp"

namespace cleave {

caf::expected<on_checkpoint_error> parse_on_checkpoint_error(const std::string& text) {
  if (text == "stop") return on_checkpoint_error::stop;
  if (text == "continue") return on_checkpoint_error::go_on;
  return fail("--on-checkpoint-error must be continue or stop, got '" + text + "'");
}

const char* to_string(on_checkpoint_error policy) {
  return policy == on_checkpoint_error::stop ? "stop" : "continue";
}

checkpoint_failure_verdict after_failed_checkpoint(on_checkpoint_error policy, int64_t step, const std::string& why,
                                                   const std::string& newest_good, bool last) {
  const std::string flag = std::string("--on-checkpoint-error=") + to_string(policy);
  const std::string where = newest_good.empty() ? "no earlier checkpoint is on disk"
                                                : "--resume continues from " + newest_good;
  const std::string failed = "checkpoint at step " + std::to_string(step) + " failed: " + why;
  if (policy == on_checkpoint_error::stop)
    return {checkpoint_failure_verdict::stop, failed + "; stopping (" + flag + "); " + where};
  if (last)
    return {checkpoint_failure_verdict::fail_at_end,
            "the final " + failed + "; the trained state is not on disk (" + flag + " finished the run); " + where};
  return {checkpoint_failure_verdict::go_on, failed + "; training goes on (" + flag + "); "
                  + (newest_good.empty() ? std::string("no checkpoint is on disk yet")
                                         : "the newest checkpoint is still " + newest_good)};
}

caf::expected<std::string> newest_valid_checkpoint(const std::vector<std::string>& files, const std::string& dir,
                                                   const std::function<checkpoint_candidate(const std::string&)>& take) {
  if (files.empty()) return fail("--resume: no checkpoint in " + dir);
  std::string newest_reason;
  for (const auto& path : files) {
    auto verdict = take(path);
    if (verdict.kind == checkpoint_candidate::taken) return path;
    if (verdict.kind == checkpoint_candidate::refused) return verdict.why;
    // A damaged newest file must not cost the older good one.
    const std::string reason = describe(verdict.why);
    spdlog::warn("--resume: {}; trying an older one", reason);
    if (newest_reason.empty()) newest_reason = reason;
  }
  return fail("--resume: none of the " + std::to_string(files.size()) + " checkpoint(s) in " + dir
              + " can be used; the newest: " + newest_reason);
}

}  // namespace cleave
