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
// q8_0 row's blocks are never split.
constexpr int kDepthBlock = 256;

// panel (depth, tile_columns) = B[k0 : k0 + depth, first : first + width] as floats, the
// columns past `width` (an edge panel) zero. `scratch` holds converted rows when B is not f32.
void pack_panel(const GemmKernels& gemm, float* panel, const Linear& b, int k0, int depth,
                int first, int width, std::vector<float>& scratch) {
  const int tile_columns = gemm.tile_columns;
  const WeightKernels& kernels = weight_kernels(b.type);
  const long stride = b.row_stride;
  if (b.in_out_layout) {  // B (in, out) as stored: each k is `width` contiguous elements
    for (int k = 0; k < depth; ++k) {
      float* panel_row = panel + long(k) * tile_columns;
      kernels.to_floats(panel_row, b.element((k0 + k) * stride + first), width);
      std::fill(panel_row + width, panel_row + tile_columns, 0.0f);
    }
    return;
  }
  // Stored [out, in]: column j of B is a stored row. f32 rows are transposed where they lie;
  // others are converted first.
  if (b.type == WeightType::kF32) {
    gemm.pack_transposed(panel, static_cast<const float*>(b.element(first * stride + k0)), stride,
                         depth, width);
    return;
  }
  scratch.resize(std::size_t(width) * depth);
  for (int j = 0; j < width; ++j) {
    kernels.to_floats(scratch.data() + long(j) * depth, b.element((first + j) * stride + k0),
                      depth);
  }
  gemm.pack_transposed(panel, scratch.data(), depth, depth, width);
}

}  // namespace

void gemm_columns(const GemmKernels& kernels, float* c, long c_stride, const float* a,
                  long a_stride, int rows, const Linear& b, int begin, int end) {
  const int tile_rows = kernels.tile_rows, tile_columns = kernels.tile_columns;
  // Each thread keeps its own between calls: one packed panel of B, (depth, tile_columns);
  // converted rows of B; an edge tile of C, (tile_rows, tile_columns).
  static thread_local std::vector<float> panel, scratch, edge;
  edge.resize(std::size_t(tile_rows) * tile_columns);
  for (int k0 = 0; k0 < b.in; k0 += kDepthBlock) {
    const int depth = std::min(kDepthBlock, b.in - k0);
    panel.resize(std::size_t(depth) * tile_columns);
    for (int first = begin; first < end; first += tile_columns) {
      const int width = std::min(tile_columns, end - first);
      pack_panel(kernels, panel.data(), b, k0, depth, first, width, scratch);
      for (int i0 = 0; i0 < rows; i0 += tile_rows) {
        const int height = std::min(tile_rows, rows - i0);
        const float* a_tile = a + i0 * a_stride + k0;
        float* c_tile = c + i0 * c_stride + first;
        if (width == tile_columns) {
          kernels.multiply_tile(c_tile, c_stride, a_tile, a_stride, panel.data(), depth, height);
          continue;
        }
        // An edge panel: C's columns past the end are not ours to write, so the tile goes
        // through a buffer of full width.
        for (int r = 0; r < height; ++r) {
          std::copy_n(c_tile + r * c_stride, width, edge.data() + r * tile_columns);
        }
        kernels.multiply_tile(edge.data(), tile_columns, a_tile, a_stride, panel.data(), depth,
                              height);
        for (int r = 0; r < height; ++r) {
          std::copy_n(edge.data() + r * tile_columns, width, c_tile + r * c_stride);
        }
      }
    }
  }
}

}  // namespace attn
