#pragma once
// How a shard process's device edge knows a device was welcomed by this job
// (docs/PS_SHARDS.md): the coordinator draws a secret per
// run and hands it to every shard it attaches; its welcome gives each device
// an HMAC-SHA256 of the id it was welcomed under, keyed by that secret; the
// device shows it in the join it sends a shard (the join's token field, as
// "job:ID:HEX"), and the shard checks it before the device meets its
// planner. Nobody without the secret can mint one, and a proof names one id.

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace cleave {

inline constexpr size_t job_secret_bytes = 32;

// job_secret_bytes from the OS's generator.
caf::expected<std::string> make_job_secret();
// The job's secret kept in `dir` (a coordinator's --checkpoint-dir) as
// `job-secret` (hex, readable by its owner only), so that a coordinator
// restarted with --resume is the same job to its shards and the devices'
// proofs: with `resume` and that file, the secret it holds (a malformed
// file is an error); otherwise a new secret, written there first.
caf::expected<std::string> kept_job_secret(const std::string& dir, bool resume);
// The proof for `device` under `secret`: 64 hex digits.
std::string prove_device(const std::string& secret, int32_t device);
// What a device puts in its join to a shard (header-only: devices link no gateway).
inline std::string job_token(int32_t device, const std::string& proof) {
  return "job:" + std::to_string(device) + ":" + proof;
}
// Checks a shard join's token against `secret`; the device id it proves, or why not.
caf::expected<int32_t> check_job_token(const std::string& secret, const std::string& token);

}  // namespace cleave
