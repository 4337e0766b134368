#pragma once

#include <vector>

#include "src/kernels/ops.h"

// attn's own matrix product, for every product of many rows by a weight matrix (prompts,
// encoders, attention over a prompt): GEMM as BLIS and MLAS shape it. The weight matrix B is
// read into packed panels of tile_columns columns in f32 (converted from its own type on the
// way, so one micro-kernel serves every element-wise type and both block types; transposed through
// registers from nn.Linear's [out, in]), and a register-blocked micro-kernel multiplies a tile of
// tile_rows rows of A by one panel: each element of B loaded into a register serves tile_rows rows,
// each broadcast element of A a whole panel's row. B is packed at each call, which costs one pass
// over the weights (a product of 128 rows reads each weight 128 times). (linear_forward multiplies
// by q8_0 and q4_0 weights in integers instead: gemm_int8.h.)
//
// The micro-kernel exists once per instruction set (gemm_simd.h, instantiated in
// weight_kernels_avx2.cpp and weight_kernels_avx512.cpp; a scalar one in
// weight_kernels_scalar.cpp), and gemm_kernels() picks the widest the CPU has, at run time.

namespace attn {

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
};

// The micro-kernels of the widest instruction set this CPU has (see cpu_features.h).
const GemmKernels& gemm_kernels();

// The micro-kernels of every instruction set this CPU runs, narrowest (scalar) first.
std::vector<const GemmKernels*> runnable_gemm_kernels();

// Each instruction set's, for the tests; the vector ones exist on x86-64 builds only, and run only
// on a CPU that has their instructions.
const GemmKernels& scalar_gemm_kernels();
#if ATTN_KERNELS_X86
const GemmKernels& avx2_gemm_kernels();
const GemmKernels& avx512_gemm_kernels();
#endif

// The matrix B of a product: a Linear's weight seen as (in, out) whatever its stored layout
// (Linear::in_out_layout); its bias is not used here.
//
// c[r, j] += sum_k a[r, k] B[k, j] for r in [0, rows), j in [begin, end), k in [0, b.in), on the
// calling thread. c and a are row-major with the given row strides; c's columns are numbered as
// B's (c + j is column j).
void gemm_columns(const GemmKernels& kernels, float* c, long c_stride, const float* a,
                  long a_stride, int rows, const Linear& b, int begin, int end);

}  // namespace attn
