#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "src/kernels/ops.h"

// attn's own matrix product, for every product of many rows by a weight matrix (prompts,
// encoders, attention over a prompt): GEMM as BLIS and MLAS shape it. The weight matrix B is
// read into packed panels of tile_columns columns in f32 (converted from its own type on the
// way, so one micro-kernel serves every element-wise type and both block types; transposed through
// registers from nn.Linear's [out, in]), and a register-blocked micro-kernel multiplies a tile of
// tile_rows rows of A by one panel: each element of B loaded into a register serves tile_rows rows,
// each broadcast element of A a whole panel's row. f32 weights in the weight files are packed
// once, at load (pack_weight_panels, Linear::panels); other weights at each call, which costs one
// pass over them. (linear_forward multiplies by q8_0 and q4_0 weights in integers instead:
// gemm_int8.h.)
//
// The micro-kernel exists once per instruction set (gemm_simd.h, instantiated in
// weight_kernels_avx2.cpp and weight_kernels_avx512.cpp; a scalar one in
// weight_kernels_scalar.cpp), and gemm_kernels() picks the widest the CPU has, at run time.
//
// Where the CPU has AVX512_BF16, products by bf16 weights whose Linear allows it (bf16_products:
// the user asked for bf16, --dtype bf16) are done in bf16 instead
// (Bf16GemmKernels, gemm_bf16_avx512.cpp): A is rounded to bf16 (nearest, ties to even), B's
// bf16 are packed as they are, and vdpbf16ps adds the exact products of bf16 pairs into f32
// sums, at twice the multiply-adds per instruction of f32. The result differs from the f32
// path's by the rounding of A (a relative 2^-9 per element). f16 weights stay on the f32 path:
// bf16 would drop 3 bits of their mantissa.

namespace attn {

// The bf16 micro-kernels. A panel holds tile_columns columns of B as pairs of k: the uint32 at
// (p, j) holds B[2p, j] in its low 16 bits and B[2p + 1, j] in its high 16 bits, so that one
// vdpbf16ps multiplies a pair of A's row (broadcast) by a pair of each of 16 columns. An odd
// depth ends on a pair whose high half is 0, in A and in B.
struct Bf16GemmKernels {
  int tile_rows = 0;     // rows of A and C per micro-kernel call (MR)
  int tile_columns = 0;  // columns of B and C per panel (NR)
  // pairs (rows, (depth + 1) / 2; rows pair_stride apart) = a (rows, depth; rows a_stride apart)
  // rounded to bf16, in pairs of k as a panel's.
  void (*round_rows)(uint32_t* pairs, long pair_stride, const float* a, long a_stride, int depth,
                     int rows);
  // panel ((depth + 1) / 2, tile_columns) = B from a matrix stored [out, in]: source (width,
  // depth; rows source_stride apart) is B's columns, each a stored row; the columns from `width`
  // to tile_columns zero.
  void (*pack_transposed)(uint32_t* panel, const uint16_t* source, long source_stride, int depth,
                          int width);
  // panel ((depth + 1) / 2, tile_columns) = B from a matrix stored [in, out]: source (depth,
  // width; rows source_stride apart) is B's rows; the columns from `width` to tile_columns zero.
  void (*pack_interleaved)(uint32_t* panel, const uint16_t* source, long source_stride, int depth,
                           int width);
  // c (rows, tile_columns; rows apart by c_stride) += a (rows, pairs; rows apart by a_stride) .
  // panel (pairs, tile_columns), for 1 <= rows <= tile_rows, a and the panel in pairs of bf16.
  void (*multiply_tile)(float* c, long c_stride, const uint32_t* a, long a_stride,
                        const uint32_t* panel, int pairs, int rows);
  // `iterations` rounds of independent vdpbf16ps on 12 registers; returns the floating-point
  // operations done (4 per lane: 2 products and 2 additions). attn bench --kernels times it for
  // the core's bf16 peak.
  double (*peak_loop)(long iterations);
};

struct GemmKernels {
  int tile_rows = 0;     // rows of A and C per micro-kernel call (MR)
  int tile_columns = 0;  // columns of B and C per panel (NR)
  // c (rows, tile_columns; rows apart by c_stride) += a (rows, depth; rows apart by a_stride)
  // . panel (depth, tile_columns), for 1 <= rows <= tile_rows.
  void (*multiply_tile)(float* c, long c_stride, const float* a, long a_stride, const float* panel,
                        int depth, int rows);
  // panel (depth, tile_columns) = the transpose of source (width, depth; rows source_stride
  // apart), the columns from `width` to tile_columns zero: a panel of B from a matrix stored
  // [out, in].
  void (*pack_transposed)(float* panel, const float* source, long source_stride, int depth,
                          int width);
  // `iterations` rounds of independent multiply-adds on 10 registers (enough to hide their
  // latency on two ports); returns the floating-point operations done. attn bench --kernels
  // times it for the core's peak.
  double (*peak_loop)(long iterations);
  const char* name = "";
  // Products by bf16 weights in bf16, or nullptr: bf16 weights then go through the f32 panels as
  // the other types do.
  const Bf16GemmKernels* bf16 = nullptr;
};

// The micro-kernels of the widest instruction set this CPU has (see cpu_features.h).
const GemmKernels& gemm_kernels();

// The micro-kernels of every instruction set this CPU runs, narrowest (scalar) first.
std::vector<const GemmKernels*> runnable_gemm_kernels();

// Each instruction set's, for the tests; the vector ones exist on x86-64 builds only, and run only
// on a CPU that has their instructions. avx512_bf16 is avx512's with bf16 products by bf16
// weights; where the CPU has AVX512_BF16, it takes avx512's place among the runnable kernels.
const GemmKernels& scalar_gemm_kernels();
#if ATTN_KERNELS_X86
const GemmKernels& avx2_gemm_kernels();
const GemmKernels& avx512_gemm_kernels();
const GemmKernels& avx512_bf16_gemm_kernels();
#endif

// Floats in the panels pack_weight_panels writes for b: ceil(b.out / tile_columns) panels of
// b.in x tile_columns.
long weight_panels_size(const GemmKernels& kernels, const Linear& b);

// panels (ceil(b.out / tile_columns), b.in, tile_columns) = b's weight seen as B (in, out), as
// the micro-kernels read it, the columns past b.out zero: what gemm_columns otherwise packs at
// every call, a depth block at a time (Linear::panels, with packed_by = &kernels).
void pack_weight_panels(const GemmKernels& kernels, float* panels, const Linear& b);

// uint32 pairs in the panels pack_bf16_weight_panels writes for b: ceil(b.out / tile_columns)
// panels of (b.in + 1) / 2 pairs x tile_columns.
long bf16_weight_panels_size(const Bf16GemmKernels& kernels, const Linear& b);

// panels = b's bf16 weight seen as B (in, out) in the bf16 kernels' panels of pairs, each over
// the whole depth: what gemm_columns otherwise packs at every call, a depth block at a time
// (Linear::panels, with packed_by = &kernels).
void pack_bf16_weight_panels(const Bf16GemmKernels& kernels, uint32_t* panels, const Linear& b);

// The matrix B of a product: a Linear's weight seen as (in, out) whatever its stored layout
// (Linear::in_out_layout); its bias is not used here.
//
// c[r, j] += sum_k a[r, k] B[k, j] for r in [0, rows), j in [begin, end), k in [0, b.in), on the
// calling thread; with bf16 weights and kernels.bf16, a[r, k] is first rounded to bf16. c and a are
// row-major with the given row strides; c's columns are numbered as B's (c + j is column j). A B
// packed at load (Linear::panels) is read from its panels, with the sums of packing at the call,
// bit for bit; it must have been packed for `kernels` (for kernels.bf16, with bf16 products), and
// `begin` must be a multiple of tile_columns, else std::logic_error. With an activation, c's
// columns [begin, end) are then activation(c), applied as the epilogue (gemm_tiles.h).
void gemm_columns(const GemmKernels& kernels, float* c, long c_stride, const float* a,
                  long a_stride, int rows, const Linear& b, int begin, int end,
                  std::optional<Activation> activation = std::nullopt);

}  // namespace attn
