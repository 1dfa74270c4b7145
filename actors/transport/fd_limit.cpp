#include "actors/transport/fd_limit.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <string>

#include "schema/errors.hpp"

namespace cleave::transport {

caf::error ensure_fd_limit(size_t fds) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return fail("cannot read the open-file limit");
  const auto want = static_cast<rlim_t>(fds);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur >= want) return caf::none;
  if (lim.rlim_cur == RLIM_INFINITY) return caf::none;
  const rlim_t raised = lim.rlim_max == RLIM_INFINITY ? want : std::min(want, lim.rlim_max);
  rlimit next{raised, lim.rlim_max};
  if (raised > lim.rlim_cur && ::setrlimit(RLIMIT_NOFILE, &next) != 0)
    return fail("cannot raise the open-file limit to " + std::to_string(raised));
  if (raised < want)
    return fail("the open-file limit is " + std::to_string(raised) + " (hard), short of the "
                + std::to_string(fds) + " descriptors needed; raise it (ulimit -n)");
  return caf::none;
}

}  // namespace cleave::transport
