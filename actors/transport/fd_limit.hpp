#pragma once
// A listener for thousands of connections (or a swarm of clients) needs as
// many descriptors; distributions start processes at a soft limit of 1024.

#include <cstddef>

#include <caf/error.hpp>

namespace cleave::transport {

// Raises the soft RLIMIT_NOFILE to at least `fds` if the hard limit allows;
// otherwise raises it to the hard limit and says how short it falls.
caf::error ensure_fd_limit(size_t fds);

}  // namespace cleave::transport
