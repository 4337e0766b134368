#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "src/kernels/ops.h"

// The matrix product of many rows by a q8_0 or q4_0 weight matrix in integers, as llamafile's
// tinyBLAS and oneDNN shape their int8 GEMMs. The rows of A are quantized once per product, per
// block of 32, exactly as the one-row kernels quantize x (weight_kernels.h: q8_0 values with an
// f32 scale). B, always stored [out, in] for a block type, is packed into int8 panels of
// tile_columns columns, and a register-blocked micro-kernel multiplies a tile of tile_rows rows
// of A by one panel: per block of 32, each row's integer dot products with all the panel's
// columns at once, then, in f32, times the row's and each column's scale, added up over blocks.
//
// One panel, block by block (kPanelBlockBytes(tile_columns) bytes per block):
//   values       (8, tile_columns, 4) int8: [g][c][i] = W[column c, 4 g + i of the block], so
//                that one register of 4-byte groups (a group from each column) meets one 4-byte
//                broadcast of a row of A in a single byte dot-product instruction (vpdpbusd)
//   corrections  (tile_columns) int32: -128 x the sum of the column's 32 values, for the kernels
//                whose activations are unsigned (VNNI multiplies unsigned by signed bytes, so
//                they take a + 128 and subtract 128 x sum w); left zero by the others
//   scales       (tile_columns) f32: the columns' block scales
// Columns past a matrix's last are zero (values, corrections and scales).
//
// Each instruction set has its kernels in its own translation unit (weight_kernels.h):
//   scalar   weight_kernels_scalar.cpp   plain C++
//   avx2     weight_kernels_avx2.cpp     vpmaddubsw + vpmaddwd with the sign trick, 8 columns
//   avxvnni  gemm_int8_avxvnni.cpp       AVX-VNNI: 256-bit vpdpbusd, 8 columns
//   avx512   weight_kernels_avx512.cpp   AVX512-VNNI: 512-bit vpdpbusd, 16 columns
// and int8_gemm_kernels() picks the widest the CPU has at run time (cpu_features.h).

namespace attn {

// Bytes of one block of a panel tile_columns wide: 32 values, a correction and a scale per
// column.
constexpr long panel_block_bytes(int tile_columns) { return long(tile_columns) * (32 + 4 + 4); }

struct Int8GemmKernels {
  int tile_rows = 0;     // rows of A and C per micro-kernel call (MR)
  int tile_columns = 0;  // columns of B and C per panel (NR), a power of two
  // Whether `quantize_rows` stores each value plus 128, as an unsigned byte (the VNNI kernels).
  bool unsigned_activations = false;
  // values (rows, in) and scales (rows, in / 32) = each row of a (rows, in; rows a_stride apart)
  // quantized per block of 32 exactly as the one-row kernels quantize x: a block holding a NaN
  // or an infinity gets scale NaN and values 0. values are stored + 128 where
  // unsigned_activations says so. in is a multiple of 32.
  void (*quantize_rows)(int8_t* values, float* scales, const float* a, long a_stride, int rows,
                        int in);
  // panel (n_blocks blocks of the layout above) = blocks [0, n_blocks) of `width` (at most
  // tile_columns) stored rows of a q8_0 or q4_0 matrix (`type`), from `weight` on, rows
  // row_blocks blocks apart.
  void (*pack_panel)(std::byte* panel, WeightType type, const void* weight, long row_blocks,
                     int n_blocks, int width);
  // c (rows, tile_columns; rows c_stride apart) += the product of `rows` quantized rows of A,
  // from block 0 of `values` (rows values_stride bytes apart) and `scales` (rows scales_stride
  // floats apart), by n_blocks blocks of a panel; 1 <= rows <= tile_rows.
  void (*multiply_tile)(float* c, long c_stride, const int8_t* values, long values_stride,
                        const float* scales, long scales_stride, const std::byte* panel,
                        int n_blocks, int rows);
  // `iterations` rounds of independent byte multiply-adds on 10 registers; returns the integer
  // operations done (a multiply and an add per byte pair). attn bench --kernels times it for the
  // core's integer peak.
  double (*peak_loop)(long iterations);
  const char* name = "";
};

// Bytes of the panels pack_int8_weight_panels writes for b: ceil(b.out / tile_columns) panels of
// b.in / 32 blocks.
long int8_weight_panels_bytes(const Int8GemmKernels& kernels, const Linear& b);

// panels = b (q8_0 or q4_0, stored [out, in]) in the panels above, each the whole depth: what
// quantized_gemm_columns otherwise packs at every call, a depth block at a time
// (Linear::panels, with packed_by = &kernels). The layout is the kernels' own (their
// corrections), so the panels serve only them.
void pack_int8_weight_panels(const Int8GemmKernels& kernels, std::byte* panels, const Linear& b);

// The int8 kernels of the widest instruction set this CPU has (see cpu_features.h).
const Int8GemmKernels& int8_gemm_kernels();

// The int8 kernels of every instruction set this CPU runs, narrowest (scalar) first.
std::vector<const Int8GemmKernels*> runnable_int8_gemm_kernels();

// Each instruction set's, for the tests; the vector ones exist on x86-64 builds only, and run
// only on a CPU that has their instructions.
const Int8GemmKernels& scalar_int8_gemm_kernels();
#if ATTN_KERNELS_X86
const Int8GemmKernels& avx2_int8_gemm_kernels();
const Int8GemmKernels& avxvnni_int8_gemm_kernels();
const Int8GemmKernels& avx512_int8_gemm_kernels();
#endif

// The rows of A quantized by a kernel set's quantize_rows.
struct QuantizedRows {
  const int8_t* values = nullptr;  // (rows, in)
  const float* scales = nullptr;   // (rows, in / 32)
  int rows = 0;
  int in = 0;
};

// a (rows, in; rows contiguous) quantized by kernels.quantize_rows, the rows shared out over the
// thread pool. The result points into buffers of the calling thread, kept until its next call.
QuantizedRows quantize_rows(const Int8GemmKernels& kernels, const float* a, int rows, int in);

// c[r, j] += sum_k A[r, k] B[k, j] for r in [0, a.rows), j in [begin, end), on the calling
// thread, with A quantized by the same kernels' quantize_rows and B a q8_0 or q4_0 Linear
// (stored [out, in]; its bias is not used here). c is row-major, rows c_stride apart; its columns
// are numbered as B's (c + j is column j). A B packed at load (Linear::panels) is read from its
// panels, with the sums of packing at the call, bit for bit; it must have been packed for
// `kernels`, and `begin` must be a multiple of tile_columns, else std::logic_error. With an
// activation, c's columns [begin, end) are then activation(c), applied as the epilogue
// (gemm_tiles.h).
void quantized_gemm_columns(const Int8GemmKernels& kernels, float* c, long c_stride,
                            const QuantizedRows& a, const Linear& b, int begin, int end,
                            std::optional<Activation> activation = std::nullopt);

}  // namespace attn
