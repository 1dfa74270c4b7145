@0xacbd114d177255c6;
# A dense row-major float32 matrix. The bytes are little-endian IEEE-754.
# Cap'n Proto caps a Data blob at 2^29 bytes, so a tensor is stored as a list
# of chunks of at most `maxChunkBytes` (schema/tensor_codec.hpp) each.

struct Tensor {
  rows @0 :UInt64;
  cols @1 :UInt64;
  chunks @2 :List(Data);
}
