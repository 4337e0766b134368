// The fallback kernels of src/kernels/weight_kernels.h and src/kernels/gemm.h, plain C++
// compiled without SIMD flags (CMakeLists.txt): for machines with neither AVX2 nor AVX-512.

#include <cstdint>
#include <vector>

#include "src/kernels/gemm.h"
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

}  // namespace

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
