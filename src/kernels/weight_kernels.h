#pragma once

#include "src/kernels/weight_type.h"

// One table of kernels per weight type (the shape of ggml's type_traits_cpu): code that
// multiplies by a weight matrix asks weight_kernels(type) for the kernels of the matrix's type
// and never looks at its elements itself. Each kernel reads the weights in their own type,
// converts them in registers and accumulates in f32.
//
// Each instruction set has its own translation unit, compiled with its own flags:
//   weight_kernels_scalar.cpp  no SIMD flags; the fallback, built everywhere
//   weight_kernels_avx2.cpp    -mavx2 -mfma -mf16c (no AVX-512)       } built on every x86-64
//   weight_kernels_avx512.cpp  AVX-512 F, BW, DQ, VL and VNNI          } build (ATTN_KERNELS_X86)
// (and gemm_int8_avxvnni.cpp, AVX2 + AVX-VNNI, for the int8 GEMM of gemm_int8.h alone)
// and weight_kernels() picks the widest one the CPU has at run time (cpu_features.h), so that one
// binary runs on AVX2-only machines and uses AVX-512 where it exists, and an AVX-512 machine also
// runs the AVX2 kernels' tests. The vector
// kernels share their code (weight_kernels_simd.h) but not their instantiations; all three
// share only weight_type.h's inline conversions, which compute the same in any of them (and
// the scalar one calls quantize_q8_block, built with its own flags).
// A new weight type is a new WeightType and one more entry in each table.
//
// Every type has dot_rows and to_floats; accumulate_rows exists for the element-wise types
// (f32, f16, bf16) and is nullptr for the block types (q8_0, q4_0), whose matrices are always
// stored [out, in]. For a block type, `row_stride`, `in` and `n` count elements and are
// multiples of 32 (kQuantBlockSize), and `weight` is the start of a block: element i is
// storage_bytes(type, i) bytes after element 0. Their dot_rows quantizes x per block of 32 as
// q8_0 weights are (quantize_q8_block in weight_conversion.h, but keeping f32 scales), once per
// call, and multiplies integers.

namespace attn {

struct WeightKernels {
  // y[j] = sum_i W[j, i] x[i] for j in [0, n_rows), i in [0, in): the rows of W start
  // `row_stride` elements apart (nn.Linear's [out, in] layout; a one-row GEMV).
  //   y (n_rows), weight (n_rows, row_stride) of the type, x (in)
  void (*dot_rows)(float* y, const void* weight, long row_stride, const float* x, int in,
                   int n_rows);
  // y[j] += sum_i x[i] W[i, j] for i in [0, n_rows), j in [0, n): the rows of W start
  // `row_stride` elements apart (GPT-2's Conv1D [in, out] layout; a share of a one-row GEMV).
  //   y (n), weight (n_rows, row_stride) of the type, x (n_rows)
  void (*accumulate_rows)(float* y, const void* weight, long row_stride, const float* x, int n_rows,
                          int n);
  // dot_rows for n_seqs vectors x at once, the rows of separate sequences (RowKind::kSeparate):
  // each vector of W is loaded once for all of them, and each y[s] is exactly what dot_rows gives
  // for x[s] alone (each sum taken in the same order). nullptr where a caller should call
  // dot_rows per sequence (the scalar kernels, the block types).
  //   y (n_seqs, y_stride), weight (n_rows, row_stride), x (n_seqs, x_stride)
  void (*dot_rows_of_seqs)(float* y, long y_stride, const void* weight, long row_stride,
                           const float* x, long x_stride, int in, int n_rows, int n_seqs);
  // accumulate_rows for n_seqs vectors x at once, as dot_rows_of_seqs is to dot_rows.
  //   y (n_seqs, y_stride), weight (n_rows, row_stride), x (n_seqs, x_stride)
  void (*accumulate_rows_of_seqs)(float* y, long y_stride, const void* weight, long row_stride,
                                  const float* x, long x_stride, int n_rows, int n, int n_seqs);
  // y[j] = W[j] for j in [0, n): one row's elements as floats, exactly.
  //   y (n), weight (n) of the type
  void (*to_floats)(float* y, const void* weight, int n);
};

// The kernels of `type` for the widest instruction set the CPU has.
const WeightKernels& weight_kernels(WeightType type);

// The kernels of each instruction set, for the tests; the vector ones exist on x86-64 builds
// only, and run only on a CPU that has their instructions (cpu_features.h).
const WeightKernels& scalar_weight_kernels(WeightType type);
#if ATTN_KERNELS_X86
const WeightKernels& avx2_weight_kernels(WeightType type);
const WeightKernels& avx512_weight_kernels(WeightType type);
#endif

}  // namespace attn
