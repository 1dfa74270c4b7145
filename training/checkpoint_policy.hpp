#pragma once
// Two decisions about checkpoints, kept apart from the disk so they are
// tested directly: what a run does when a checkpoint cannot be written (a
// full or lost file system, a PS shard process that could not write its
// file), and which checkpoint `--resume` takes when the newest is damaged.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace cleave {

// --on-checkpoint-error. stop (the default) ends the run at the failed
// checkpoint: the failure is rarely transient (a full disk stays full), and
// a run going on without checkpoints puts ever more steps at risk, where
// stopping costs at most --checkpoint-every steps and --resume takes the
// last good checkpoint once the disk is fixed. go_on ("continue") keeps a
// fleet busy while an operator frees space; every later checkpoint is tried
// again.
enum class on_checkpoint_error { stop, go_on };

caf::expected<on_checkpoint_error> parse_on_checkpoint_error(const std::string& text);
const char* to_string(on_checkpoint_error policy);

struct checkpoint_failure_verdict {
  enum action_t {
    go_on,        // log `line` and train on
    stop,         // end the run now with `line` as its error
    fail_at_end,  // finish the run (evaluation, report), then end it with `line` as its error
  } action = stop;
  std::string line;  // one line: the step, why, what happens, where the last good checkpoint is
};

// The checkpoint of `step` failed for `why`; `newest_good` is the newest
// checkpoint file still on disk (empty: none). `last`: the checkpoint of
// the final step, the run's product: under go_on the run finishes, but its
// exit says that the trained state is not on disk.
checkpoint_failure_verdict after_failed_checkpoint(on_checkpoint_error policy, int64_t step, const std::string& why,
                                                   const std::string& newest_good, bool last);

// --resume's verdict on one checkpoint file.
struct checkpoint_candidate {
  enum kind_t { taken, skipped, refused } kind = taken;
  // skipped: why this file (or its set) cannot be used, a phrase naming it
  // ("refusing checkpoint PATH: ..."); the next older one is tried. refused: why the run must not resume at
  // all (a checkpoint of another model, dataset or seed).
  caf::error why;
};

// Offers `files` (newest first, as list_checkpoints gives them) to `take`
// in turn and returns the first one taken. Every skipped file is logged
// with its reason; when none is taken, a one-line error names the directory
// and the newest file's reason. An empty list is an error too: the caller
// decides first whether no checkpoint at all means a fresh start.
caf::expected<std::string> newest_valid_checkpoint(const std::vector<std::string>& files, const std::string& dir,
                                                   const std::function<checkpoint_candidate(const std::string&)>& take);

}  // namespace cleave
