#include "src/kernels/gemm_int8.h"

#include <algorithm>
#include <vector>

#include "src/base/error.h"
#include "src/kernels/cpu_features.h"
#include "src/kernels/gemm_tiles.h"
#include "src/kernels/thread_pool.h"

namespace attn {

namespace {

// Blocking, as gemm.cpp's: the panel of one block of depth (kDepthBlocks blocks of 32, 20 KiB
// at 16 columns) stays in L1 while every tile of rows of A passes over it, and the panels of
// kInt8BlockColumns columns (160 KiB at most) stay in L2 from one tile of rows to the next.
constexpr int kDepthBlocks = 32;
constexpr int kInt8BlockColumns = 128;

// panels = depth_blocks blocks from block first_block of B's columns [first, first + width) (a
// q8_0 or q4_0 Linear stored [out, in]), panel by panel of tile_columns columns, the columns
// past `width` in the last zero.
void pack_int8_panels(const Int8GemmKernels& kernels, std::byte* panels, const Linear& b,
                      int first_block, int depth_blocks, int first, int width) {
  const int tile_columns = kernels.tile_columns;
  const long panel_bytes = depth_blocks * panel_block_bytes(tile_columns);
  for (int j = 0; j < width; j += tile_columns) {
    kernels.pack_panel(
        panels + j / tile_columns * panel_bytes, b.type,
        b.element(long(first + j) * b.row_stride + long(first_block) * kQuantBlockSize),
        b.row_stride / kQuantBlockSize, depth_blocks, std::min(tile_columns, width - j));
  }
}

}  // namespace

std::vector<const Int8GemmKernels*> runnable_int8_gemm_kernels() {
  std::vector<const Int8GemmKernels*> kernels = {&scalar_int8_gemm_kernels()};
#if ATTN_KERNELS_X86
  if (cpu_features().avx2) kernels.push_back(&avx2_int8_gemm_kernels());
  if (cpu_features().avx_vnni) kernels.push_back(&avxvnni_int8_gemm_kernels());
  if (cpu_features().avx512) kernels.push_back(&avx512_int8_gemm_kernels());
#endif
  return kernels;
}

const Int8GemmKernels& int8_gemm_kernels() {
  static const Int8GemmKernels& widest = *runnable_int8_gemm_kernels().back();
  return widest;
}

long int8_weight_panels_bytes(const Int8GemmKernels& kernels, const Linear& b) {
  const int tile_columns = kernels.tile_columns;
  return long((b.out + tile_columns - 1) / tile_columns) * (b.in / kQuantBlockSize) *
         panel_block_bytes(tile_columns);
}

void pack_int8_weight_panels(const Int8GemmKernels& kernels, std::byte* panels, const Linear& b) {
  pack_int8_panels(kernels, panels, b, 0, b.in / kQuantBlockSize, 0, b.out);
}

QuantizedRows quantize_rows(const Int8GemmKernels& kernels, const float* a, int rows, int in) {
  const int n_blocks = in / kQuantBlockSize;
  // (rows, in) values and (rows, n_blocks) scales.
  static thread_local std::vector<int8_t> values;
  static thread_local std::vector<float> scales;
  values.resize(std::size_t(rows) * in);
  scales.resize(std::size_t(rows) * n_blocks);
  // The workers must see this thread's buffers, not their own thread_local copies.
  int8_t* all_values = values.data();
  float* all_scales = scales.data();
  const int parts = std::min(thread_pool().size(), rows);
  thread_pool().run(parts, [&](int part) {
    const int first = int(long(rows) * part / parts), last = int(long(rows) * (part + 1) / parts);
    kernels.quantize_rows(all_values + long(first) * in, all_scales + long(first) * n_blocks,
                          a + long(first) * in, in, last - first, in);
  });
  return {.values = all_values, .scales = all_scales, .rows = rows, .in = in};
}

void quantized_gemm_columns(const Int8GemmKernels& kernels, float* c, long c_stride,
                            const QuantizedRows& a, const Linear& b, int begin, int end,
                            std::optional<Activation> activation) {
  if (!is_block_type(b.type) || b.in_out_layout) {
    throw Error("quantized_gemm_columns: weights not of a block type stored [out, in]");
  }
  const int tile_rows = kernels.tile_rows, tile_columns = kernels.tile_columns;
  const long block_bytes = panel_block_bytes(tile_columns);
  const int n_blocks = a.in / kQuantBlockSize;
  // Each thread keeps its own between calls: the packed panels of a block of B, (panels,
  // depth blocks, panel_block_bytes); an edge tile of C, (tile_rows, tile_columns).
  static thread_local std::vector<std::byte> panels;
  static thread_local std::vector<float> edge;
  if (reads_packed_panels(b, &kernels, begin, tile_columns)) {
    // Packed at load: each panel read once, from its first block to its last, the depth blocks
    // in the same order as below (so the same sums, bit for bit).
    const long panel_bytes = n_blocks * block_bytes;
    for (int j = begin; j < end; j += tile_columns) {
      const std::byte* panel =
          static_cast<const std::byte*>(b.panels) + j / tile_columns * panel_bytes;
      for (int first_block = 0; first_block < n_blocks; first_block += kDepthBlocks) {
        const int depth_blocks = std::min(kDepthBlocks, n_blocks - first_block);
        for_each_tile(c, c_stride, a.rows, j, std::min(tile_columns, end - j), tile_rows,
                      tile_columns, edge,
                      [&](float* c_tile, long c_tile_stride, int, int i0, int height) {
                        kernels.multiply_tile(
                            c_tile, c_tile_stride,
                            a.values + long(i0) * a.in + long(first_block) * kQuantBlockSize, a.in,
                            a.scales + long(i0) * n_blocks + first_block, n_blocks,
                            panel + first_block * block_bytes, depth_blocks, height);
                      });
      }
      finish_after_panel(c, c_stride, a.rows, begin, end, j, tile_columns, kInt8BlockColumns,
                         activation);
    }
    return;
  }
  for (int first_block = 0; first_block < n_blocks; first_block += kDepthBlocks) {
    const int depth_blocks = std::min(kDepthBlocks, n_blocks - first_block);
    const long panel_bytes = depth_blocks * block_bytes;
    for (int block = begin; block < end; block += kInt8BlockColumns) {
      const int block_width = std::min(kInt8BlockColumns, end - block);
      panels.resize(std::size_t((block_width + tile_columns - 1) / tile_columns * panel_bytes));
      pack_int8_panels(kernels, panels.data(), b, first_block, depth_blocks, block, block_width);
      for_each_tile(c, c_stride, a.rows, block, block_width, tile_rows, tile_columns, edge,
                    [&](float* c_tile, long c_tile_stride, int panel, int i0, int height) {
                      kernels.multiply_tile(
                          c_tile, c_tile_stride,
                          a.values + long(i0) * a.in + long(first_block) * kQuantBlockSize, a.in,
                          a.scales + long(i0) * n_blocks + first_block, n_blocks,
                          panels.data() + panel * panel_bytes, depth_blocks, height);
                    });
      if (first_block + depth_blocks == n_blocks) {
        finish_columns(c, c_stride, a.rows, block, block_width, activation);
      }
    }
  }
}

}  // namespace attn
