#include "training/process_memory.hpp"

#include <fstream>
#include <string>

namespace cleave {

uint64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  return 0;
}

}  // namespace cleave
