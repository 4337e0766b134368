#include "src/kernels/gemm.h"

#include <algorithm>
#include <vector>

#include "src/kernels/gemm_tiles.h"
#include "src/kernels/weight_kernels.h"

namespace attn {

namespace {

// Blocking, for caches of 32 KiB (L1) and 512 KiB or more (L2) per core: a panel of B,
// kDepthBlock x tile_columns floats (16 or 32 KiB), is packed and stays in L1 while every tile
// of rows of A passes over it, each tile's kDepthBlock columns read where they lie (128 rows of
// them, 128 KiB, stay in L2 from one panel to the next). kDepthBlock is a multiple of 32, so that a
// block type's blocks (q8_0, q4_0) are never split.
constexpr int kDepthBlock = 256;
// Columns of B packed together (at most 128 KiB, in L2): a [in, out] matrix is read a row of
// kBlockColumns at a time, rather than a panel's few columns from each row.
constexpr int kBlockColumns = 128;

// panels (n, depth, tile_columns) = B[k0 : k0 + depth, first : first + width] as floats, panel
// by panel of tile_columns columns, the columns past `width` in the last zero. `scratch` holds
// converted rows when B is not f32.
void pack_panels(const GemmKernels& gemm, float* panels, const Linear& b, int k0, int depth,
                 int first, int width, std::vector<float>& scratch) {
  const int tile_columns = gemm.tile_columns;
  const long panel_size = long(depth) * tile_columns;
  const WeightKernels& kernels = weight_kernels(b.type);
  const long stride = b.row_stride;
  if (b.in_out_layout) {  // B (in, out) as stored: each k is `width` contiguous elements
    scratch.resize(std::size_t(width));
    for (int k = 0; k < depth; ++k) {
      const void* stored = b.element((k0 + k) * stride + first);
      const float* row = static_cast<const float*>(stored);
      if (b.type != WeightType::kF32) {
        kernels.to_floats(scratch.data(), stored, width);
        row = scratch.data();
      }
      for (int j = 0; j < width; j += tile_columns) {
        float* panel_row = panels + (j / tile_columns) * panel_size + long(k) * tile_columns;
        const int n = std::min(tile_columns, width - j);
        std::copy_n(row + j, n, panel_row);
        std::fill(panel_row + n, panel_row + tile_columns, 0.0f);
      }
    }
    return;
  }
  // Stored [out, in]: column j of B is a stored row. f32 rows are transposed where they lie;
  // others are converted first.
  for (int j = 0; j < width; j += tile_columns) {
    float* panel = panels + (j / tile_columns) * panel_size;
    const int n = std::min(tile_columns, width - j);
    if (b.type == WeightType::kF32) {
      gemm.pack_transposed(panel, static_cast<const float*>(b.element((first + j) * stride + k0)),
                           stride, depth, n);
      continue;
    }
    scratch.resize(std::size_t(n) * depth);
    for (int jj = 0; jj < n; ++jj) {
      kernels.to_floats(scratch.data() + long(jj) * depth,
                        b.element((first + j + jj) * stride + k0), depth);
    }
    gemm.pack_transposed(panel, scratch.data(), depth, depth, n);
  }
}

// panels (n, (depth + 1) / 2, tile_columns) = B[k0 : k0 + depth, first : first + width] of bf16
// weights in the bf16 kernels' pairs, panel by panel, the columns past `width` in the last zero.
void pack_bf16_panels(const Bf16GemmKernels& kernels, uint32_t* panels, const Linear& b, int k0,
                      int depth, int first, int width) {
  const int tile_columns = kernels.tile_columns;
  const long panel_size = long((depth + 1) / 2) * tile_columns;
  const long stride = b.row_stride;
  for (int j = 0; j < width; j += tile_columns) {
    uint32_t* panel = panels + (j / tile_columns) * panel_size;
    const int n = std::min(tile_columns, width - j);
    if (b.in_out_layout) {  // B's rows k as stored, `n` columns from first + j
      kernels.pack_interleaved(panel,
                               static_cast<const uint16_t*>(b.element(k0 * stride + first + j)),
                               stride, depth, n);
    } else {  // B's columns as stored rows, `depth` elements from k0
      kernels.pack_transposed(panel,
                              static_cast<const uint16_t*>(b.element((first + j) * stride + k0)),
                              stride, depth, n);
    }
  }
}

// gemm_columns with bf16 weights, in bf16 (Bf16GemmKernels): the same blocking as the f32 path.
// A is rounded once per depth block, so each thread rounds all of A once per call (one
// vcvtne2ps2bf16 per 32 elements, against rows x columns / 16 vdpbf16ps per pair of k for the
// product); rounding each tile as it is multiplied would redo it for every panel. The panels of
// pairs are packed from the weights as stored.
void gemm_bf16_columns(const Bf16GemmKernels& kernels, float* c, long c_stride, const float* a,
                       long a_stride, int rows, const Linear& b, int begin, int end,
                       std::optional<Activation> activation) {
  const int tile_rows = kernels.tile_rows, tile_columns = kernels.tile_columns;
  // Each thread keeps its own between calls: a depth block of A rounded to pairs of bf16,
  // (rows, pairs); the packed panels of a block of B, (panels, pairs, tile_columns); an edge
  // tile of C, (tile_rows, tile_columns).
  static thread_local std::vector<uint32_t> a_pairs, panels;
  static thread_local std::vector<float> edge;
  // Packed at load (Linear::panels): the same panels, read where they lie.
  const bool packed = reads_packed_panels(b, &kernels, begin, tile_columns);
  for (int k0 = 0; k0 < b.in; k0 += kDepthBlock) {
    const int depth = std::min(kDepthBlock, b.in - k0);
    const int pairs = (depth + 1) / 2;
    a_pairs.resize(std::size_t(rows) * pairs);
    kernels.round_rows(a_pairs.data(), pairs, a + k0, a_stride, depth, rows);
    for (int block = begin; block < end; block += kBlockColumns) {
      const int block_width = std::min(kBlockColumns, end - block);
      // The block's panels, `panel_stride` pairs apart, each from pair k0 / 2 (k0 is even).
      const uint32_t* block_panels;
      long panel_stride;
      if (packed) {
        panel_stride = long((b.in + 1) / 2) * tile_columns;
        block_panels = static_cast<const uint32_t*>(b.panels) +
                       block / tile_columns * panel_stride + long(k0 / 2) * tile_columns;
      } else {
        panel_stride = long(pairs) * tile_columns;
        panels.resize(std::size_t((block_width + tile_columns - 1) / tile_columns * panel_stride));
        pack_bf16_panels(kernels, panels.data(), b, k0, depth, block, block_width);
        block_panels = panels.data();
      }
      for_each_tile(c, c_stride, rows, block, block_width, tile_rows, tile_columns, edge,
                    [&](float* c_tile, long c_tile_stride, int panel, int i0, int height) {
                      kernels.multiply_tile(c_tile, c_tile_stride, a_pairs.data() + i0 * pairs,
                                            pairs, block_panels + panel * panel_stride, pairs,
                                            height);
                    });
      if (k0 + depth == b.in) finish_columns(c, c_stride, rows, block, block_width, activation);
    }
  }
}

}  // namespace

long weight_panels_size(const GemmKernels& kernels, const Linear& b) {
  const int tile_columns = kernels.tile_columns;
  return long((b.out + tile_columns - 1) / tile_columns) * b.in * tile_columns;
}

void pack_weight_panels(const GemmKernels& kernels, float* panels, const Linear& b) {
  std::vector<float> scratch;
  pack_panels(kernels, panels, b, 0, b.in, 0, b.out, scratch);
}

long bf16_weight_panels_size(const Bf16GemmKernels& kernels, const Linear& b) {
  const int tile_columns = kernels.tile_columns;
  return long((b.out + tile_columns - 1) / tile_columns) * ((b.in + 1) / 2) * tile_columns;
}

void pack_bf16_weight_panels(const Bf16GemmKernels& kernels, uint32_t* panels, const Linear& b) {
  pack_bf16_panels(kernels, panels, b, 0, b.in, 0, b.out);
}

void gemm_columns(const GemmKernels& kernels, float* c, long c_stride, const float* a,
                  long a_stride, int rows, const Linear& b, int begin, int end,
                  std::optional<Activation> activation) {
  if (b.type == WeightType::kBF16 && b.bf16_products && kernels.bf16) {
    gemm_bf16_columns(*kernels.bf16, c, c_stride, a, a_stride, rows, b, begin, end, activation);
    return;
  }
  const int tile_rows = kernels.tile_rows, tile_columns = kernels.tile_columns;
  // Each thread keeps its own between calls: the packed panels of a block of B, (panels,
  // depth, tile_columns); converted rows of B; an edge tile of C, (tile_rows, tile_columns).
  static thread_local std::vector<float> panels, scratch, edge;
  if (reads_packed_panels(b, &kernels, begin, tile_columns)) {
    // Packed at load: each panel read once, from its first row to its last, the depth blocks in
    // the same order as below (so the same sums, bit for bit). One row (a decode step) then
    // streams the matrix from memory in the order it lies.
    const long panel_size = long(b.in) * tile_columns;
    for (int j = begin; j < end; j += tile_columns) {
      const float* panel = static_cast<const float*>(b.panels) + j / tile_columns * panel_size;
      for (int k0 = 0; k0 < b.in; k0 += kDepthBlock) {
        const int depth = std::min(kDepthBlock, b.in - k0);
        for_each_tile(
            c, c_stride, rows, j, std::min(tile_columns, end - j), tile_rows, tile_columns, edge,
            [&](float* c_tile, long c_tile_stride, int, int i0, int height) {
              kernels.multiply_tile(c_tile, c_tile_stride, a + i0 * a_stride + k0, a_stride,
                                    panel + long(k0) * tile_columns, depth, height);
            });
      }
      finish_after_panel(c, c_stride, rows, begin, end, j, tile_columns, kBlockColumns, activation);
    }
    return;
  }
  for (int k0 = 0; k0 < b.in; k0 += kDepthBlock) {
    const int depth = std::min(kDepthBlock, b.in - k0);
    const long panel_size = long(depth) * tile_columns;
    for (int block = begin; block < end; block += kBlockColumns) {
      const int block_width = std::min(kBlockColumns, end - block);
      panels.resize(std::size_t((block_width + tile_columns - 1) / tile_columns * panel_size));
      pack_panels(kernels, panels.data(), b, k0, depth, block, block_width, scratch);
      for_each_tile(c, c_stride, rows, block, block_width, tile_rows, tile_columns, edge,
                    [&](float* c_tile, long c_tile_stride, int panel, int i0, int height) {
                      kernels.multiply_tile(c_tile, c_tile_stride, a + i0 * a_stride + k0, a_stride,
                                            panels.data() + panel * panel_size, depth, height);
                    });
      if (k0 + depth == b.in) finish_columns(c, c_stride, rows, block, block_width, activation);
    }
  }
}

}  // namespace attn
