// The int8 GEMM of q8_0 and q4_0 weights (src/kernels/gemm_int8.h), each instruction set's
// kernels forced explicitly, against float64 sums of the same quantized values, against the
// one-row kernels (dot_rows), and through linear_forward.
//
// Tolerance. The rows of A are quantized as the one-row kernels quantize x (checked bit for bit
// below), so the reference quantizes them itself with quantize_q8_block and adds, in float64,
// c + sum_b s_b d_b over the blocks b, where d_b is the exact integer dot product of a row's block
// with a column's block (at most 32 x 128 x 127 < 2^24: exact in f32 too) and s_b the product
// of the two scales (11 by 24 bits: exact in float64). A kernel computes each term as
// fl(s_b) x d_b and adds the terms and c in f32, in some order: each term is rounded once for
// its scale product, once on its own (its product by d_b, a first multiply-add onto zero or a
// plain multiply in the scalar kernel), then by at most n_blocks - 1 additions among the terms
// and one more for c (with several depth blocks, the additions within a block and onto c for
// each block number no more). So each term carries at most n_blocks + 2 roundings, and the
// result is within gamma(n_blocks + 2) * (|c| + sum_b |s_b d_b|) of the reference (Higham,
// Accuracy and Stability of Numerical Algorithms, 3.1 and 3.3; gamma(n) = n u / (1 - n u),
// u = 2^-24).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "src/base/half_float.h"
#include "src/kernels/cpu_features.h"
#include "src/kernels/gemm_int8.h"
#include "src/kernels/ops.h"
#include "src/kernels/weight_conversion.h"
#include "src/kernels/weight_kernels.h"
#include "tests/linear_checks.h"

namespace attn {
namespace {

// The int8 kernel sets this CPU's hardware runs (whatever ATTN_KERNELS says), narrowest first.
std::vector<const Int8GemmKernels*> int8_sets() {
  std::vector<const Int8GemmKernels*> sets = {&scalar_int8_gemm_kernels()};
#if ATTN_KERNELS_X86
  const CpuFeatures& cpu = cpu_hardware_features();
  if (cpu.avx2) sets.push_back(&avx2_int8_gemm_kernels());
  if (cpu.avx_vnni) sets.push_back(&avxvnni_int8_gemm_kernels());
  if (cpu.avx512) sets.push_back(&avx512_int8_gemm_kernels());
#endif
  return sets;
}

// The one-row kernels of every instruction set the hardware runs.
std::vector<const WeightKernels*> one_row_sets(WeightType type) {
  std::vector<const WeightKernels*> sets = {&scalar_weight_kernels(type)};
#if ATTN_KERNELS_X86
  if (cpu_hardware_features().avx2) sets.push_back(&avx2_weight_kernels(type));
  if (cpu_hardware_features().avx512) sets.push_back(&avx512_weight_kernels(type));
#endif
  return sets;
}

// An instruction set this CPU lacks is said so, in a line of its own and as a skipped test.
TEST(Int8Gemm, EveryInstructionSetRunsOnThisCpu) {
#if ATTN_KERNELS_X86
  const CpuFeatures& cpu = cpu_hardware_features();
  std::string missing;
  const std::pair<bool, const char*> sets[] = {
      {cpu.avx2, "avx2 (AVX2 and FMA)"},
      {cpu.avx_vnni, "avxvnni (AVX-VNNI)"},
      {cpu.avx512, "avx512 (AVX-512 F, BW, DQ, VL, VNNI)"}};
  for (const auto& [present, name] : sets) {
    if (present) continue;
    std::printf("[ NOT RUN  ] this CPU has no %s: its int8 GEMM kernels are built but not tested\n",
                name);
    missing += std::string(missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) GTEST_SKIP() << "int8 GEMM kernels not tested on this CPU: " << missing;
#else
  std::printf("[ NOT RUN  ] not an x86-64 build: only the scalar int8 GEMM kernels exist\n");
  GTEST_SKIP() << "not an x86-64 build: only the scalar int8 kernels exist";
#endif
}

double gamma(long n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

// Element k of a block as an integer (weight_type.h).
int value_of(const BlockQ8_0& block, int k) { return block.values[k]; }
int value_of(const BlockQ4_0& block, int k) {
  constexpr int kHalf = kQuantBlockSize / 2;
  return (k < kHalf ? block.nibbles[k] & 0x0F : block.nibbles[k - kHalf] >> 4) - 8;
}

template <class Block>
constexpr WeightType kBlockType =
    std::is_same_v<Block, BlockQ8_0> ? WeightType::kQ8_0 : WeightType::kQ4_0;

// Random blocks: scales of either sign from 2^-10 to 2^6 (binary16 exponents 5 to 20); q8_0
// values over all of [-128, 127] (-128, which q8_0 never produces but a file may hold,
// included), q4_0 nibbles over all of [0, 15].
template <class Block>
std::vector<Block> random_blocks(std::size_t n_blocks, std::mt19937& random) {
  std::uniform_int_distribution<int> byte(0, 255), exponent(5, 20), bits(0, 0xFFFF);
  std::vector<Block> blocks(n_blocks);
  for (Block& block : blocks) {
    block.scale = uint16_t((bits(random) & 0x83FF) | exponent(random) << 10);
    if constexpr (std::is_same_v<Block, BlockQ8_0>) {
      for (int8_t& v : block.values) v = int8_t(byte(random) - 128);
    } else {
      for (uint8_t& pair : block.nibbles) pair = uint8_t(byte(random));
    }
  }
  return blocks;
}

// rows x in floats, each block of 32 with its own magnitude from 2^-8 to 2^8.
std::vector<float> random_rows(int rows, int in, std::mt19937& random) {
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::uniform_int_distribution<int> exponent(-8, 8);
  std::vector<float> a(std::size_t(rows) * in);
  for (std::size_t b = 0; b < a.size() / kQuantBlockSize; ++b) {
    const float magnitude = std::ldexp(1.0f, exponent(random));
    for (int k = 0; k < kQuantBlockSize; ++k)
      a[b * kQuantBlockSize + k] = uniform(random) * magnitude;
  }
  return a;
}

// a quantized as quantize_q8_block quantizes it: (rows, in) values, (rows, in / 32) scales.
struct Quantized {
  std::vector<int8_t> values;
  std::vector<float> scales;
};
Quantized reference_quantize(const std::vector<float>& a) {
  Quantized q{std::vector<int8_t>(a.size()), std::vector<float>(a.size() / kQuantBlockSize)};
  for (std::size_t b = 0; b < q.scales.size(); ++b) {
    q.scales[b] = quantize_q8_block(&a[b * kQuantBlockSize], &q.values[b * kQuantBlockSize]);
  }
  return q;
}

// The float64 reference of output (r, j) without c: sum_b s_b d_b, and sum_b |s_b d_b|.
struct Reference {
  std::vector<double> exact, magnitude;  // (rows, out)
};
template <class Block>
Reference reference_product(const Quantized& a, int rows, int in, const std::vector<Block>& w,
                            long row_blocks, int out) {
  const int n_blocks = in / kQuantBlockSize;
  Reference ref{std::vector<double>(std::size_t(rows) * out),
                std::vector<double>(std::size_t(rows) * out)};
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < out; ++j) {
      double sum = 0, magnitude = 0;
      for (int b = 0; b < n_blocks; ++b) {
        const Block& block = w[j * row_blocks + b];
        const int8_t* x = &a.values[std::size_t(r) * in + b * kQuantBlockSize];
        long dot = 0;
        for (int k = 0; k < kQuantBlockSize; ++k) dot += value_of(block, k) * x[k];
        const double term = double(f16_to_float(block.scale)) *
                            a.scales[std::size_t(r) * n_blocks + b] * double(dot);
        sum += term;
        magnitude += std::abs(term);
      }
      ref.exact[std::size_t(r) * out + j] = sum;
      ref.magnitude[std::size_t(r) * out + j] = magnitude;
    }
  }
  return ref;
}

Linear block_linear(WeightType type, const void* weight, int in, int out, long row_blocks) {
  return Linear{.weight = weight,
                .bias = nullptr,
                .in = in,
                .out = out,
                .in_out_layout = false,
                .row_stride = int(row_blocks * kQuantBlockSize),
                .type = type};
}

// quantize_rows of each set gives quantize_q8_block's values (less the 128 added for unsigned
// activations) and scales bit for bit, on random blocks and extreme ones: zeros, ties, a huge
// value among small ones, magnitudes below the smallest normal float, a NaN and an infinity.
TEST(Int8Gemm, QuantizeRowsEqualsTheOneRowQuantization) {
  std::mt19937 random(11);
  const int rows = 5, in = 320;
  std::vector<float> a = random_rows(rows, in, random);
  float* blocks = a.data();  // the blocks of row 0, then row 1, ...
  std::fill_n(blocks, 32, 0.0f);
  for (int k = 0; k < 32; ++k) blocks[32 + k] = float(k) - 15.5f;  // ties after scaling
  blocks[64 + 5] = 1e30f;
  for (int k = 0; k < 32; ++k) blocks[96 + k] = 1e-39f * float(k - 16);
  blocks[128 + 7] = std::numeric_limits<float>::quiet_NaN();
  blocks[160 + 31] = -std::numeric_limits<float>::infinity();
  const Quantized expected = reference_quantize(a);
  for (const Int8GemmKernels* set : int8_sets()) {
    std::vector<int8_t> values(a.size(), 99);
    std::vector<float> scales(a.size() / kQuantBlockSize, -1.0f);
    set->quantize_rows(values.data(), scales.data(), a.data(), in, rows, in);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const int value = set->unsigned_activations ? int(uint8_t(values[i])) - 128 : values[i];
      ASSERT_EQ(value, expected.values[i]) << set->name << " value " << i;
    }
    for (std::size_t b = 0; b < scales.size(); ++b) {
      if (std::isnan(expected.scales[b])) {
        ASSERT_TRUE(std::isnan(scales[b])) << set->name << " block " << b;
      } else {
        ASSERT_EQ(scales[b], expected.scales[b]) << set->name << " block " << b;
      }
    }
  }
}

// quantized_gemm_columns of every set against the float64 reference (see the top), on awkward
// shapes: rows 1 to 13 and 37 (past every tile height, none a multiple of all), depths of 1, 2, 3
// and 25 blocks, columns from 1 to past a block of 128, none but one a multiple of a panel. C
// starts from random values (the product is added to it), rows of A, B and C have spare room,
// and only columns [begin, end) may change.
// The largest |error| / bound seen, per kernel set's name, printed by the tests that fill it so
// that the margin shows in the log.
using WorstRatios = std::map<std::string, double>;

void print_worst_ratios(const char* what, const WorstRatios& worst) {
  for (const auto& [name, ratio] : worst) {
    std::printf("[ MARGIN   ] %s, %s: worst |error| / bound = %.3g\n", what, name.c_str(), ratio);
  }
}

template <class Block>
void expect_gemm_matches_float64(std::mt19937& random, WorstRatios& worst) {
  const WeightType type = kBlockType<Block>;
  for (int in : {32, 64, 96, 800, 2080}) {
    for (int out : {1, 17, 31, 33, 768 + 5}) {
      const int max_rows = 37, n_blocks = in / kQuantBlockSize;
      const long row_blocks = n_blocks + 1;  // one spare block per row, as in a fused matrix
      const std::vector<Block> w = random_blocks<Block>(std::size_t(out) * row_blocks, random);
      const Linear linear = block_linear(type, w.data(), in, out, row_blocks);
      const std::vector<float> a = random_rows(max_rows, in, random);
      const Quantized quantized = reference_quantize(a);
      const Reference ref = reference_product(quantized, max_rows, in, w, row_blocks, out);
      const long c_stride = out + 3;
      // A column range that starts and ends inside a panel where there is room.
      const int begin = out > 20 ? 3 : 0, end = out > 20 ? out - 2 : out;
      for (const Int8GemmKernels* set : int8_sets()) {
        for (int rows = 1; rows <= max_rows; rows = rows == 13 ? max_rows : rows + 1) {
          std::vector<int8_t> values(std::size_t(rows) * in);
          std::vector<float> scales(std::size_t(rows) * n_blocks);
          set->quantize_rows(values.data(), scales.data(), a.data(), in, rows, in);
          const std::vector<float> c_before = random_rows(rows, int(c_stride), random);
          std::vector<float> c = c_before;
          quantized_gemm_columns(
              *set, c.data(), c_stride,
              QuantizedRows{
                  .values = values.data(), .scales = scales.data(), .rows = rows, .in = in},
              linear, begin, end);
          for (int r = 0; r < rows; ++r) {
            for (int j = 0; j < c_stride; ++j) {
              const std::size_t at = std::size_t(r) * c_stride + j;
              const std::string where = std::string(set->name) + " " + weight_type_name(type) +
                                        " rows=" + std::to_string(rows) +
                                        " in=" + std::to_string(in) +
                                        " out=" + std::to_string(out) + ": c[" + std::to_string(r) +
                                        ", " + std::to_string(j) + "]";
              if (j < begin || j >= end) {
                ASSERT_EQ(c[at], c_before[at]) << where << " is outside the columns asked for";
                continue;
              }
              const std::size_t o = std::size_t(r) * out + j;
              const double exact = c_before[at] + ref.exact[o];
              const double bound =
                  gamma(n_blocks + 2) * (std::abs(double(c_before[at])) + ref.magnitude[o]);
              ASSERT_LE(std::abs(c[at] - exact), bound) << where;
              double& ratio = worst[std::string(set->name) + " " + weight_type_name(type)];
              ratio = std::max(ratio, std::abs(c[at] - exact) / bound);
            }
          }
        }
      }
    }
  }
}

TEST(Int8Gemm, EveryKernelMatchesFloat64) {
  std::mt19937 random(12);
  WorstRatios worst;
  expect_gemm_matches_float64<BlockQ8_0>(random, worst);
  expect_gemm_matches_float64<BlockQ4_0>(random, worst);
  print_worst_ratios("GEMM against float64", worst);
}

// With C zero, the GEMM and every set's one-row dot_rows compute the same sum from the same
// integers, differing only in f32 rounding: each is within its own bound of the float64
// reference (gamma(n_blocks + 2) here; gamma(in / 4 + 1) over the products' magnitudes for
// dot_rows, as test_kernels.cpp derives), so they are within the sum of the two of each other.
template <class Block>
void expect_gemm_equals_dot_rows(std::mt19937& random, WorstRatios& worst) {
  const WeightType type = kBlockType<Block>;
  const int rows = 13, in = 800, out = 33, n_blocks = in / kQuantBlockSize;
  const std::vector<Block> w = random_blocks<Block>(std::size_t(out) * n_blocks, random);
  const std::vector<float> a = random_rows(rows, in, random);
  const Quantized quantized = reference_quantize(a);
  // sum_b |s_b| sum_k |w_k x_k|: the magnitude dot_rows's bound is over.
  std::vector<double> product_magnitude(std::size_t(rows) * out);
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < out; ++j) {
      for (int b = 0; b < n_blocks; ++b) {
        const Block& block = w[j * n_blocks + b];
        long sum = 0;
        for (int k = 0; k < kQuantBlockSize; ++k) {
          sum += std::abs(value_of(block, k) *
                          quantized.values[std::size_t(r) * in + b * kQuantBlockSize + k]);
        }
        product_magnitude[std::size_t(r) * out + j] +=
            std::abs(double(f16_to_float(block.scale)) * quantized.scales[r * n_blocks + b]) *
            double(sum);
      }
    }
  }
  const Reference ref = reference_product(quantized, rows, in, w, n_blocks, out);
  const Linear linear = block_linear(type, w.data(), in, out, n_blocks);
  for (const Int8GemmKernels* set : int8_sets()) {
    std::vector<int8_t> values(std::size_t(rows) * in);
    std::vector<float> scales(std::size_t(rows) * n_blocks);
    set->quantize_rows(values.data(), scales.data(), a.data(), in, rows, in);
    std::vector<float> c(std::size_t(rows) * out, 0.0f);
    quantized_gemm_columns(
        *set, c.data(), out,
        QuantizedRows{.values = values.data(), .scales = scales.data(), .rows = rows, .in = in},
        linear, 0, out);
    for (const WeightKernels* one_row : one_row_sets(type)) {
      for (int r = 0; r < rows; ++r) {
        std::vector<float> y(out);
        one_row->dot_rows(y.data(), w.data(), in, a.data() + std::size_t(r) * in, in, out);
        for (int j = 0; j < out; ++j) {
          const std::size_t o = std::size_t(r) * out + j;
          const double bound =
              gamma(n_blocks + 2) * ref.magnitude[o] + gamma(in / 4 + 1) * product_magnitude[o];
          const double error = std::abs(double(c[o]) - double(y[j]));
          ASSERT_LE(error, bound) << set->name << " " << weight_type_name(type) << " row " << r
                                  << " column " << j;
          double& ratio = worst[std::string(set->name) + " " + weight_type_name(type)];
          ratio = std::max(ratio, error / bound);
        }
      }
    }
  }
}

TEST(Int8Gemm, EqualsOneRowDotRows) {
  std::mt19937 random(13);
  WorstRatios worst;
  expect_gemm_equals_dot_rows<BlockQ8_0>(random, worst);
  expect_gemm_equals_dot_rows<BlockQ4_0>(random, worst);
  print_worst_ratios("GEMM against every one-row dot_rows", worst);
}

// A NaN or an infinity in a block of A makes its row's every output NaN (the block's scale is
// NaN, as in the one-row kernels); a NaN weight scale makes its column NaN in every row. The
// other outputs stay finite.
template <class Block>
void expect_non_finite_propagates(std::mt19937& random) {
  const WeightType type = kBlockType<Block>;
  const int rows = 7, in = 96, out = 37, n_blocks = in / kQuantBlockSize;
  const int bad_row = 2, bad_column = 20;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<Block> w = random_blocks<Block>(std::size_t(out) * n_blocks, random);
    w[bad_column * n_blocks + 1].scale = 0x7E00;  // NaN
    std::vector<float> a = random_rows(rows, in, random);
    a[bad_row * in + 40] = bad;
    const Linear linear = block_linear(type, w.data(), in, out, n_blocks);
    for (const Int8GemmKernels* set : int8_sets()) {
      std::vector<int8_t> values(std::size_t(rows) * in);
      std::vector<float> scales(std::size_t(rows) * n_blocks);
      set->quantize_rows(values.data(), scales.data(), a.data(), in, rows, in);
      std::vector<float> c(std::size_t(rows) * out, 0.0f);
      quantized_gemm_columns(
          *set, c.data(), out,
          QuantizedRows{.values = values.data(), .scales = scales.data(), .rows = rows, .in = in},
          linear, 0, out);
      for (int r = 0; r < rows; ++r) {
        for (int j = 0; j < out; ++j) {
          EXPECT_EQ(std::isnan(c[std::size_t(r) * out + j]), r == bad_row || j == bad_column)
              << set->name << " " << weight_type_name(type) << " x " << bad << ": c[" << r << ", "
              << j << "]";
        }
      }
    }
  }
}

TEST(Int8Gemm, NonFiniteBlocksGiveNaN) {
  std::mt19937 random(14);
  expect_non_finite_propagates<BlockQ8_0>(random);
  expect_non_finite_propagates<BlockQ4_0>(random);
}

// linear_forward over several rows (RowKind::kTokens) takes the int8 GEMM of the widest set: its
// outputs are within the GEMM's bound of the float64 reference on the quantized rows, C starting
// from the bias (which the f32 GEMM, multiplying unquantized rows, would not meet: quantizing the
// rows moves each product by far more).
template <class Block>
void expect_linear_forward_multiplies_in_integers(std::mt19937& random) {
  const WeightType type = kBlockType<Block>;
  const int in = 256, out = 300, n_blocks = in / kQuantBlockSize;
  const std::vector<Block> w = random_blocks<Block>(std::size_t(out) * n_blocks, random);
  const std::vector<float> bias = random_rows(1, 320, random);
  Linear linear = block_linear(type, w.data(), in, out, n_blocks);
  linear.bias = bias.data();
  for (int rows : {2, 37}) {
    const std::vector<float> a = random_rows(rows, in, random);
    const Reference ref = reference_product(reference_quantize(a), rows, in, w, n_blocks, out);
    std::vector<float> y(std::size_t(rows) * out, std::nanf(""));
    linear_forward(y.data(), a.data(), rows, linear, RowKind::kTokens);
    for (int r = 0; r < rows; ++r) {
      for (int j = 0; j < out; ++j) {
        const std::size_t o = std::size_t(r) * out + j;
        const double exact = bias[j] + ref.exact[o];
        const double bound = gamma(n_blocks + 2) * (std::abs(double(bias[j])) + ref.magnitude[o]);
        ASSERT_LE(std::abs(y[o] - exact), bound)
            << weight_type_name(type) << " rows=" << rows << ": y[" << r << ", " << j << "]";
      }
    }
  }
}

TEST(Int8Gemm, LinearForwardMultipliesInIntegers) {
  std::mt19937 random(15);
  expect_linear_forward_multiplies_in_integers<BlockQ8_0>(random);
  expect_linear_forward_multiplies_in_integers<BlockQ4_0>(random);
}

// q8_0 and q4_0 weights packed once (pack_int8_weight_panels, Linear::panels) give each set's
// quantized_gemm_columns the sums of the weights packed at each call, bit for bit, for column
// ranges from the first panel and from a later one, depths past a depth block (32 blocks) and
// edge panels; and a packed Linear's rows alone, separate or among
// the rows of a product give the same outputs.
template <class Block>
void expect_packed_panels_give_the_same_sums(std::mt19937& random) {
  const WeightType type = kBlockType<Block>;
  struct Shape {
    int rows, in, out, begin, end;
  };
  for (const Shape& shape :
       {Shape{1, 1056, 40, 0, 40}, Shape{13, 96, 70, 16, 70}, Shape{25, 64, 290, 64, 289}}) {
    const int n_blocks = shape.in / kQuantBlockSize;
    const long row_blocks = n_blocks + 1;  // one spare block per row, as in a fused matrix
    const std::vector<Block> w = random_blocks<Block>(std::size_t(shape.out) * row_blocks, random);
    const Linear linear = block_linear(type, w.data(), shape.in, shape.out, row_blocks);
    const std::vector<float> a = random_rows(shape.rows, shape.in, random);
    for (const Int8GemmKernels* set : int8_sets()) {
      std::vector<std::byte> panels(std::size_t(int8_weight_panels_bytes(*set, linear)));
      pack_int8_weight_panels(*set, panels.data(), linear);
      Linear packed = linear;
      packed.panels = panels.data();
      packed.packed_by = set;
      const QuantizedRows quantized = quantize_rows(*set, a.data(), shape.rows, shape.in);
      const long c_stride = shape.out + 3;
      std::vector<float> expected = random_rows(shape.rows, int(c_stride), random);
      std::vector<float> c = expected;
      quantized_gemm_columns(*set, expected.data(), c_stride, quantized, linear, shape.begin,
                             shape.end);
      quantized_gemm_columns(*set, c.data(), c_stride, quantized, packed, shape.begin, shape.end);
      for (std::size_t i = 0; i < c.size(); ++i) {
        ASSERT_EQ(c[i], expected[i])
            << set->name << " " << weight_type_name(type) << " rows=" << shape.rows
            << " in=" << shape.in << " begin=" << shape.begin << ": element " << i;
      }
    }
  }
  // linear_forward with the widest set's panels: one row alone, separate rows and a product.
  const int in = 128, out = 70, rows = 9;
  const std::vector<Block> w =
      random_blocks<Block>(std::size_t(out) * (in / kQuantBlockSize), random);
  Linear linear = block_linear(type, w.data(), in, out, in / kQuantBlockSize);
  std::vector<std::byte> panels(std::size_t(int8_weight_panels_bytes(int8_gemm_kernels(), linear)));
  pack_int8_weight_panels(int8_gemm_kernels(), panels.data(), linear);
  linear.panels = panels.data();
  linear.packed_by = &int8_gemm_kernels();
  expect_rows_equal_alone(linear, random_rows(rows, in, random), rows, weight_type_name(type));
}

TEST(Int8Gemm, PanelsPackedOnceGiveTheSameSumsBitForBit) {
  std::mt19937 random(16);
  expect_packed_panels_give_the_same_sums<BlockQ8_0>(random);
  expect_packed_panels_give_the_same_sums<BlockQ4_0>(random);
}

}  // namespace
}  // namespace attn
