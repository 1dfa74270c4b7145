@0xb72671b28468f14c;
# What a device declares about itself when it joins; the planner corrects
# these figures with what it measures.

struct DeviceProfile {
  name @0 :Text;                 # preset or user label, e.g. "phone"
  flops @1 :Float64;             # sustained float32 FLOP/s for GEMM tiles
  memoryBytes @2 :UInt64;        # largest working set a tile may use
  downlinkBytesPerSec @3 :Float64;
  uplinkBytesPerSec @4 :Float64;
  latencySeconds @5 :Float64;    # one-way
}
