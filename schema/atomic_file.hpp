#pragma once
// The one way Cleave writes a file that must never be seen half written
// (checkpoints, reports): the bytes go to a hidden temporary file in the same
// folder (".NAME.tmp"), which is fsync'd and renamed over NAME, and then the
// folder is fsync'd, so after a crash at any instant the path holds either
// the old file or the whole new one.

#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>

namespace cleave {

// Writes the concatenation of `parts` to `path`. `what` names the file in
// errors ("report", "checkpoint"); every error names the path and the cause.
// On failure the temporary is removed and the old file is left as it was.
caf::error write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts,
                                 const char* what);

// The temporary write_file_atomically uses for `path`: a crashed writer may
// leave one behind.
std::string atomic_temporary_of(const std::string& path);

}  // namespace cleave
