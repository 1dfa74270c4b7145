@0xe360148eb7a05c81;
# A training checkpoint: everything needed to continue bit-for-bit.
# On disk it follows a fixed header (magic, version, payload length, CRC-32);
# see schema/checkpoint_file.hpp.

using import "tensor.capnp".Tensor;

struct ModelConfig {
  kind @0 :Text;                 # "mlp" or "gpt"
  # mlp
  inputs @1 :UInt64;
  hidden @2 :List(UInt64);
  classes @3 :UInt64;
  # gpt
  vocab @4 :UInt64;
  context @5 :UInt64;
  dModel @6 :UInt64;
  layers @7 :UInt64;
  heads @8 :UInt64;
  ffn @9 :UInt64;
}

struct Parameter {
  name @0 :Text;
  value @1 :Tensor;
  adamM @2 :Tensor;              # AdamW first moment
  adamV @3 :Tensor;              # AdamW second moment
}

struct ShardFile {
  name @0 :Text;
  checksum @1 :UInt32;
  bytes @2 :UInt64;
}

# With PS shard processes: the shards' own files hold the AdamW moments
# (the parameters' adamM and adamV are then empty).
struct ShardSet {
  count @0 :UInt32;
  id @1 :UInt64;
  files @2 :List(ShardFile);
}

struct Checkpoint {
  model @0 :ModelConfig;
  dataset @1 :Text;
  seed @2 :UInt64;
  batch @3 :UInt64;
  step @4 :UInt64;               # optimizer steps taken
  epoch @5 :UInt64;              # data position: epoch ...
  indexInEpoch @6 :UInt64;       # ... and samples consumed within it
  parameters @7 :List(Parameter);
  restarts @8 :UInt64;           # times training was resumed on the way here
  shardSet @9 :ShardSet;         # count 0 (or absent): no shard files
}
