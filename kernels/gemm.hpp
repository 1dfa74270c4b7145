#pragma once
// The one entry point for every large matrix product in Cleave.
//
// Models never multiply matrices any other way: each product is tagged with
// the layer and role it plays, and handed to a gemm_engine. The local engine
// runs it here; the distributed runtime's engine cuts it into sub-GEMM tiles
// for devices. Keeping the tag lets the runtime reuse operand blocks between
// the forward product and the two backward products of the same layer.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor.hpp"

namespace cleave {

enum class gemm_role : uint8_t {
  forward = 0,      // Y = X W
  grad_input = 1,   // dX = dY W^T
  grad_weight = 2,  // dW = X^T dY   (K = tokens)
  attn_scores = 3,  // S = Q K^T     (per head)
  attn_values = 4,  // O = P V       (per head)
  attn_grad = 5,    // the four attention backward products
};

struct gemm_tag {
  uint32_t layer = 0;  // model-defined product index, unique within a step
  gemm_role role = gemm_role::forward;
  // The weight operand's id in the model's parameter store (its value in
  // forward and grad_input, its gradient in grad_weight), or -1: an engine
  // that owns the weights' slices (the sharded PS) finds it by this id.
  int32_t weight = -1;
};

// One product C = op(A) * op(B) + beta * C.
template <class T>
struct gemm_job {
  gemm_tag tag;
  const_view<T> a;
  bool trans_a = false;
  const_view<T> b;
  bool trans_b = false;
  mut_view<T> c;
  T beta = T(0);
};

// C = op(A) * op(B) + beta * C, with op(X) = X or X^T.
template <class T>
class gemm_engine {
 public:
  virtual ~gemm_engine() = default;
  virtual void gemm(gemm_tag tag, const_view<T> a, bool trans_a, const_view<T> b,
                    bool trans_b, mut_view<T> c, T beta) = 0;
  // Products that do not read each other's outputs (a layer's dX and dW): an
  // engine may run them at the same time. Each one's numbers are as if it
  // ran alone.
  virtual void gemm_batch(const std::vector<gemm_job<T>>& jobs) {
    for (const auto& j : jobs) gemm(j.tag, j.a, j.trans_a, j.b, j.trans_b, j.c, j.beta);
  }
  // Whether the engine computes an m x n product with inner dimension k and
  // this tag right here, through gemm_local, without keeping state for it.
  // A caller with many independent such products (attention's heads) may
  // then run them at once on its own threads through gemm_local, and hand
  // the time they took to add_local_seconds. An engine that cannot tell
  // says no, and gets every product through gemm.
  virtual bool computes_here(gemm_tag, int64_t /*m*/, int64_t /*n*/, int64_t /*k*/) {
    return false;
  }
  virtual void add_local_seconds(double /*seconds*/, int64_t /*products*/) {}
  // Whether the engine keeps the parameters' AdamW moments, and the
  // gradients of the weights only its products use, elsewhere (PS shards,
  // actors/ps/shards/sharded_ps.hpp): a model then allocates neither, and a
  // product into such a gradient names it by its weight id and shape alone.
  virtual bool keeps_parameter_state() const { return false; }
};

// Runs on this process's cores through Eigen (threads: set_compute_threads).
template <class T>
class local_gemm_engine final : public gemm_engine<T> {
 public:
  void gemm(gemm_tag tag, const_view<T> a, bool trans_a, const_view<T> b, bool trans_b,
            mut_view<T> c, T beta) override;
  bool computes_here(gemm_tag, int64_t, int64_t, int64_t) override { return true; }
};

// The plain product both engines bottom out in; also what a device computes
// for its tile.
template <class T>
void gemm_local(const_view<T> a, bool trans_a, const_view<T> b, bool trans_b, mut_view<T> c,
                T beta);

template <class T>
gemm_engine<T>& default_gemm_engine();

// Threads used by Eigen's GEMM (and the OpenMP loops in kernels/).
void set_compute_threads(int n);
int compute_threads();
// Threads inside one Eigen GEMM only (process-wide in Eigen). The distributed
// runtime sets 1: its parallelism comes from many tiles running at once on
// the actor scheduler's threads, and nested teams would oversubscribe cores.
void set_gemm_threads(int n);

// The cache sizes (bytes) Eigen sizes its GEMM blocks from, pinned for every
// process (gemm.cpp): the K blocking sets the summation order, so the same
// product gave other bits on a CPU with other caches. They are those of the
// machine that recorded the golden losses (tests/golden/): 48 KiB L1d,
// 2 MiB L2, 480 MiB L3 as the CPUID leaf Eigen reads reports them.
struct gemm_cache_sizes {
  std::ptrdiff_t l1, l2, l3;
};
inline constexpr gemm_cache_sizes gemm_blocking_caches{48 << 10, 2 << 20, 480 << 20};

// The SIMD instruction sets the kernels were compiled for, sorted and space
// separated ("avx avx2 fma"; empty for SSE2 only). With the blocking pinned
// (gemm.cpp) and the thread count given, these and the compiler decide a
// product's bits.
std::string gemm_instruction_sets();
// The CPU model the build compiled for, as the compiler resolved -march
// ("znver3"; "x86-64" for a portable build). Two models with the same sets
// trained to other bits from step 2 on (tests/cli/golden.sh), so golden
// bits hold for one model.
std::string gemm_cpu_model();

}  // namespace cleave
