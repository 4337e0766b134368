#include "src/kernels/gemm.h"

#include <algorithm>
#include <vector>

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

}  // namespace

void gemm_columns(const GemmKernels& kernels, float* c, long c_stride, const float* a,
                  long a_stride, int rows, const Linear& b, int begin, int end) {
  const int tile_rows = kernels.tile_rows, tile_columns = kernels.tile_columns;
  // Each thread keeps its own between calls: the packed panels of a block of B, (panels,
  // depth, tile_columns); converted rows of B; an edge tile of C, (tile_rows, tile_columns).
  static thread_local std::vector<float> panels, scratch, edge;
  edge.resize(std::size_t(tile_rows) * tile_columns);
  for (int k0 = 0; k0 < b.in; k0 += kDepthBlock) {
    const int depth = std::min(kDepthBlock, b.in - k0);
    const long panel_size = long(depth) * tile_columns;
    for (int block = begin; block < end; block += kBlockColumns) {
      const int block_width = std::min(kBlockColumns, end - block);
      panels.resize(std::size_t((block_width + tile_columns - 1) / tile_columns * panel_size));
      pack_panels(kernels, panels.data(), b, k0, depth, block, block_width, scratch);
      for (int j = 0; j < block_width; j += tile_columns) {
        const float* panel = panels.data() + (j / tile_columns) * panel_size;
        const int width = std::min(tile_columns, block_width - j);
        for (int i0 = 0; i0 < rows; i0 += tile_rows) {
          const int height = std::min(tile_rows, rows - i0);
          const float* a_tile = a + i0 * a_stride + k0;
          float* c_tile = c + i0 * c_stride + block + j;
          if (width == tile_columns) {
            kernels.multiply_tile(c_tile, c_stride, a_tile, a_stride, panel, depth, height);
            continue;
          }
          // An edge panel: C's columns past the end are not ours to write, so the tile goes
          // through a buffer of full width.
          for (int r = 0; r < height; ++r) {
            std::copy_n(c_tile + r * c_stride, width, edge.data() + r * tile_columns);
          }
          kernels.multiply_tile(edge.data(), tile_columns, a_tile, a_stride, panel, depth, height);
          for (int r = 0; r < height; ++r) {
            std::copy_n(edge.data() + r * tile_columns, width, c_tile + r * c_stride);
          }
        }
      }
    }
  }
}

}  // namespace attn
