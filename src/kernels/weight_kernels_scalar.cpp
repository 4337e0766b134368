// The fallback kernels of src/kernels/weight_kernels.h and src/kernels/gemm.h, plain C++
// compiled without SIMD flags (CMakeLists.txt): for machines with neither AVX2 nor AVX-512.

#include <cstdint>
#include <cstring>
#include <vector>

#include "src/kernels/gemm.h"
#include "src/kernels/gemm_int8.h"
#include "src/kernels/weight_conversion.h"
#include "src/kernels/weight_kernels.h"

namespace attn {

namespace {

template <WeightType kType>
void dot_rows(float* y, const void* weight, long row_stride, const float* x, int in, int n_rows) {
  using Element = WeightElement<kType>;
  const auto* rows = static_cast<const Element*>(weight);
  for (int j = 0; j < n_rows; ++j) {
    const Element* row = rows + j * row_stride;
    float sum = 0;
    for (int i = 0; i < in; ++i) sum += weight_value<kType>(row[i]) * x[i];
    y[j] = sum;
  }
}

template <WeightType kType>
void accumulate_rows(float* y, const void* weight, long row_stride, const float* x, int n_rows,
                     int n) {
  using Element = WeightElement<kType>;
  const auto* rows = static_cast<const Element*>(weight);
  for (int i = 0; i < n_rows; ++i) {
    const Element* row = rows + i * row_stride;
    for (int j = 0; j < n; ++j) y[j] += x[i] * weight_value<kType>(row[j]);
  }
}

template <WeightType kType>
void to_floats(float* y, const void* weight, int n) {
  const auto* row = static_cast<const WeightElement<kType>*>(weight);
  for (int j = 0; j < n; ++j) y[j] = weight_value<kType>(row[j]);
}

template <WeightType kType>
constexpr WeightKernels kernels_of() {
  return {.dot_rows = dot_rows<kType>,
          .accumulate_rows = accumulate_rows<kType>,
          .dot_rows_of_seqs = nullptr,
          .accumulate_rows_of_seqs = nullptr,
          .to_floats = to_floats<kType>};
}

// The value of element k of a block, as an integer (weight_type.h).
int block_value(const BlockQ8_0& block, int k) { return block.values[k]; }
int block_value(const BlockQ4_0& block, int k) {
  constexpr int kHalf = kQuantBlockSize / 2;
  return (k < kHalf ? block.nibbles[k] & 0x0F : block.nibbles[k - kHalf] >> 4) - 8;
}

// dot_rows for a block type (row_stride and in multiples of 32): x is quantized as q8_0
// weights are (quantize_q8_block, with f32 scales), then each block's product is a sum of
// integers.
template <class Block>
void dot_rows_quantized(float* y, const void* weight, long row_stride, const float* x, int in,
                        int n_rows) {
  const int n_blocks = in / kQuantBlockSize;
  // x quantized, (in) values and (n_blocks) scales; each thread keeps its own between calls.
  static thread_local std::vector<int8_t> x_values;
  static thread_local std::vector<float> x_scales;
  x_values.resize(std::size_t(in));
  x_scales.resize(std::size_t(n_blocks));
  for (int b = 0; b < n_blocks; ++b) {
    x_scales[b] = quantize_q8_block(x + b * kQuantBlockSize, x_values.data() + b * kQuantBlockSize);
  }
  const auto* rows = static_cast<const Block*>(weight);
  const long row_blocks = row_stride / kQuantBlockSize;
  for (int j = 0; j < n_rows; ++j) {
    const Block* row = rows + j * row_blocks;
    float sum = 0;
    for (int b = 0; b < n_blocks; ++b) {
      const int8_t* x_block = x_values.data() + b * kQuantBlockSize;
      int32_t product = 0;
      for (int k = 0; k < kQuantBlockSize; ++k) product += block_value(row[b], k) * x_block[k];
      sum += f16_to_float(row[b].scale) * x_scales[b] * float(product);
    }
    y[j] = sum;
  }
}

// to_floats for a block type: n is a multiple of 32; scale x value is exact in f32 (11 by 8
// bits).
template <class Block>
void to_floats_quantized(float* y, const void* weight, int n) {
  const auto* blocks = static_cast<const Block*>(weight);
  for (int b = 0; b < n / kQuantBlockSize; ++b) {
    const float scale = f16_to_float(blocks[b].scale);
    for (int k = 0; k < kQuantBlockSize; ++k) {
      y[b * kQuantBlockSize + k] = scale * float(block_value(blocks[b], k));
    }
  }
}

template <class Block>
constexpr WeightKernels quantized_kernels_of() {
  return {.dot_rows = dot_rows_quantized<Block>,
          .accumulate_rows = nullptr,
          .dot_rows_of_seqs = nullptr,
          .accumulate_rows_of_seqs = nullptr,
          .to_floats = to_floats_quantized<Block>};
}

// The GEMM micro-kernel: c (rows, 16) += a (rows, depth) . panel (depth, 16), the 4 x 16 sums
// kept in a local array.
constexpr int kScalarTileRows = 4, kScalarTileColumns = 16;

void multiply_tile(float* c, long c_stride, const float* a, long a_stride, const float* panel,
                   int depth, int rows) {
  float sums[kScalarTileRows][kScalarTileColumns] = {};
  for (int k = 0; k < depth; ++k) {
    const float* b = panel + long(k) * kScalarTileColumns;
    for (int r = 0; r < rows; ++r) {
      const float a_rk = a[r * a_stride + k];
      for (int j = 0; j < kScalarTileColumns; ++j) sums[r][j] += a_rk * b[j];
    }
  }
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < kScalarTileColumns; ++j) c[r * c_stride + j] += sums[r][j];
  }
}

void pack_transposed(float* panel, const float* source, long source_stride, int depth, int width) {
  for (int k = 0; k < depth; ++k) {
    for (int j = 0; j < kScalarTileColumns; ++j) {
      panel[k * kScalarTileColumns + j] = j < width ? source[j * source_stride + k] : 0.0f;
    }
  }
}

// GemmKernels::peak_loop in scalar arithmetic (multiply and add: no FMA without flags).
double peak_loop(long iterations) {
  constexpr int kChains = 10;
  float chains[kChains];
  for (int i = 0; i < kChains; ++i) chains[i] = 0.001f * float(i);
  for (long n = 0; n < iterations; ++n) {
    for (float& chain : chains) chain = chain * 0.9999f + 0.0001f;
  }
  volatile float sink = 0;
  for (float chain : chains) sink = sink + chain;
  return 2.0 * kChains * double(iterations);
}

// The int8 GEMM (gemm_int8.h): panels of 16 columns, tiles of 4 rows, activations signed (no
// corrections).
constexpr int kInt8TileRows = 4, kInt8TileColumns = 16;

// Int8GemmKernels::quantize_rows with the one-row kernel's quantization, quantize_q8_block.
void quantize_rows(int8_t* values, float* scales, const float* a, long a_stride, int rows, int in) {
  const int n_blocks = in / kQuantBlockSize;
  for (int r = 0; r < rows; ++r) {
    for (int b = 0; b < n_blocks; ++b) {
      scales[long(r) * n_blocks + b] = quantize_q8_block(
          a + r * a_stride + b * kQuantBlockSize, values + long(r) * in + b * kQuantBlockSize);
    }
  }
}

template <class Block>
void pack_panel_blocks(std::byte* panel, const Block* rows, long row_blocks, int n_blocks,
                       int width) {
  for (int b = 0; b < n_blocks; ++b) {
    std::byte* block = panel + b * panel_block_bytes(kInt8TileColumns);
    auto* values = reinterpret_cast<int8_t*>(block);    // (8, 16, 4)
    std::byte* scales = block + 36 * kInt8TileColumns;  // (16) f32
    // corrections (16) int32: zero, as the activations are signed
    std::memset(block + 32 * kInt8TileColumns, 0, 4 * kInt8TileColumns);
    for (int column = 0; column < kInt8TileColumns; ++column) {
      const Block* stored = column < width ? &rows[column * row_blocks + b] : nullptr;
      for (int k = 0; k < kQuantBlockSize; ++k) {
        values[(k / 4 * kInt8TileColumns + column) * 4 + k % 4] =
            int8_t(stored ? block_value(*stored, k) : 0);
      }
      const float scale = stored ? f16_to_float(stored->scale) : 0.0f;
      std::memcpy(scales + 4 * column, &scale, 4);
    }
  }
}

void pack_panel(std::byte* panel, WeightType type, const void* weight, long row_blocks,
                int n_blocks, int width) {
  if (type == WeightType::kQ8_0) {
    pack_panel_blocks(panel, static_cast<const BlockQ8_0*>(weight), row_blocks, n_blocks, width);
  } else {
    pack_panel_blocks(panel, static_cast<const BlockQ4_0*>(weight), row_blocks, n_blocks, width);
  }
}

// c (rows, 16) += the quantized rows . n_blocks blocks of a panel: per block, the integer dot
// products of each row with each column, then scaled as the one-row kernel scales its own.
void multiply_int8_tile(float* c, long c_stride, const int8_t* values, long values_stride,
                        const float* scales, long scales_stride, const std::byte* panel,
                        int n_blocks, int rows) {
  float sums[kInt8TileRows][kInt8TileColumns] = {};
  for (int b = 0; b < n_blocks; ++b) {
    const std::byte* block = panel + b * panel_block_bytes(kInt8TileColumns);
    const auto* weights = reinterpret_cast<const int8_t*>(block);  // (8, 16, 4)
    float column_scales[kInt8TileColumns];
    std::memcpy(column_scales, block + 36 * kInt8TileColumns, sizeof(column_scales));
    for (int r = 0; r < rows; ++r) {
      const int8_t* row = values + r * values_stride + b * kQuantBlockSize;
      int32_t dots[kInt8TileColumns] = {};
      for (int k = 0; k < kQuantBlockSize; ++k) {
        for (int j = 0; j < kInt8TileColumns; ++j) {
          dots[j] += row[k] * weights[(k / 4 * kInt8TileColumns + j) * 4 + k % 4];
        }
      }
      const float row_scale = scales[r * scales_stride + b];
      for (int j = 0; j < kInt8TileColumns; ++j) {
        sums[r][j] += row_scale * column_scales[j] * float(dots[j]);
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < kInt8TileColumns; ++j) c[r * c_stride + j] += sums[r][j];
  }
}

// Int8GemmKernels::peak_loop in scalar integer arithmetic: 10 chains of c * m + a, unsigned so
// that they wrap.
double int8_peak_loop(long iterations) {
  constexpr int kChains = 10;
  uint32_t chains[kChains];
  for (int i = 0; i < kChains; ++i) chains[i] = uint32_t(i);
  for (long n = 0; n < iterations; ++n) {
    for (uint32_t& chain : chains) chain = chain * 2654435761u + 12345u;
  }
  volatile uint32_t sink = 0;
  for (uint32_t chain : chains) sink = sink + chain;
  return 2.0 * kChains * double(iterations);
}

}  // namespace

const Int8GemmKernels& scalar_int8_gemm_kernels() {
  static constexpr Int8GemmKernels kernels{.tile_rows = kInt8TileRows,
                                           .tile_columns = kInt8TileColumns,
                                           .unsigned_activations = false,
                                           .quantize_rows = quantize_rows,
                                           .pack_panel = pack_panel,
                                           .multiply_tile = multiply_int8_tile,
                                           .peak_loop = int8_peak_loop,
                                           .name = "scalar"};
  return kernels;
}

const GemmKernels& scalar_gemm_kernels() {
  static constexpr GemmKernels kernels{.tile_rows = kScalarTileRows,
                                       .tile_columns = kScalarTileColumns,
                                       .multiply_tile = multiply_tile,
                                       .pack_transposed = pack_transposed,
                                       .peak_loop = peak_loop,
                                       .name = "scalar"};
  return kernels;
}

const WeightKernels& scalar_weight_kernels(WeightType type) {
  // The block types have no accumulate_rows: their matrices are always stored [out, in]
  // (weight_kernels.h).
  static constexpr WeightKernels table[kWeightTypeCount] = {
      kernels_of<WeightType::kF32>(), kernels_of<WeightType::kF16>(),
      kernels_of<WeightType::kBF16>(), quantized_kernels_of<BlockQ8_0>(),
      quantized_kernels_of<BlockQ4_0>()};
  return table[int(type)];
}

}  // namespace attn
