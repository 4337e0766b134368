#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "src/kernels/ops.h"

// The loop over the tiles of C that every GEMM of src/kernels shares (gemm.cpp's f32 and bf16
// products, gemm_int8.cpp's integer one): each panel of B meets every tile of rows of A.

namespace attn {

// Calls multiply(c_tile, c_tile_stride, panel, i0, height) for each tile of C: rows [i0, i0 +
// height) by the panel of tile_columns columns from `first` + panel * tile_columns, of a block of
// `width` columns from `first`. An edge panel's columns past `width` are not ours to write, so its
// tiles go through `edge` (tile_rows, tile_columns), a buffer of full width.
template <class Multiply>
void for_each_tile(float* c, long c_stride, int rows, int first, int width, int tile_rows,
                   int tile_columns, std::vector<float>& edge, const Multiply& multiply) {
  edge.resize(std::size_t(tile_rows) * tile_columns);
  for (int j = 0; j < width; j += tile_columns) {
    const int panel = j / tile_columns;
    const int panel_width = std::min(tile_columns, width - j);
    for (int i0 = 0; i0 < rows; i0 += tile_rows) {
      const int height = std::min(tile_rows, rows - i0);
      float* c_tile = c + i0 * c_stride + first + j;
      if (panel_width == tile_columns) {
        multiply(c_tile, c_stride, panel, i0, height);
        continue;
      }
      for (int r = 0; r < height; ++r) {
        std::copy_n(c_tile + r * c_stride, panel_width, edge.data() + r * tile_columns);
      }
      multiply(edge.data(), long(tile_columns), panel, i0, height);
      for (int r = 0; r < height; ++r) {
        std::copy_n(edge.data() + r * tile_columns, panel_width, c_tile + r * c_stride);
      }
    }
  }
}

// The GEMM's epilogue: once columns [first, first + width) of C's rows hold their whole sums,
// c = activation(c) over them, while they are still in this core's cache (a panel's columns just
// after its last depth block; a block's, after the last depth block of the product).
inline void finish_columns(float* c, long c_stride, int rows, int first, int width,
                           std::optional<Activation> activation) {
  if (!activation) return;
  for (int r = 0; r < rows; ++r) activation_range(c + r * c_stride + first, width, *activation);
}

// The epilogue of a product that completes its columns [begin, end) a panel at a time (weights
// packed at load): called after the panel from column j, it finishes the columns a block of
// block_columns at a time, the last block as soon as the last panel is done. (A call per panel
// of 16 or 32 columns cost more in calls than the epilogue saved.)
inline void finish_after_panel(float* c, long c_stride, int rows, int begin, int end, int j,
                               int tile_columns, int block_columns,
                               std::optional<Activation> activation) {
  const int done = std::min(j + tile_columns, end);
  if (done == end || (done - begin) % block_columns == 0) {
    const int first = done - ((done - begin - 1) % block_columns + 1);
    finish_columns(c, c_stride, rows, first, done - first, activation);
  }
}

// Whether the product of b's columns from `begin` reads b's packed panels (Linear::panels). A
// packed b is multiplied only by the kernels that packed it (`kernels`), from a column that
// starts a panel: its stored weights may be gone.
inline bool reads_packed_panels(const Linear& b, const void* kernels, int begin, int tile_columns) {
  if (!b.panels) return false;
  if (b.packed_by != kernels || begin % tile_columns != 0) {
    throw std::logic_error("weights packed for other kernels, or a product from inside a panel");
  }
  return true;
}

}  // namespace attn
