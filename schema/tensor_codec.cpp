#include "schema/tensor_codec.hpp"

#include <cstring>

#include "schema/errors.hpp"

namespace cleave {

static_assert(sizeof(float) == 4, "float32 tensors");

void encode_tensor(const tensor& t, Tensor::Builder out) {
  out.setRows(static_cast<uint64_t>(t.rows()));
  out.setCols(static_cast<uint64_t>(t.cols()));
  const auto* bytes = reinterpret_cast<const capnp::byte*>(t.data());
  const size_t total = static_cast<size_t>(t.size()) * sizeof(float);
  const size_t n_chunks = (total + max_chunk_bytes - 1) / max_chunk_bytes;
  auto chunks = out.initChunks(static_cast<unsigned>(n_chunks));
  for (size_t i = 0; i < n_chunks; ++i) {
    const size_t off = i * max_chunk_bytes;
    const size_t len = std::min(max_chunk_bytes, total - off);
    chunks.set(static_cast<unsigned>(i), kj::arrayPtr(bytes + off, len));
  }
}

caf::expected<tensor> decode_tensor(Tensor::Reader in, const std::string& what) {
  const uint64_t rows = in.getRows();
  const uint64_t cols = in.getCols();
  if (rows > max_tensor_elements || cols > max_tensor_elements
      || (rows != 0 && cols > max_tensor_elements / rows))
    return fail(what + ": tensor shape " + std::to_string(rows) + "x" + std::to_string(cols)
                + " exceeds the size limit");
  const uint64_t want = rows * cols * sizeof(float);
  uint64_t have = 0;
  auto chunks = in.getChunks();
  for (auto chunk : chunks) {
    if (chunk.size() > max_chunk_bytes)
      return fail(what + ": tensor chunk of " + std::to_string(chunk.size()) + " bytes exceeds "
                  + std::to_string(max_chunk_bytes));
    have += chunk.size();
  }
  if (have != want)
    return fail(what + ": tensor " + std::to_string(rows) + "x" + std::to_string(cols) + " needs "
                + std::to_string(want) + " bytes, found " + std::to_string(have));
  tensor t(static_cast<int64_t>(rows), static_cast<int64_t>(cols));
  auto* dst = reinterpret_cast<capnp::byte*>(t.data());
  for (auto chunk : chunks) {
    if (chunk.size() == 0) continue;  // an empty tensor's data() is null: memcpy to null is UB
    std::memcpy(dst, chunk.begin(), chunk.size());
    dst += chunk.size();
  }
  return t;
}

}  // namespace cleave
