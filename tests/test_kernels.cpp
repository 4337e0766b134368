// The weight kernels (src/kernels/weight_kernels.h) and GEMM micro-kernels (src/kernels/gemm.h)
// of every instruction set this CPU runs, for every weight type, and linear_forward over weights
// of every type, against sums in float64 on random data of awkward sizes; and the load-time
// conversions into each type (src/kernels/weight_conversion.h).
//
// F16 and BF16 weights, and F32 weights and activations, are exact in double, so the only
// error left is the kernel's f32 arithmetic. Any order of summing n products in f32 (with or
// without fused multiply-adds) is within gamma(n) * sum |product| of the exact sum, where
// gamma(n) = n u / (1 - n u) and u = 2^-24 (Higham, Accuracy and Stability of Numerical
// Algorithms, 3.1): that is the tolerance, per output. (q8_0 has its own, below.)

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/kernels/cpu_features.h"
#include "src/kernels/gemm.h"
#include "src/kernels/ops.h"
#include "src/kernels/weight_conversion.h"
#include "src/kernels/weight_kernels.h"
#include "tests/linear_checks.h"

namespace attn {
namespace {

struct InstructionSet {
  const char* name;
  const WeightKernels& (*kernels)(WeightType);
  const GemmKernels& (*gemm)();
};

// The instruction sets this CPU can run, narrowest first.
std::vector<InstructionSet> built_instruction_sets() {
  std::vector<InstructionSet> sets = {{"scalar", scalar_weight_kernels, scalar_gemm_kernels}};
#if ATTN_KERNELS_X86
  if (cpu_features().avx2) sets.push_back({"avx2", avx2_weight_kernels, avx2_gemm_kernels});
  if (cpu_features().avx512) {
    sets.push_back({"avx512", avx512_weight_kernels, avx512_gemm_kernels});
  }
#endif
  return sets;
}

// The kernels of an instruction set the CPU lacks cannot run here: say so, as a skipped test,
// rather than pass in silence.
TEST(WeightKernels, EveryInstructionSetRunsOnThisCpu) {
#if ATTN_KERNELS_X86
  if (!cpu_features().avx512) {
    GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, DQ, VL and VNNI): its kernels are built "
                    "but not tested here";
  }
  EXPECT_TRUE(cpu_features().avx2);
#else
  GTEST_SKIP() << "not an x86-64 build: only the scalar kernels exist";
#endif
}

// The element-wise types; the block types, q8_0 and q4_0, have their own tests.
constexpr WeightType kTypes[] = {WeightType::kF32, WeightType::kF16, WeightType::kBF16};
constexpr WeightType kAllTypes[] = {WeightType::kF32, WeightType::kF16, WeightType::kBF16,
                                    WeightType::kQ8_0, WeightType::kQ4_0};
constexpr int kSizes[] = {1, 31, 32, 33, 767, 768, 3072};

double gamma(long n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

// The exact value of binary16 bits, computed apart from the code under test.
double f16_value(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
  const double sign = bits & 0x8000 ? -1 : 1;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double bf16_value(uint16_t bits) {
  const int exponent = (bits >> 7) & 0xFF, mantissa = bits & 0x7F;
  const double sign = bits & 0x8000 ? -1 : 1;
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);
  return sign * std::ldexp(128 + mantissa, exponent - 134);
}

// A matrix of `type` in memory (rows, stride), and the exact value of each element.
struct Matrix {
  Matrix(WeightType type, int rows, int stride, std::mt19937& random)
      : type(type), values(std::size_t(rows) * stride) {
    // Magnitudes from 1/32 to 128: a wide spread of exponents, and no overflow in f32 sums.
    std::uniform_int_distribution<int> bits(0, 0xFFFF);
    if (type == WeightType::kF32) {
      std::uniform_real_distribution<float> uniform(-64, 64);
      for (double& value : values) value = f32.emplace_back(uniform(random));
      return;
    }
    const bool is_f16 = type == WeightType::kF16;
    std::uniform_int_distribution<int> exponent =
        is_f16 ? std::uniform_int_distribution(10, 21) : std::uniform_int_distribution(122, 133);
    for (double& value : values) {
      const int sign_and_mantissa = bits(random) & (is_f16 ? 0x83FF : 0x807F);
      const uint16_t element = uint16_t(sign_and_mantissa | exponent(random) << (is_f16 ? 10 : 7));
      halves.push_back(element);
      value = is_f16 ? f16_value(element) : bf16_value(element);
    }
  }
  const void* data() const {
    return type == WeightType::kF32 ? static_cast<const void*>(f32.data()) : halves.data();
  }

  WeightType type;
  std::vector<double> values;
  std::vector<float> f32;
  std::vector<uint16_t> halves;
};

std::vector<float> random_floats(std::size_t n, std::mt19937& random) {
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> values(n);
  for (float& value : values) value = uniform(random);
  return values;
}

std::string case_name(const InstructionSet& set, WeightType type, int in, int out) {
  return std::string(set.name) + " " + weight_type_name(type) + " in=" + std::to_string(in) +
         " out=" + std::to_string(out);
}

TEST(WeightKernels, DotRowsMatchFloat64) {
  std::mt19937 random(1);
  for (WeightType type : kTypes) {
    for (int in : kSizes) {
      for (int out : kSizes) {
        // [out, in] with 3 elements between rows: no row starts aligned, as in a fused matrix.
        const int stride = in + 3;
        const Matrix weight(type, out, stride, random);
        const std::vector<float> x = random_floats(in, random);
        std::vector<double> exact(out), bound(out);
        for (int j = 0; j < out; ++j) {
          double sum = 0, magnitude = 0;
          for (int i = 0; i < in; ++i) {
            sum += weight.values[std::size_t(j) * stride + i] * x[i];
            magnitude += std::abs(weight.values[std::size_t(j) * stride + i] * x[i]);
          }
          exact[j] = sum;
          bound[j] = gamma(in) * magnitude;
        }
        for (const InstructionSet& set : built_instruction_sets()) {
          std::vector<float> y(out);
          set.kernels(type).dot_rows(y.data(), weight.data(), stride, x.data(), in, out);
          for (int j = 0; j < out; ++j) {
            ASSERT_LE(std::abs(y[j] - exact[j]), bound[j])
                << case_name(set, type, in, out) << " row " << j;
          }
        }
      }
    }
  }
}

// The kernels for several sequences' rows at once give each sequence's y bit for bit as the
// one-row kernels give it alone (attn serve's slots and beam search's beams must not change
// what a sequence computes), on every instruction set that has them, for 1 to 9 sequences (the
// blocks of 4 and what is left), on shapes whose widths are not multiples of a vector.
TEST(WeightKernels, RowsOfSeveralSequencesEqualEachAlone) {
  std::mt19937 random(9);
  const int widths[] = {1, 15, 37, 64, 100};
  for (const InstructionSet& set : built_instruction_sets()) {
    for (WeightType type : kTypes) {
      const WeightKernels& kernels = set.kernels(type);
      if (!kernels.dot_rows_of_seqs || !kernels.accumulate_rows_of_seqs) {
        EXPECT_EQ(kernels.dot_rows_of_seqs, nullptr) << set.name << ": both or neither";
        EXPECT_EQ(kernels.accumulate_rows_of_seqs, nullptr) << set.name << ": both or neither";
        continue;
      }
      for (int in : widths) {
        for (int out : widths) {
          for (int n_seqs = 1; n_seqs <= 9; ++n_seqs) {
            const std::string name =
                case_name(set, type, in, out) + " seqs=" + std::to_string(n_seqs);
            // x and y rows with 5 elements between them, as rows of a wider buffer.
            const long x_stride = std::max(in, out) + 5, y_stride = std::max(in, out) + 5;
            const std::vector<float> x = random_floats(std::size_t(n_seqs) * x_stride, random);
            const std::vector<float> y_before =
                random_floats(std::size_t(n_seqs) * y_stride, random);
            // dot_rows: W [out, in], stride in + 3.
            const Matrix by_rows(type, out, in + 3, random);
            std::vector<float> together = y_before, alone = y_before;
            kernels.dot_rows_of_seqs(together.data(), y_stride, by_rows.data(), in + 3, x.data(),
                                     x_stride, in, out, n_seqs);
            for (int s = 0; s < n_seqs; ++s) {
              kernels.dot_rows(alone.data() + s * y_stride, by_rows.data(), in + 3,
                               x.data() + s * x_stride, in, out);
            }
            ASSERT_TRUE(together == alone) << name << ": dot_rows_of_seqs";
            // accumulate_rows: W [in, out], stride out + 3, added to y.
            const Matrix by_columns(type, in, out + 3, random);
            together = alone = y_before;
            kernels.accumulate_rows_of_seqs(together.data(), y_stride, by_columns.data(), out + 3,
                                            x.data(), x_stride, in, out, n_seqs);
            for (int s = 0; s < n_seqs; ++s) {
              kernels.accumulate_rows(alone.data() + s * y_stride, by_columns.data(), out + 3,
                                      x.data() + s * x_stride, in, out);
            }
            ASSERT_TRUE(together == alone) << name << ": accumulate_rows_of_seqs";
          }
        }
      }
    }
  }
}

TEST(WeightKernels, AccumulateRowsMatchFloat64) {
  std::mt19937 random(2);
  for (WeightType type : kTypes) {
    for (int in : kSizes) {
      for (int out : kSizes) {
        // [in, out] with 3 elements between rows, added to a y that is not zero.
        const int stride = out + 3;
        const Matrix weight(type, in, stride, random);
        const std::vector<float> x = random_floats(in, random);
        const std::vector<float> y_before = random_floats(out, random);
        std::vector<double> exact(out), bound(out);
        for (int j = 0; j < out; ++j) {
          double sum = y_before[j], magnitude = std::abs(y_before[j]);
          for (int i = 0; i < in; ++i) {
            sum += x[i] * weight.values[std::size_t(i) * stride + j];
            magnitude += std::abs(x[i] * weight.values[std::size_t(i) * stride + j]);
          }
          exact[j] = sum;
          bound[j] = gamma(in + 1) * magnitude;
        }
        for (const InstructionSet& set : built_instruction_sets()) {
          std::vector<float> y = y_before;
          set.kernels(type).accumulate_rows(y.data(), weight.data(), stride, x.data(), in, out);
          for (int j = 0; j < out; ++j) {
            ASSERT_LE(std::abs(y[j] - exact[j]), bound[j])
                << case_name(set, type, in, out) << " column " << j;
          }
        }
      }
    }
  }
}

// Every finite f16 and bf16 value (subnormals and both zeros included) through each
// instruction set's conversion, which must be exact: by to_floats, and by accumulate_rows as
// 0 + 1 x w.
TEST(WeightKernels, ConvertEveryFiniteHalfExactly) {
  for (WeightType type : {WeightType::kF16, WeightType::kBF16}) {
    const bool is_f16 = type == WeightType::kF16;
    std::vector<uint16_t> elements;
    std::vector<double> values;
    for (int bits = 0; bits <= 0xFFFF; ++bits) {
      const bool finite = is_f16 ? ((bits >> 10) & 0x1F) != 0x1F : ((bits >> 7) & 0xFF) != 0xFF;
      if (!finite) continue;
      elements.push_back(uint16_t(bits));
      values.push_back(is_f16 ? f16_value(uint16_t(bits)) : bf16_value(uint16_t(bits)));
    }
    const int n = int(elements.size());
    const float one = 1;
    for (const InstructionSet& set : built_instruction_sets()) {
      std::vector<float> converted(n), accumulated(n, 0.0f);
      set.kernels(type).to_floats(converted.data(), elements.data(), n);
      set.kernels(type).accumulate_rows(accumulated.data(), elements.data(), n, &one, 1, n);
      for (int j = 0; j < n; ++j) {
        ASSERT_EQ(double(converted[j]), values[j])
            << set.name << " " << weight_type_name(type) << " to_floats, bits " << elements[j];
        ASSERT_EQ(double(accumulated[j]), values[j]) << set.name << " " << weight_type_name(type)
                                                     << " accumulate_rows, bits " << elements[j];
      }
    }
  }
}

// F32 rows come back unchanged, whatever the length.
TEST(WeightKernels, F32ToFloatsIsACopy) {
  std::mt19937 random(3);
  for (int n : kSizes) {
    const std::vector<float> row = random_floats(n, random);
    for (const InstructionSet& set : built_instruction_sets()) {
      std::vector<float> converted(n);
      set.kernels(WeightType::kF32).to_floats(converted.data(), row.data(), n);
      EXPECT_EQ(converted, row) << set.name << " n=" << n;
    }
  }
}

// ---- Load-time conversions ----

// The nearest value of a 16-bit float type to the finite v, ties to the even bit pattern, found
// by a binary search over the type's non-negative patterns, of which `value` gives the exact
// value; the first infinity pattern counts as the next power of two, where IEEE rounding puts
// it (f16_value and bf16_value give 65536 and 2^128).
uint16_t nearest_half(double v, double (*value)(uint16_t), int infinity) {
  const double magnitude = std::abs(v);
  const int sign = std::signbit(v) ? 0x8000 : 0;
  int low = 0, high = infinity;  // value(low) <= magnitude < value(high)
  if (magnitude >= value(uint16_t(high))) return uint16_t(sign | high);
  while (high - low > 1) {
    const int middle = (low + high) / 2;
    if (value(uint16_t(middle)) <= magnitude) {
      low = middle;
    } else {
      high = middle;
    }
  }
  const double below = magnitude - value(uint16_t(low));
  const double above = value(uint16_t(high)) - magnitude;
  const int nearest = below < above ? low : above < below ? high : low % 2 == 0 ? low : high;
  return uint16_t(sign | nearest);
}

bool is_f16_nan(uint16_t bits) { return (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0; }
bool is_bf16_nan(uint16_t bits) { return (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0; }

// The bf16 that vcvtne2ps2bf16 makes of a finite float, computed apart from it: the nearest, ties
// to even, except that a denormal float (below 2^-126) becomes a zero of its sign, as the
// instruction reads denormals as zero (gemm_bf16_avx512.cpp).
uint16_t bf16_of_activation(float x) {
  if (std::abs(x) < std::numeric_limits<float>::min()) return std::signbit(x) ? 0x8000 : 0;
  return nearest_half(x, bf16_value, 0x7F80);
}

double bf16_rounded(float x) { return bf16_value(bf16_of_activation(x)); }

struct HalfType {
  const char* name;
  uint16_t (*from_float)(float);  // under test
  float (*to_float)(uint16_t);
  double (*value)(uint16_t);
  bool (*is_nan)(uint16_t);
  int infinity;  // the bits of +infinity
};

const HalfType kHalfTypes[] = {
    {"f16", float_to_f16, f16_to_float, f16_value, is_f16_nan, 0x7C00},
    {"bf16", float_to_bf16, bf16_to_float, bf16_value, is_bf16_nan, 0x7F80}};

// Every bit pattern back to itself through a float; NaNs stay NaN, with their sign.
TEST(WeightConversion, EveryHalfRoundTrips) {
  for (const HalfType& type : kHalfTypes) {
    for (int bits = 0; bits <= 0xFFFF; ++bits) {
      const uint16_t back = type.from_float(type.to_float(uint16_t(bits)));
      if (type.is_nan(uint16_t(bits))) {
        ASSERT_TRUE(type.is_nan(back) && (back & 0x8000) == (bits & 0x8000))
            << type.name << " bits " << bits << " gave " << back;
      } else {
        ASSERT_EQ(back, bits) << type.name;
      }
    }
  }
}

// At every midpoint between neighbouring values, both signs, from zero and the subnormals up to
// the largest finite value and infinity: the midpoint goes to the even pattern, the floats
// just below and just above to the nearer neighbour. (Every such midpoint is a float.)
TEST(WeightConversion, MidpointsRoundToEven) {
  for (const HalfType& type : kHalfTypes) {
    for (int low = 0; low < type.infinity; ++low) {
      const double midpoint = (type.value(uint16_t(low)) + type.value(uint16_t(low + 1))) / 2;
      ASSERT_EQ(double(float(midpoint)), midpoint) << type.name << " " << low;
      const int even = low % 2 == 0 ? low : low + 1;
      for (int sign : {0, 0x8000}) {
        const float tie = sign ? -float(midpoint) : float(midpoint);
        const float outward =
            sign ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
        ASSERT_EQ(type.from_float(tie), sign | even) << type.name << " " << tie;
        ASSERT_EQ(type.from_float(std::nextafter(tie, 0.0f)), sign | low)
            << type.name << " " << tie;
        ASSERT_EQ(type.from_float(std::nextafter(tie, outward)), sign | (low + 1))
            << type.name << " " << tie;
      }
    }
  }
}

// Floats from all over the range (a stride through every bit pattern) against the nearest
// value found by search; infinities stay infinite, the largest float overflows, NaNs stay NaN
// (also a signalling one whose payload lies only in bits that the conversion drops).
TEST(WeightConversion, FloatsRoundToTheNearest) {
  for (const HalfType& type : kHalfTypes) {
    for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099) {
      const float v = std::bit_cast<float>(uint32_t(bits));
      if (!std::isfinite(v)) continue;
      ASSERT_EQ(type.from_float(v), nearest_half(v, type.value, type.infinity))
          << type.name << " " << v;
    }
    const float infinity = std::numeric_limits<float>::infinity();
    EXPECT_EQ(type.from_float(infinity), type.infinity) << type.name;
    EXPECT_EQ(type.from_float(-infinity), 0x8000 | type.infinity) << type.name;
    EXPECT_EQ(type.from_float(std::numeric_limits<float>::max()), type.infinity) << type.name;
    for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu}) {
      EXPECT_TRUE(type.is_nan(type.from_float(std::bit_cast<float>(nan)))) << type.name << nan;
    }
  }
}

// ggml's q8_0 quantization of one block (quantize_row_q8_0_ref), computed apart from the code
// under test: x's values, and its scale as an f32; values 0 where the scale is below the
// smallest normal float (weight_conversion.h).
float reference_quantize(const float* x, int8_t* values) {
  float amax = 0;
  for (int k = 0; k < kQuantBlockSize; ++k) amax = std::max(amax, std::fabs(x[k]));
  const float scale = amax / 127.0f;
  const float inverse_scale = scale != 0 ? 1.0f / scale : 0.0f;
  for (int k = 0; k < kQuantBlockSize; ++k) {
    const bool normal_scale = scale >= std::numeric_limits<float>::min();
    values[k] = normal_scale ? int8_t(std::round(x[k] * inverse_scale)) : int8_t(0);
  }
  return scale;
}

// convert_row: f32 copied; f16 and bf16 element by element; q8_0 block by block as ggml's
// quantize_row_q8_0_ref (reference_quantize), its scale as binary16. Among the blocks: zeros,
// a tiny one (scale not a normal float: values 0), ties, and one with a NaN or an infinity
// (scale NaN, values 0).
TEST(WeightConversion, ConvertRowMatchesEachElement) {
  std::mt19937 random(10);
  std::uniform_int_distribution<int> exponent(-20, 20);
  const int n = 32 * kQuantBlockSize;
  std::vector<float> x = random_floats(n, random);
  for (int b = 0; b < n / kQuantBlockSize; ++b) {
    const float magnitude = std::ldexp(1.0f, exponent(random));
    for (int k = 0; k < kQuantBlockSize; ++k) x[b * kQuantBlockSize + k] *= magnitude;
  }
  std::fill_n(x.begin() + 1 * kQuantBlockSize, kQuantBlockSize, 0.0f);
  // Scale 1.0e-38, just below the smallest normal float: ggml's values would be nonzero.
  for (int k = 0; k < kQuantBlockSize; ++k) x[2 * kQuantBlockSize + k] = float(k - 16) * 8e-38f;
  x[5 * kQuantBlockSize] = 127.0f;  // scale 1: ties, which roundf takes away from zero
  for (int k = 1; k < kQuantBlockSize; ++k) x[5 * kQuantBlockSize + k] = float(k - 16) + 0.5f;
  x[3 * kQuantBlockSize + 7] = std::numeric_limits<float>::quiet_NaN();
  x[4 * kQuantBlockSize + 9] = -std::numeric_limits<float>::infinity();

  for (WeightType type : kAllTypes) {
    if (type == WeightType::kQ4_0) continue;  // WeightConversion.Q4MatchesGgmlReference
    std::vector<unsigned char> out(storage_bytes(type, n));
    convert_row(type, x.data(), out.data(), n);
    if (type == WeightType::kQ8_0) {
      std::vector<BlockQ8_0> blocks(n / kQuantBlockSize);
      std::memcpy(blocks.data(), out.data(), out.size());
      for (int b = 0; b < n / kQuantBlockSize; ++b) {
        BlockQ8_0 expected{};
        if (b != 3 && b != 4) {  // the blocks with a NaN and an infinity
          expected.scale =
              float_to_f16(reference_quantize(&x[b * kQuantBlockSize], expected.values));
        } else {
          expected.scale = float_to_f16(std::numeric_limits<float>::quiet_NaN());
        }
        EXPECT_EQ(blocks[b].scale, expected.scale) << "block " << b;
        for (int k = 0; k < kQuantBlockSize; ++k) {
          ASSERT_EQ(blocks[b].values[k], expected.values[k]) << "block " << b << " value " << k;
        }
      }
      EXPECT_EQ(blocks[1].scale, 0);
      EXPECT_EQ(blocks[2].scale, 0);
      continue;
    }
    for (int i = 0; i < n; ++i) {
      if (type == WeightType::kF32) {
        float converted;
        std::memcpy(&converted, &out[4 * std::size_t(i)], 4);
        ASSERT_EQ(std::bit_cast<uint32_t>(converted), std::bit_cast<uint32_t>(x[i])) << i;
      } else {
        uint16_t converted;
        std::memcpy(&converted, &out[2 * std::size_t(i)], 2);
        const uint16_t expected =
            type == WeightType::kF16 ? float_to_f16(x[i]) : float_to_bf16(x[i]);
        ASSERT_EQ(converted, expected) << weight_type_name(type) << " element " << i;
      }
    }
  }
}

// Element k of a block as an integer (weight_type.h), computed apart from the kernels.
int value_of(const BlockQ8_0& block, int k) { return block.values[k]; }
int value_of(const BlockQ4_0& block, int k) {
  const uint8_t pair = block.nibbles[k % 16];
  return (k < 16 ? pair % 16 : pair / 16) - 8;
}

// ggml's q4_0 quantization of one block (quantize_row_q4_0_ref), computed apart from the code
// under test: the nibbles, and the scale as an f32. Each product is rounded to f32 before 8.5 is
// added, as ggml's reference (built without FMA) does; the volatile keeps the compiler from
// fusing the two.
float reference_quantize_q4(const float* x, uint8_t* nibbles) {
  float amax = 0, extreme = 0;
  for (int k = 0; k < kQuantBlockSize; ++k) {
    if (amax < std::fabs(x[k])) {
      amax = std::fabs(x[k]);
      extreme = x[k];
    }
  }
  const float scale = extreme / -8;
  const float inverse_scale = std::fabs(scale) >= std::numeric_limits<float>::min() ? 1 / scale : 0;
  auto q = [&](float value) {
    volatile float scaled = value * inverse_scale;
    return std::min(15, int(int8_t(scaled + 8.5f)));
  };
  for (int k = 0; k < 16; ++k) nibbles[k] = uint8_t(q(x[k]) | q(x[k + 16]) << 4);
  return scale;
}

// convert_row to q4_0 against the reference, block by block: random blocks of many magnitudes;
// zeros; a tiny one (scale not a normal float: every value 0, nibble 8); the largest magnitude
// negative, positive, and on a tie (the first wins); values that land exactly on a rounding
// boundary (x / scale + 8.5 an integer); a NaN and an infinity (scale NaN, nibble 8).
TEST(WeightConversion, Q4MatchesGgmlReference) {
  std::mt19937 random(12);
  std::uniform_int_distribution<int> exponent(-20, 20);
  const int n_blocks = 64, n = n_blocks * kQuantBlockSize;
  std::vector<float> x = random_floats(n, random);
  for (int b = 0; b < n_blocks; ++b) {
    const float magnitude = std::ldexp(1.0f, exponent(random));
    for (int k = 0; k < kQuantBlockSize; ++k) x[b * kQuantBlockSize + k] *= magnitude;
  }
  float* block = x.data();
  std::fill_n(block + 1 * kQuantBlockSize, kQuantBlockSize, 0.0f);
  // Scale 1.0e-38 (8e-38 / 8), just below the smallest normal float.
  for (int k = 0; k < kQuantBlockSize; ++k) block[2 * kQuantBlockSize + k] = float(k - 16) * 5e-39f;
  // Blocks 3 to 5 within [-1, 1] but for one or two values of magnitude 3.
  for (int b = 3; b <= 5; ++b) {
    const std::vector<float> unit = random_floats(kQuantBlockSize, random);
    std::copy(unit.begin(), unit.end(), block + b * kQuantBlockSize);
  }
  block[3 * kQuantBlockSize + 5] = -3.0f;  // the extreme, negative: scale 3/8
  block[4 * kQuantBlockSize + 9] = 3.0f;   // positive: scale -3/8
  block[5 * kQuantBlockSize + 2] = 3.0f;   // a tie: the first, 3, sets the scale, -3/8
  block[5 * kQuantBlockSize + 20] = -3.0f;
  // Scale -1 (extreme 8): x = k - 8.5 makes x / scale + 8.5 = 17 - k exactly, for every k.
  block[6 * kQuantBlockSize] = 8.0f;
  for (int k = 1; k < kQuantBlockSize; ++k) block[6 * kQuantBlockSize + k] = float(k % 17) - 8.5f;
  block[7 * kQuantBlockSize + 7] = std::numeric_limits<float>::quiet_NaN();
  block[8 * kQuantBlockSize + 9] = -std::numeric_limits<float>::infinity();

  std::vector<BlockQ4_0> blocks(n_blocks);
  convert_row(WeightType::kQ4_0, x.data(), blocks.data(), n);
  for (int b = 0; b < n_blocks; ++b) {
    BlockQ4_0 expected{};
    if (b != 7 && b != 8) {  // the blocks with a NaN and an infinity
      expected.scale =
          float_to_f16(reference_quantize_q4(&x[b * kQuantBlockSize], expected.nibbles));
    } else {
      expected.scale = float_to_f16(std::numeric_limits<float>::quiet_NaN());
      std::fill_n(expected.nibbles, 16, uint8_t(0x88));
    }
    EXPECT_EQ(blocks[b].scale, expected.scale) << "block " << b;
    for (int k = 0; k < 16; ++k) {
      ASSERT_EQ(blocks[b].nibbles[k], expected.nibbles[k]) << "block " << b << " byte " << k;
    }
  }
  EXPECT_EQ(f16_value(blocks[1].scale), 0);  // -0: 0 / -8
  EXPECT_EQ(f16_value(blocks[2].scale), 0);
  EXPECT_EQ(value_of(blocks[2], 0), 0);
  EXPECT_EQ(f16_value(blocks[3].scale), 0.375);
  EXPECT_EQ(f16_value(blocks[4].scale), -0.375);
  EXPECT_EQ(f16_value(blocks[5].scale), -0.375);
  EXPECT_EQ(value_of(blocks[3], 5), -8);
  EXPECT_EQ(value_of(blocks[5], 20), 7);  // 8, clamped to the largest value 7
}

// ---- q8_0 and q4_0 ----
//
// dot_rows multiplies the weights of a block type by x quantized as q8_0. The reference quantizes x
// itself (reference_quantize, above) and adds the exact products of the quantized values in
// float64. A kernel's integer block products are exact (at most 32 x 128 x 127 < 2^24, so
// exact as floats too); what is left is f32 arithmetic on at most in / 4 terms (8 int32 lanes
// of 4 products per block in the vector kernels, one per block in the scalar one), each rounded
// at most twice before it is added (the product of the two scales, then its product by the
// integer): within gamma(in / 4 + 1) * sum_b |w_scale x_scale| * sum_k |w_k x_k| of the exact
// sum.

// Random blocks: scales of either sign from 2^-10 to 2^6 (binary16 exponents 5 to 20), values
// over all of [-127, 127].
std::vector<BlockQ8_0> random_q8_blocks(std::size_t n_blocks, std::mt19937& random) {
  std::uniform_int_distribution<int> value(-127, 127), exponent(5, 20), bits(0, 0xFFFF);
  std::vector<BlockQ8_0> blocks(n_blocks);
  for (BlockQ8_0& block : blocks) {
    const int sign_and_mantissa = bits(random) & 0x83FF;
    block.scale = uint16_t(sign_and_mantissa | exponent(random) << 10);
    for (int8_t& v : block.values) v = int8_t(value(random));
  }
  return blocks;
}

// Random q4_0 blocks: scales as random_q8_blocks', every nibble from 0 to 15.
std::vector<BlockQ4_0> random_q4_blocks(std::size_t n_blocks, std::mt19937& random) {
  std::uniform_int_distribution<int> byte(0, 255), exponent(5, 20), bits(0, 0xFFFF);
  std::vector<BlockQ4_0> blocks(n_blocks);
  for (BlockQ4_0& block : blocks) {
    const int sign_and_mantissa = bits(random) & 0x83FF;
    block.scale = uint16_t(sign_and_mantissa | exponent(random) << 10);
    for (uint8_t& pair : block.nibbles) pair = uint8_t(byte(random));
  }
  return blocks;
}

template <class Block>
constexpr WeightType kBlockType =
    std::is_same_v<Block, BlockQ8_0> ? WeightType::kQ8_0 : WeightType::kQ4_0;

// dot_rows of every instruction set against the float64 reference (see above): `out` rows of W,
// each of row_blocks blocks of which the first in / 32 are used.
template <class Block>
void expect_dot_rows_match(const std::vector<Block>& weight, long row_blocks,
                           const std::vector<float>& x, int out, const std::string& what) {
  const int in = int(x.size()), n_blocks = in / kQuantBlockSize;
  std::vector<int8_t> x_values(x.size());
  std::vector<float> x_scales(n_blocks);
  for (int b = 0; b < n_blocks; ++b) {
    x_scales[b] = reference_quantize(&x[b * kQuantBlockSize], &x_values[b * kQuantBlockSize]);
  }
  std::vector<double> exact(out), bound(out);
  for (int j = 0; j < out; ++j) {
    double sum = 0, magnitude = 0;
    for (int b = 0; b < n_blocks; ++b) {
      const Block& block = weight[j * row_blocks + b];
      const double scale = f16_value(block.scale) * x_scales[b];  // exact: 11 by 24 bits
      long product = 0, product_magnitude = 0;
      for (int k = 0; k < kQuantBlockSize; ++k) {
        product += value_of(block, k) * x_values[b * kQuantBlockSize + k];
        product_magnitude += std::abs(value_of(block, k) * x_values[b * kQuantBlockSize + k]);
      }
      sum += scale * double(product);
      magnitude += std::abs(scale) * double(product_magnitude);
    }
    exact[j] = sum;
    bound[j] = gamma(in / 4 + 1) * magnitude;
  }
  for (const InstructionSet& set : built_instruction_sets()) {
    std::vector<float> y(out, std::nanf(""));  // every output must be written
    set.kernels(kBlockType<Block>)
        .dot_rows(y.data(), weight.data(), row_blocks * kQuantBlockSize, x.data(), in, out);
    for (int j = 0; j < out; ++j) {
      ASSERT_LE(std::abs(y[j] - exact[j]), bound[j])
          << set.name << " " << weight_type_name(kBlockType<Block>) << " " << what << " row " << j;
    }
  }
}

TEST(WeightKernels, BlockDotRowsMatchFloat64) {
  std::mt19937 random(5);
  std::uniform_int_distribution<int> exponent(-8, 8);
  for (int in : {32, 64, 96, 768, 3072}) {
    for (int out : {1, 3, 5, 8, 768}) {
      // One spare block per row, as in a fused matrix: no row but the first starts aligned.
      const long row_blocks = in / kQuantBlockSize + 1;
      // Each block of x with its own magnitude, from 2^-8 to 2^8.
      std::vector<float> x = random_floats(in, random);
      for (int b = 0; b < in / kQuantBlockSize; ++b) {
        const float magnitude = std::ldexp(1.0f, exponent(random));
        for (int k = 0; k < kQuantBlockSize; ++k) x[b * kQuantBlockSize + k] *= magnitude;
      }
      const std::string what = "in=" + std::to_string(in) + " out=" + std::to_string(out);
      expect_dot_rows_match(random_q8_blocks(out * row_blocks, random), row_blocks, x, out, what);
      expect_dot_rows_match(random_q4_blocks(out * row_blocks, random), row_blocks, x, out, what);
    }
  }
}

// Extreme blocks of x: all zeros; one huge value among small ones (which round to 0); +-127
// after scaling in every position; ties (x.5, which roundf takes away from zero); magnitudes so
// small that the scale is not a normal float (values 0), and float subnormals.
std::vector<std::vector<float>> extreme_x_blocks(std::mt19937& random) {
  std::vector<std::vector<float>> x_blocks;
  x_blocks.emplace_back(kQuantBlockSize, 0.0f);
  x_blocks.push_back(random_floats(kQuantBlockSize, random));
  x_blocks.back()[5] = 1e20f;
  x_blocks.emplace_back();
  for (int k = 0; k < kQuantBlockSize; ++k) x_blocks.back().push_back(k % 3 ? -0.37f : 0.37f);
  x_blocks.emplace_back(kQuantBlockSize, -5.0f);
  x_blocks.emplace_back(1, 127.0f);  // scale 1: each value below is its own rounding
  for (int k = 1; k < kQuantBlockSize; ++k) x_blocks.back().push_back(float(k - 16) + 0.5f);
  x_blocks.push_back(random_floats(kQuantBlockSize, random));
  for (float& v : x_blocks.back()) v *= 1.2e-36f;  // scale about 1e-38, not a normal float
  x_blocks.push_back(random_floats(kQuantBlockSize, random));
  for (float& v : x_blocks.back()) v *= 1e-40f;
  return x_blocks;
}

// Each block of x_blocks against each weight block: row j is weight_blocks[j] repeated over
// every block of x, then 5 random rows (`random_rows`); then the blocks of x one at a time, so
// that each is also the only one (and in = 32).
template <class Block>
void expect_dot_rows_of_extreme_blocks(const std::vector<std::vector<float>>& x_blocks,
                                       const std::vector<Block>& weight_blocks,
                                       const std::vector<Block>& random_rows) {
  std::vector<float> x;
  for (const std::vector<float>& block : x_blocks) x.insert(x.end(), block.begin(), block.end());
  const long row_blocks = long(x_blocks.size());
  std::vector<Block> weight;
  for (const Block& block : weight_blocks) weight.insert(weight.end(), row_blocks, block);
  weight.insert(weight.end(), random_rows.begin(), random_rows.end());
  expect_dot_rows_match(weight, row_blocks, x, int(weight.size() / row_blocks), "extreme blocks");
  for (std::size_t b = 0; b < x_blocks.size(); ++b) {
    std::vector<Block> column;
    for (std::size_t j = 0; j < weight.size(); j += row_blocks) column.push_back(weight[j + b]);
    expect_dot_rows_match(column, 1, x_blocks[b], int(column.size()),
                          "extreme x block " + std::to_string(b));
  }
}

// Every extreme block of x against every extreme block of q8_0 weights: -128 (which q8_0 never
// produces but a file may hold; the sign trick must read |-128| as 128), +-127 against x's
// +-127 (the largest products, 2 x 128 x 127 per byte pair), alternating signs, zeros, the
// largest and a subnormal binary16 scale.
TEST(WeightKernels, Q8DotRowsOfExtremeBlocks) {
  std::mt19937 random(6);
  const std::vector<std::vector<float>> x_blocks = extreme_x_blocks(random);
  const long row_blocks = long(x_blocks.size());
  auto block_of = [](uint16_t scale, auto value_at) {
    BlockQ8_0 block{.scale = scale, .values = {}};
    for (int k = 0; k < kQuantBlockSize; ++k) block.values[k] = int8_t(value_at(k));
    return block;
  };
  const uint16_t one = 0x3C00, largest = 0x7BFF, smallest = 0x0001, minus_half = 0xB800;
  const std::vector<BlockQ8_0> weight_blocks = {
      block_of(one, [](int) { return -128; }),
      block_of(minus_half, [](int) { return -128; }),
      block_of(one, [](int) { return 127; }),
      block_of(one, [](int) { return -127; }),
      block_of(one, [](int k) { return k % 2 ? 127 : -128; }),
      block_of(one, [](int k) { return k % 3 ? -127 : 127; }),
      block_of(one, [](int) { return 0; }),
      block_of(largest, [](int k) { return k - 16; }),
      block_of(smallest, [](int k) { return 127 - k; }),
  };
  expect_dot_rows_of_extreme_blocks(x_blocks, weight_blocks,
                                    random_q8_blocks(5 * row_blocks, random));
}

// The same for q4_0: every value -8 (nibble 0, whose sign and magnitude the sign trick must get
// right) and 7 (nibble 15), each against x's +-127, the two alternating within a byte and across
// bytes, the zero value (nibble 8), the largest and a subnormal binary16 scale.
TEST(WeightKernels, Q4DotRowsOfExtremeBlocks) {
  std::mt19937 random(16);
  const std::vector<std::vector<float>> x_blocks = extreme_x_blocks(random);
  const long row_blocks = long(x_blocks.size());
  auto block_of = [](uint16_t scale, uint8_t low, uint8_t high) {
    BlockQ4_0 block{.scale = scale, .nibbles = {}};
    for (int k = 0; k < kQuantBlockSize / 2; ++k) {
      block.nibbles[k] = k % 2 ? uint8_t(high << 4 | low) : uint8_t(low << 4 | high);
    }
    return block;
  };
  const uint16_t one = 0x3C00, largest = 0x7BFF, smallest = 0x0001, minus_half = 0xB800;
  const std::vector<BlockQ4_0> weight_blocks = {
      block_of(one, 0, 0),       block_of(minus_half, 0, 0), block_of(one, 15, 15),
      block_of(one, 0, 15),      block_of(one, 8, 8),        block_of(largest, 15, 0),
      block_of(smallest, 3, 12),
  };
  expect_dot_rows_of_extreme_blocks(x_blocks, weight_blocks,
                                    random_q4_blocks(5 * row_blocks, random));
}

// A NaN or an infinity in x, or a NaN weight scale, makes every product through it NaN
// (weight_conversion.h), as it would in f32; the other rows stay exact.
template <class Block>
void expect_dot_rows_propagate_non_finite(std::vector<Block> weight, std::mt19937& random) {
  const int in = 96, out = 5;
  const long row_blocks = in / kQuantBlockSize;
  const WeightType type = kBlockType<Block>;
  const std::vector<float> x = random_floats(in, random);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> x_bad = x;
    x_bad[40] = bad;
    for (const InstructionSet& set : built_instruction_sets()) {
      std::vector<float> y(out, 0.0f);
      set.kernels(type).dot_rows(y.data(), weight.data(), in, x_bad.data(), in, out);
      for (int j = 0; j < out; ++j) {
        EXPECT_TRUE(std::isnan(y[j])) << set.name << " " << weight_type_name(type) << " x " << bad;
      }
    }
  }
  weight[2 * row_blocks + 1].scale = 0x7E00;  // NaN, in row 2
  for (const InstructionSet& set : built_instruction_sets()) {
    std::vector<float> y(out, 0.0f);
    set.kernels(type).dot_rows(y.data(), weight.data(), in, x.data(), in, out);
    for (int j = 0; j < out; ++j) {
      EXPECT_EQ(std::isnan(y[j]), j == 2)
          << set.name << " " << weight_type_name(type) << " row " << j;
    }
  }
}

TEST(WeightKernels, BlockDotRowsPropagateNonFinite) {
  std::mt19937 random(7);
  expect_dot_rows_propagate_non_finite(random_q8_blocks(5 * 3, random), random);
  expect_dot_rows_propagate_non_finite(random_q4_blocks(5 * 3, random), random);
}

// The relative RMS error, over 768 outputs, of `set`'s dot_rows with 768 x 768 uniform random
// weights quantized to the block type `Block`, against the float64 product of the unquantized
// weights and x (also uniform in [-1, 1]).
template <class Block>
double quantized_product_error(const InstructionSet& set, std::mt19937& random) {
  const int in = 768, out = 768;
  const std::vector<float> weights = random_floats(std::size_t(in) * out, random);
  const std::vector<float> x = random_floats(in, random);
  std::vector<Block> quantized(std::size_t(in) * out / kQuantBlockSize);
  convert_row(kBlockType<Block>, weights.data(), quantized.data(), long(in) * out);
  std::vector<float> y(out);
  set.kernels(kBlockType<Block>).dot_rows(y.data(), quantized.data(), in, x.data(), in, out);
  double error_squares = 0, exact_squares = 0;
  for (int j = 0; j < out; ++j) {
    double exact = 0;
    for (int i = 0; i < in; ++i) exact += double(weights[std::size_t(j) * in + i]) * x[i];
    error_squares += (y[j] - exact) * (y[j] - exact);
    exact_squares += exact * exact;
  }
  return std::sqrt(error_squares / exact_squares);
}

// The error quantization brings. For uniform random weights and x in [-1, 1], a q8_0 block's
// scale is about max|x| / 127 = (32/33) / 127, so each quantized value is off by a uniform error
// of variance scale^2 / 12, against the value's own variance 1/3; the relative error of a long
// dot product, that of its two factors combined, is sqrt(2 (scale^2 / 12) / (1/3)) = 0.54% in
// RMS over the outputs. The bound is 1%: truncating both factors instead of rounding them would
// give 1.1%.
TEST(WeightKernels, Q8DotRowsNearTheF32Product) {
  std::mt19937 random(8);
  for (const InstructionSet& set : built_instruction_sets()) {
    EXPECT_LE(quantized_product_error<BlockQ8_0>(set, random), 0.01) << set.name;
  }
}

// The same for q4_0: a block's scale is about max|x| / 8 = (32/33) / 8, so each weight is off by
// a uniform error of variance scale^2 / 12 against its own 1/3: 6.1% in RMS over long products
// (x's q8 rounding adds 0.004% in quadrature). The bound is 7%: truncating instead of rounding
// would give twice that.
TEST(WeightKernels, Q4DotRowsNearTheF32Product) {
  std::mt19937 random(18);
  for (const InstructionSet& set : built_instruction_sets()) {
    const double relative_rms = quantized_product_error<BlockQ4_0>(set, random);
    EXPECT_LE(relative_rms, 0.07) << set.name;
    std::printf("%s q4_0 dot_rows: relative RMS error %.2f%% against the f32 product\n", set.name,
                100 * relative_rms);
  }
}

// scale x value, exactly, for every value from -128 to 127 and scales of every kind (zero, the
// smallest subnormal, negative, the largest).
TEST(WeightKernels, Q8ToFloatsIsExact) {
  std::mt19937 random(9);
  std::vector<BlockQ8_0> blocks = random_q8_blocks(64, random);
  const uint16_t scales[] = {0x0000, 0x0001, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF};
  for (int b = 0; b < 8; ++b) {
    blocks[b].scale = scales[b % 6];
    for (int k = 0; k < kQuantBlockSize; ++k) blocks[b].values[k] = int8_t(-128 + 32 * (b % 8) + k);
  }
  const int n = int(blocks.size()) * kQuantBlockSize;
  for (const InstructionSet& set : built_instruction_sets()) {
    std::vector<float> y(n, std::nanf(""));
    set.kernels(WeightType::kQ8_0).to_floats(y.data(), blocks.data(), n);
    for (int i = 0; i < n; ++i) {
      const BlockQ8_0& block = blocks[i / kQuantBlockSize];
      ASSERT_EQ(double(y[i]), f16_value(block.scale) * block.values[i % kQuantBlockSize])
          << set.name << " element " << i;
    }
  }
}

// scale x (q - 8), exactly, for every pair of nibbles and scales of every kind.
TEST(WeightKernels, Q4ToFloatsIsExact) {
  std::mt19937 random(19);
  std::vector<BlockQ4_0> blocks = random_q4_blocks(64, random);
  const uint16_t scales[] = {0x0000, 0x0001, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF};
  for (int b = 0; b < 16; ++b) {
    blocks[b].scale = scales[b % 6];
    for (int k = 0; k < kQuantBlockSize / 2; ++k) blocks[b].nibbles[k] = uint8_t(16 * b + k);
  }
  const int n = int(blocks.size()) * kQuantBlockSize;
  for (const InstructionSet& set : built_instruction_sets()) {
    std::vector<float> y(n, std::nanf(""));
    set.kernels(WeightType::kQ4_0).to_floats(y.data(), blocks.data(), n);
    for (int i = 0; i < n; ++i) {
      const BlockQ4_0& block = blocks[i / kQuantBlockSize];
      ASSERT_EQ(double(y[i]), f16_value(block.scale) * value_of(block, i % kQuantBlockSize))
          << set.name << " element " << i;
    }
  }
}

// weight_kernels() and gemm_kernels() hand out the widest instruction set the CPU runs; the
// block types have no accumulate_rows.
TEST(WeightKernels, DispatchPicksTheWidestInstructionSet) {
  const InstructionSet widest = built_instruction_sets().back();
#if ATTN_KERNELS_X86
  // avx512_bf16 is avx512's micro-kernels with bf16 products added, in its place.
  if (cpu_features().avx512_bf16) {
    EXPECT_EQ(&gemm_kernels(), &avx512_bf16_gemm_kernels());
    EXPECT_EQ(gemm_kernels().multiply_tile, avx512_gemm_kernels().multiply_tile);
  } else {
    EXPECT_EQ(&gemm_kernels(), &widest.gemm()) << widest.name;
  }
#else
  EXPECT_EQ(&gemm_kernels(), &widest.gemm()) << widest.name;
#endif
  for (WeightType type : kAllTypes) {
    EXPECT_EQ(weight_kernels(type).dot_rows, widest.kernels(type).dot_rows) << widest.name;
    EXPECT_EQ(weight_kernels(type).accumulate_rows, widest.kernels(type).accumulate_rows)
        << widest.name;
    EXPECT_EQ(weight_kernels(type).to_floats, widest.kernels(type).to_floats) << widest.name;
  }
  for (const InstructionSet& set : built_instruction_sets()) {
    EXPECT_EQ(set.kernels(WeightType::kQ8_0).accumulate_rows, nullptr) << set.name;
    EXPECT_EQ(set.kernels(WeightType::kQ4_0).accumulate_rows, nullptr) << set.name;
  }
}

// linear_forward with weights of each type, in both layouts, one row (decode) and several,
// with and without a bias. The weights are a column slice of a wider matrix, as GPT-2's key is
// of c_attn, or rows 3 elements apart; y starts as NaN, which no output may keep.
TEST(LinearForward, EveryWeightTypeMatchesFloat64) {
  std::mt19937 random(4);
  struct Size {
    int in, out;
  };
  for (WeightType type : kTypes) {
    for (bool in_out_layout : {false, true}) {
      for (Size size : {Size{33, 67}, Size{768, 200}}) {
        const int in = size.in, out = size.out;
        const int stride = in_out_layout ? 3 * out : in + 3;
        const Matrix weight(type, in_out_layout ? in : out, stride, random);
        const long first = in_out_layout ? out : 0;  // the slice's first element
        auto w = [&](int i, int j) {                 // W[j, i], the weight from input i to output j
          return in_out_layout ? weight.values[first + std::size_t(i) * stride + j]
                               : weight.values[std::size_t(j) * stride + i];
        };
        const std::vector<float> bias_values = random_floats(out, random);
        for (bool with_bias : {false, true}) {
          Linear linear{.weight = weight.data(),
                        .bias = with_bias ? bias_values.data() : nullptr,
                        .in = in,
                        .out = out,
                        .in_out_layout = in_out_layout,
                        .row_stride = stride,
                        .type = type};
          linear.weight = linear.element(first);  // the slice starts `first` elements in
          // bf16 weights with and without bf16_products (--dtype bf16): with them, several rows
          // are bf16 products where the CPU has them (gemm.h), x rounded to bf16 first; without,
          // bf16 weights times f32 x, as Hugging Face multiplies a bf16 checkpoint.
          for (const bool bf16_products : {false, true}) {
            if (bf16_products && type != WeightType::kBF16) continue;
            linear.bf16_products = bf16_products;
            for (int rows : {1, 4}) {
              const std::vector<float> x = random_floats(std::size_t(rows) * in, random);
              const bool rounds_x = rows > 1 && bf16_products && gemm_kernels().bf16;
              std::vector<float> y(std::size_t(rows) * out, std::nanf(""));
              linear_forward(y.data(), x.data(), rows, linear);
              for (int r = 0; r < rows; ++r) {
                for (int j = 0; j < out; ++j) {
                  double exact = with_bias ? bias_values[j] : 0.0;
                  double magnitude = std::abs(exact);
                  for (int i = 0; i < in; ++i) {
                    const float x_ri = x[std::size_t(r) * in + i];
                    const double product = (rounds_x ? bf16_rounded(x_ri) : x_ri) * w(i, j);
                    exact += product;
                    magnitude += std::abs(product);
                  }
                  const double error = std::abs(y[std::size_t(r) * out + j] - exact);
                  ASSERT_LE(error, gamma(in + 1) * magnitude)
                      << weight_type_name(type) << (in_out_layout ? " [in, out]" : " [out, in]")
                      << " in=" << in << " out=" << out << (with_bias ? " with" : " without")
                      << " bias, rows=" << rows << (bf16_products ? ", bf16 products" : "")
                      << ": y[" << r << ", " << j << "]";
                }
              }
            }
          }
        }
      }
    }
  }
}

// Separate rows (RowKind::kSeparate: beam search's beams in one pass) each come out bit for bit
// as the same row multiplied alone, for every weight type and layout, through one map and
// through two that share their input (slices of one fused [in, out] matrix, as GPT-2's c_attn,
// or two [out, in] matrices); the shapes need several chunks of weights per thread.
TEST(LinearForward, SeparateRowsEqualLoneRows) {
  std::mt19937 random(5);
  const int in = 1024, out = 544, rows = 7;
  for (WeightType type : kAllTypes) {
    for (bool in_out_layout : {false, true}) {
      if (in_out_layout && is_block_type(type)) continue;  // always stored [out, in]
      // Two maps' weights, side by side in one matrix for [in, out], one after the other for
      // [out, in].
      const int stored_rows = in_out_layout ? in : 2 * out;
      const int stride = in_out_layout ? 2 * out : in;
      const std::vector<float> values = random_floats(std::size_t(stored_rows) * stride, random);
      std::vector<std::byte> weights(storage_bytes(type, long(stored_rows) * stride));
      convert_row(type, values.data(), weights.data(), long(stored_rows) * stride);
      const std::vector<float> bias = random_floats(2 * out, random);
      Linear maps[2];
      for (int m = 0; m < 2; ++m) {
        maps[m] = Linear{.weight = weights.data(),
                         .bias = bias.data() + m * out,
                         .in = in,
                         .out = out,
                         .in_out_layout = in_out_layout,
                         .row_stride = stride,
                         .type = type};
        maps[m].weight = maps[m].element(in_out_layout ? long(m) * out : long(m) * out * stride);
      }
      const std::vector<float> x = random_floats(std::size_t(rows) * in, random);
      for (int n_maps : {1, 2}) {
        std::vector<float> together(std::size_t(2) * rows * out), alone(std::size_t(2) * out);
        const LinearOutput outputs[] = {{.linear = &maps[0], .y = together.data()},
                                        {.linear = &maps[1], .y = together.data() + rows * out}};
        linear_forward_shared_input(std::span(outputs, n_maps), x.data(), rows, RowKind::kSeparate);
        for (int r = 0; r < rows; ++r) {
          const LinearOutput lone[] = {{.linear = &maps[0], .y = alone.data()},
                                       {.linear = &maps[1], .y = alone.data() + out}};
          linear_forward_shared_input(std::span(lone, n_maps), x.data() + r * in, 1);
          for (int m = 0; m < n_maps; ++m) {
            for (int j = 0; j < out; ++j) {
              ASSERT_EQ(together[std::size_t(m) * rows * out + r * out + j],
                        alone[std::size_t(m) * out + j])
                  << weight_type_name(type) << (in_out_layout ? " [in, out]" : " [out, in]") << ", "
                  << n_maps << " maps: map " << m << ", row " << r << ", output " << j;
            }
          }
        }
      }
    }
  }
}

// gemm_columns with each instruction set's micro-kernel, for each weight type and layout, on
// shapes that leave edge tiles everywhere: rows from 1 to past two tiles and not a multiple of
// any tile height, columns not a multiple of any panel width and past one block of 256,
// depths past one block of 256 and not a multiple of it. C starts from random values (the
// product is added to it), and only columns [begin, end) may change.
TEST(Gemm, EveryMicroKernelMatchesFloat64) {
  std::mt19937 random(6);
  struct Shape {
    int rows, in, out, begin, end;
  };
  const Shape shapes[] = {{1, 1, 1, 0, 1},        {1, 64, 33, 0, 33},    {5, 31, 47, 3, 45},
                          {7, 300, 100, 16, 100}, {13, 257, 65, 0, 65},  {25, 96, 300, 0, 300},
                          {12, 512, 64, 0, 64},   {37, 40, 290, 31, 289}};
  for (const InstructionSet& set : built_instruction_sets()) {
    for (WeightType type : kAllTypes) {
      for (bool in_out_layout : {false, true}) {
        if (is_block_type(type) && in_out_layout) continue;  // always stored [out, in]
        for (const Shape& shape : shapes) {
          if (is_block_type(type) && shape.in % kQuantBlockSize) continue;
          const int rows = shape.rows, in = shape.in, out = shape.out;
          // Rows of the stored matrix 32 elements (one block) longer than needed.
          const int stride = (in_out_layout ? out : in) + kQuantBlockSize;
          const int stored_rows = in_out_layout ? in : out;
          const std::size_t n_blocks = std::size_t(stored_rows) * stride / kQuantBlockSize;
          std::vector<double> values;  // each stored element's exact value
          std::vector<BlockQ8_0> q8_blocks;
          std::vector<BlockQ4_0> q4_blocks;
          std::optional<Matrix> matrix;
          const void* data;
          const auto exact_values = [&values](const auto& blocks) {
            for (const auto& block : blocks) {
              for (int k = 0; k < kQuantBlockSize; ++k) {
                values.push_back(f16_value(block.scale) * value_of(block, k));
              }
            }
            return blocks.data();
          };
          if (type == WeightType::kQ8_0) {
            q8_blocks = random_q8_blocks(n_blocks, random);
            data = exact_values(q8_blocks);
          } else if (type == WeightType::kQ4_0) {
            q4_blocks = random_q4_blocks(n_blocks, random);
            data = exact_values(q4_blocks);
          } else {
            matrix.emplace(type, stored_rows, stride, random);
            values = matrix->values;
            data = matrix->data();
          }
          auto b = [&](int k, int j) {  // B[k, j]
            return in_out_layout ? values[std::size_t(k) * stride + j]
                                 : values[std::size_t(j) * stride + k];
          };
          const Linear linear{.weight = data,
                              .bias = nullptr,
                              .in = in,
                              .out = out,
                              .in_out_layout = in_out_layout,
                              .row_stride = stride,
                              .type = type};
          // A and C with 5 spare elements per row.
          const long a_stride = in + 5, c_stride = out + 5;
          const std::vector<float> a = random_floats(std::size_t(rows) * a_stride, random);
          const std::vector<float> c_before = random_floats(std::size_t(rows) * c_stride, random);
          std::vector<float> c = c_before;
          gemm_columns(set.gemm(), c.data(), c_stride, a.data(), a_stride, rows, linear,
                       shape.begin, shape.end);
          for (int r = 0; r < rows; ++r) {
            for (int j = 0; j < c_stride; ++j) {
              const std::size_t at = std::size_t(r) * c_stride + j;
              const std::string where =
                  std::string(set.name) + " " + weight_type_name(type) +
                  (in_out_layout ? " [in, out]" : " [out, in]") + " rows=" + std::to_string(rows) +
                  " in=" + std::to_string(in) + " out=" + std::to_string(out) + ": c[" +
                  std::to_string(r) + ", " + std::to_string(j) + "]";
              if (j < shape.begin || j >= shape.end) {
                ASSERT_EQ(c[at], c_before[at]) << where << " is outside the columns asked for";
                continue;
              }
              double exact = c_before[at], magnitude = std::abs(exact);
              for (int k = 0; k < in; ++k) {
                exact += a[std::size_t(r) * a_stride + k] * b(k, j);
                magnitude += std::abs(a[std::size_t(r) * a_stride + k] * b(k, j));
              }
              ASSERT_LE(std::abs(c[at] - exact), gamma(in + 1) * magnitude) << where;
            }
          }
        }
      }
    }
  }
}

// gemm_columns of `packed` (b with its panels packed once) gives the sums of b packed at the call,
// bit for bit, for columns [begin, end) of rows random rows of A added to a random C. `what`
// names the case in a failure.
void expect_packed_equals_per_call(const GemmKernels& kernels, const Linear& b,
                                   const Linear& packed, int rows, int begin, int end,
                                   std::mt19937& random, const std::string& what) {
  const long a_stride = b.in + 1, c_stride = b.out + 2;
  const std::vector<float> a = random_floats(std::size_t(rows) * a_stride, random);
  std::vector<float> expected = random_floats(std::size_t(rows) * c_stride, random);
  std::vector<float> c = expected;
  gemm_columns(kernels, expected.data(), c_stride, a.data(), a_stride, rows, b, begin, end);
  gemm_columns(kernels, c.data(), c_stride, a.data(), a_stride, rows, packed, begin, end);
  for (std::size_t i = 0; i < c.size(); ++i) {
    ASSERT_EQ(c[i], expected[i]) << what << " rows=" << rows << " in=" << b.in << " begin=" << begin
                                 << ": element " << i;
  }
  EXPECT_THROW(
      gemm_columns(kernels, c.data(), c_stride, a.data(), a_stride, rows, packed, begin + 1, end),
      std::logic_error)
      << what << ": a product from inside a panel";
}

// f32 weights packed once (pack_weight_panels, Linear::panels) give gemm_columns the sums of
// the weights packed at each call, bit for bit, on every instruction set, for both stored
// layouts, column ranges from the first panel and from a later one, and shapes with edge panels
// and depths past a block of 256.
TEST(Gemm, PanelsPackedOnceGiveTheSameSumsBitForBit) {
  std::mt19937 random(7);
  struct Shape {
    int rows, in, out, begin, end;
  };
  const Shape shapes[] = {
      {1, 768, 100, 0, 100}, {13, 300, 70, 32, 70}, {25, 40, 290, 64, 289}, {12, 513, 64, 0, 64}};
  for (const InstructionSet& set : built_instruction_sets()) {
    const GemmKernels& kernels = set.gemm();
    for (bool in_out_layout : {false, true}) {
      for (const Shape& shape : shapes) {
        const int stride = (in_out_layout ? shape.out : shape.in) + 3;
        const std::vector<float> weights =
            random_floats(std::size_t(in_out_layout ? shape.in : shape.out) * stride, random);
        Linear linear{.weight = weights.data(),
                      .in = shape.in,
                      .out = shape.out,
                      .in_out_layout = in_out_layout,
                      .row_stride = stride};
        std::vector<float> panels(std::size_t(weight_panels_size(kernels, linear)));
        pack_weight_panels(kernels, panels.data(), linear);
        Linear packed = linear;
        packed.panels = panels.data();
        packed.packed_by = &kernels;
        expect_packed_equals_per_call(
            kernels, linear, packed, shape.rows, shape.begin, shape.end, random,
            std::string(set.name) + (in_out_layout ? " [in, out]" : " [out, in]"));
      }
    }
  }
}

// A packed Linear (as an encoder's, at load) gives each row the same outputs alone (one row, a
// decode step's path), among separate rows, and among the rows of a product: they all go
// through the GEMM, whose sums for a row do not depend on the other rows.
TEST(LinearForward, PackedRowsEqualLoneRows) {
  std::mt19937 random(8);
  const int in = 300, out = 70, rows = 14;
  const std::vector<float> weights = random_floats(std::size_t(out) * in, random);
  const std::vector<float> bias = random_floats(out, random);
  Linear linear{
      .weight = weights.data(), .bias = bias.data(), .in = in, .out = out, .row_stride = in};
  std::vector<float> panels(std::size_t(weight_panels_size(gemm_kernels(), linear)));
  pack_weight_panels(gemm_kernels(), panels.data(), linear);
  linear.panels = panels.data();
  linear.packed_by = &gemm_kernels();
  expect_rows_equal_alone(linear, random_floats(std::size_t(rows) * in, random), rows, "f32");
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// ---- bf16 products (Bf16GemmKernels, gemm_bf16_avx512.cpp) ----
//
// A is rounded to bf16 and multiplied by B's bf16 in vdpbf16ps: a product of two bf16 (8
// significant bits each) is exact in f32, so the only error left is the f32 summation's, and
// the bound is the f32 path's: gamma(n) * sum |product| per output (Higham, 3.1), the products
// being those of the rounded A, summed exactly in float64.

#if ATTN_KERNELS_X86
// The bf16 kernels, or nullptr with a message where the CPU cannot run them (or ATTN_KERNELS
// caps them off).
const Bf16GemmKernels* runnable_bf16_kernels() {
  if (!cpu_features().avx512_bf16) return nullptr;
  return avx512_bf16_gemm_kernels().bf16;
}
#define ATTN_REQUIRE_BF16_KERNELS()                                                             \
  if (!runnable_bf16_kernels()) {                                                               \
    GTEST_SKIP() << "this CPU has no AVX512_BF16 (or ATTN_KERNELS caps it off): the bf16 GEMM " \
                    "kernels are built but not tested here";                                    \
  }
#endif

// Activations of every finite kind: random bit patterns over the whole range, denormals, exact
// midpoints between two bf16 (ties, both to an even and from an odd kept bit), and zeros.
TEST(Bf16Gemm, RoundRowsIsNearestEven) {
#if ATTN_KERNELS_X86
  ATTN_REQUIRE_BF16_KERNELS();
  const Bf16GemmKernels& kernels = *runnable_bf16_kernels();
  std::mt19937 random(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
  auto random_activation = [&](int kind) {
    uint32_t pattern = bits(random);
    if (kind == 1) pattern &= 0x807FFFFFu;                               // denormal (or zero)
    if (kind == 2) pattern = (pattern & 0xFFFF0000u) | 0x8000u;          // a tie
    if (kind == 3) pattern &= 0x80000000u;                               // a zero
    if ((pattern & 0x7F800000u) == 0x7F800000u) pattern &= 0xBFFFFFFFu;  // finite
    return std::bit_cast<float>(pattern);
  };
  std::uniform_int_distribution<int> kind(0, 5);  // half random patterns, half the others
  for (int depth : {1, 2, 3, 31, 32, 33, 64, 255, 256}) {
    const int rows = 3, pairs = (depth + 1) / 2;
    const long a_stride = depth + 5, pair_stride = pairs + 2;
    std::vector<float> a(std::size_t(rows) * a_stride, std::nanf(""));  // NaN past depth
    for (int r = 0; r < rows; ++r) {
      for (int k = 0; k < depth; ++k)
        a[r * a_stride + k] = random_activation(std::max(0, kind(random) - 2));
    }
    constexpr uint32_t kUntouched = 0xDEADBEEF;
    std::vector<uint32_t> rounded(std::size_t(rows) * pair_stride, kUntouched);
    kernels.round_rows(rounded.data(), pair_stride, a.data(), a_stride, depth, rows);
    for (int r = 0; r < rows; ++r) {
      for (int p = 0; p < pair_stride; ++p) {
        const uint32_t pair = rounded[r * pair_stride + p];
        if (p >= pairs) {
          ASSERT_EQ(pair, kUntouched) << "depth=" << depth << ": row " << r << " past its pairs";
          continue;
        }
        for (int half = 0; half < 2; ++half) {
          const int k = 2 * p + half;
          const uint16_t expected = k < depth ? bf16_of_activation(a[r * a_stride + k]) : 0;
          ASSERT_EQ(uint16_t(pair >> (16 * half)), expected)
              << "depth=" << depth << ": a[" << r << ", " << k
              << "] = " << (k < depth ? a[r * a_stride + k] : 0.0f) << " (bits " << std::hex
              << (k < depth ? std::bit_cast<uint32_t>(a[r * a_stride + k]) : 0u) << ")";
        }
      }
    }
  }
#else
  GTEST_SKIP() << "not an x86-64 build: no bf16 GEMM kernels";
#endif
}

// gemm_columns with bf16 weights through the bf16 kernels, in both layouts, on every row count
// of a tile and past three tiles, depths of 1 and 2 elements, odd depths (one pair half empty)
// within one depth block of 256 and past it, and widths that leave edge panels. The elements
// that lie beyond the product in the stored rows of B and of A are NaN, so that reading one
// shows; C starts from random values, and only columns [begin, end) may change.
TEST(Bf16Gemm, ProductsMatchFloat64OfRoundedA) {
#if ATTN_KERNELS_X86
  ATTN_REQUIRE_BF16_KERNELS();
  const GemmKernels& kernels = avx512_bf16_gemm_kernels();
  std::mt19937 random(8);
  std::vector<int> row_counts;
  for (int rows = 1; rows <= 13; ++rows) row_counts.push_back(rows);
  row_counts.push_back(37);
  double worst = 0;  // the largest error as a fraction of its bound
  for (bool in_out_layout : {false, true}) {
    for (int in : {1, 2, 31, 32, 33, 301, 768}) {
      for (int out : {1, 17, 31, 33, 773}) {
        // Rows of the stored matrix 32 elements longer than the product's, all NaN.
        const int stride = (in_out_layout ? out : in) + 32;
        const int stored_rows = in_out_layout ? in : out;
        Matrix weight(WeightType::kBF16, stored_rows, stride, random);
        for (int row = 0; row < stored_rows; ++row) {
          for (int e = stride - 32; e < stride; ++e)
            weight.halves[std::size_t(row) * stride + e] = 0x7FC0;
        }
        auto b = [&](int k, int j) {  // B[k, j]
          return in_out_layout ? weight.values[std::size_t(k) * stride + j]
                               : weight.values[std::size_t(j) * stride + k];
        };
        const Linear linear{.weight = weight.data(),
                            .bias = nullptr,
                            .in = in,
                            .out = out,
                            .in_out_layout = in_out_layout,
                            .row_stride = stride,
                            .type = WeightType::kBF16,
                            .bf16_products = true};
        // All columns, and an inner range (as a thread's share is).
        const int begin = out / 5, end = out - out / 7;
        for (int rows : row_counts) {
          const long a_stride = in + 5, c_stride = out + 5;
          std::vector<float> a = random_floats(std::size_t(rows) * a_stride, random);
          for (int r = 0; r < rows; ++r)
            std::fill_n(a.begin() + r * a_stride + in, 5, std::nanf(""));
          std::vector<double> a_rounded(a.size());  // each element of A as bf16
          for (std::size_t i = 0; i < a.size(); ++i) a_rounded[i] = bf16_rounded(a[i]);
          const std::vector<float> c_before = random_floats(std::size_t(rows) * c_stride, random);
          std::vector<float> c = c_before;
          gemm_columns(kernels, c.data(), c_stride, a.data(), a_stride, rows, linear, begin, end);
          for (int r = 0; r < rows; ++r) {
            for (int j = 0; j < c_stride; ++j) {
              const std::size_t at = std::size_t(r) * c_stride + j;
              const std::string where = std::string(in_out_layout ? "[in, out]" : "[out, in]") +
                                        " rows=" + std::to_string(rows) +
                                        " in=" + std::to_string(in) +
                                        " out=" + std::to_string(out) + ": c[" + std::to_string(r) +
                                        ", " + std::to_string(j) + "]";
              if (j < begin || j >= end) {
                ASSERT_EQ(c[at], c_before[at]) << where << " is outside the columns asked for";
                continue;
              }
              double exact = c_before[at], magnitude = std::abs(exact);
              for (int k = 0; k < in; ++k) {
                const double product = a_rounded[std::size_t(r) * a_stride + k] * b(k, j);
                exact += product;
                magnitude += std::abs(product);
              }
              const double bound = gamma(in + 1) * magnitude;
              ASSERT_LE(std::abs(c[at] - exact), bound) << where;
              worst = std::max(worst, std::abs(c[at] - exact) / bound);
            }
          }
        }
      }
    }
  }
  std::printf("bf16 products: the largest error is %.3g of its bound gamma(in + 1) sum |product|\n",
              worst);
#else
  GTEST_SKIP() << "not an x86-64 build: no bf16 GEMM kernels";
#endif
}

// The same product of bf16 weights through the f32 path (avx512's kernels) and the bf16 one
// differ, and only by the rounding of A: multiplying the bf16 path's A, rounded beforehand, on the
// f32 path gives sums within the summation bound of each other.
// bf16 weights packed once (pack_bf16_weight_panels, Linear::panels) give the bf16 GEMM the sums
// of the weights packed at each call, bit for bit, for both stored layouts, an odd depth past a
// block of 256, column ranges from the first panel and from a later one, and one row as well as
// many.
TEST(Bf16Gemm, PanelsPackedOnceGiveTheSameSumsBitForBit) {
#if ATTN_KERNELS_X86
  ATTN_REQUIRE_BF16_KERNELS();
  std::mt19937 random(10);
  const GemmKernels& kernels = avx512_bf16_gemm_kernels();
  struct Shape {
    int rows, in, out, begin;
  };
  for (bool in_out_layout : {false, true}) {
    for (const Shape& shape :
         {Shape{1, 768, 100, 0}, Shape{13, 301, 70, 32}, Shape{25, 40, 290, 64}}) {
      const int stride = (in_out_layout ? shape.out : shape.in) + 3;
      const Matrix weight(WeightType::kBF16, in_out_layout ? shape.in : shape.out, stride, random);
      Linear linear{.weight = weight.data(),
                    .in = shape.in,
                    .out = shape.out,
                    .in_out_layout = in_out_layout,
                    .row_stride = stride,
                    .type = WeightType::kBF16,
                    .bf16_products = true};
      std::vector<uint32_t> panels(std::size_t(bf16_weight_panels_size(*kernels.bf16, linear)));
      pack_bf16_weight_panels(*kernels.bf16, panels.data(), linear);
      Linear packed = linear;
      packed.panels = panels.data();
      packed.packed_by = kernels.bf16;
      expect_packed_equals_per_call(kernels, linear, packed, shape.rows, shape.begin, shape.out,
                                    random, in_out_layout ? "bf16 [in, out]" : "bf16 [out, in]");
    }
  }
#else
  GTEST_SKIP() << "not an x86-64 build: no bf16 GEMM kernels";
#endif
}

TEST(Bf16Gemm, DiffersFromTheF32PathByTheRoundingOfA) {
#if ATTN_KERNELS_X86
  ATTN_REQUIRE_BF16_KERNELS();
  std::mt19937 random(9);
  const int rows = 16, in = 300, out = 70;
  const Matrix weight(WeightType::kBF16, out, in, random);
  const Linear linear{.weight = weight.data(),
                      .bias = nullptr,
                      .in = in,
                      .out = out,
                      .in_out_layout = false,
                      .row_stride = in,
                      .type = WeightType::kBF16,
                      .bf16_products = true};
  const std::vector<float> a = random_floats(std::size_t(rows) * in, random);
  std::vector<float> a_rounded(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) a_rounded[i] = float(bf16_rounded(a[i]));
  std::vector<float> f32_path(std::size_t(rows) * out), bf16_path(f32_path.size()),
      rounded_f32_path(f32_path.size());
  gemm_columns(avx512_gemm_kernels(), f32_path.data(), out, a.data(), in, rows, linear, 0, out);
  gemm_columns(avx512_gemm_kernels(), rounded_f32_path.data(), out, a_rounded.data(), in, rows,
               linear, 0, out);
  gemm_columns(avx512_bf16_gemm_kernels(), bf16_path.data(), out, a.data(), in, rows, linear, 0,
               out);
  EXPECT_NE(f32_path, bf16_path) << "the bf16 path did not round A";
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < out; ++j) {
      double magnitude = 0;
      for (int k = 0; k < in; ++k) {
        magnitude +=
            std::abs(a_rounded[std::size_t(r) * in + k] * weight.values[std::size_t(j) * in + k]);
      }
      const std::size_t at = std::size_t(r) * out + j;
      ASSERT_LE(std::abs(double(bf16_path[at]) - rounded_f32_path[at]), 2 * gamma(in) * magnitude)
          << "c[" << r << ", " << j << "]";
    }
  }
#else
  GTEST_SKIP() << "not an x86-64 build: no bf16 GEMM kernels";
#endif
}

}  // namespace
}  // namespace attn
