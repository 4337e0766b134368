// RoPE and ALiBi against direct float64 formulas: odd head counts, non-power-of-two ALiBi head
// counts, partial rotary dimensions, and each rope_scaling type.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "src/model/positions.h"

namespace attn::test {
namespace {

// The rotation of Hugging Face's apply_rotary_pos_emb in float64: the first `dim` values of the
// head as halves (x1, x2), x * cos + rotate_half(x) * sin with rotate_half = (-x2, x1).
std::vector<double> rotate_reference(const std::vector<float>& head, int dim, double position,
                                     const std::vector<double>& inv_freq) {
  std::vector<double> out(head.begin(), head.end());
  const int half = dim / 2;
  for (int i = 0; i < half; ++i) {
    const double angle = position * inv_freq[i];
    out[i] = head[i] * std::cos(angle) - head[i + half] * std::sin(angle);
    out[i + half] = head[i + half] * std::cos(angle) + head[i] * std::sin(angle);
  }
  return out;
}

std::vector<double> inverse_frequencies(int dim, double theta) {
  std::vector<double> inv_freq(dim / 2);
  for (int i = 0; i < dim / 2; ++i) inv_freq[i] = 1.0 / std::pow(theta, 2.0 * i / dim);
  return inv_freq;
}

// Rotates n_heads heads of one row at `position` with attn's code and checks every value against
// the float64 formula, within float32 rounding of the angle (|angle| up to ~position).
void expect_rotation_matches(const RotaryEmbedding& rotary, int n_heads, int head_dim, int position,
                             double reference_position,
                             const std::vector<double>& reference_inv_freq) {
  std::mt19937 rng(position);
  std::uniform_real_distribution<float> value(-2, 2);
  std::vector<float> row(std::size_t(n_heads) * head_dim);
  for (float& v : row) v = value(rng);
  const std::vector<float> original = row;
  std::vector<float> cos(rotary.dim / 2), sin(rotary.dim / 2);
  const int positions[] = {position};
  rotary.angles(positions, cos.data(), sin.data());
  rotary.rotate(row.data(), 1, long(row.size()), n_heads, head_dim, cos.data(), sin.data());
  // The float32 angle carries two roundings (inv_freq, then the product): a relative error up to
  // 2.4e-7, so an absolute one up to 2.4e-7 x position; with values in [-2, 2] and two terms
  // per output, about 1e-6 x position.
  const double tolerance = 1e-6 + 1e-6 * reference_position;
  for (int h = 0; h < n_heads; ++h) {
    const std::vector<float> head(original.begin() + h * head_dim,
                                  original.begin() + (h + 1) * head_dim);
    const auto want = rotate_reference(head, rotary.dim, reference_position, reference_inv_freq);
    for (int i = 0; i < head_dim; ++i) {
      EXPECT_NEAR(row[h * head_dim + i], want[i], tolerance)
          << "head " << h << " value " << i << " position " << position;
    }
    // Values past the rotary dimension pass through untouched.
    for (int i = rotary.dim; i < head_dim; ++i) EXPECT_EQ(row[h * head_dim + i], head[i]);
  }
}

TEST(Rotary, FullAndPartialDimensionsOddHeadCounts) {
  struct Case {
    int n_heads, head_dim, dim;
    float theta;
  };
  for (const Case c : {Case{3, 16, 16, 10000}, Case{5, 32, 8, 10000}, Case{7, 24, 12, 1e6f},
                       Case{1, 64, 32, 500000}, Case{9, 10, 2, 10000}}) {
    RotaryEmbedding rotary;
    rotary.dim = c.dim;
    rotary.theta = c.theta;
    rotary.init();
    const auto reference = inverse_frequencies(c.dim, c.theta);
    for (int i = 0; i < c.dim / 2; ++i)
      EXPECT_NEAR(rotary.inv_freq[i], reference[i], 1e-6 * reference[i]);
    for (int position : {0, 1, 7, 100, 511}) {
      expect_rotation_matches(rotary, c.n_heads, c.head_dim, position, position, reference);
    }
  }
}

TEST(Rotary, LinearScalingDividesThePosition) {
  RotaryEmbedding rotary;
  rotary.dim = 16;
  rotary.theta = 500000;
  rotary.scaling = RotaryEmbedding::Scaling::kLinear;
  rotary.factor = 2;
  rotary.init();
  const auto reference = inverse_frequencies(16, 500000);
  for (int position : {1, 9, 300}) {
    expect_rotation_matches(rotary, 3, 16, position, position / 2.0, reference);
  }
}

TEST(Rotary, DynamicScalingChangesNothingWithinTheContext) {
  RotaryEmbedding rotary;
  rotary.dim = 8;
  rotary.theta = 10000;
  rotary.scaling = RotaryEmbedding::Scaling::kDynamic;
  rotary.factor = 4;
  rotary.original_max_positions = 64;
  rotary.init();
  expect_rotation_matches(rotary, 3, 8, 63, 63, inverse_frequencies(8, 10000));
  // Past it, the base grows as NTK-aware scaling says: theta (f L / L0 - (f - 1))^(d / (d - 2)).
  const int length = 200;
  const double base = 10000 * std::pow(4.0 * length / 64 - 3, 8.0 / 6);
  expect_rotation_matches(rotary, 3, 8, length - 1, length - 1, inverse_frequencies(8, base));
}

TEST(Rotary, Llama3ScalingKeepsHighAndStretchesLowFrequencies) {
  RotaryEmbedding rotary;
  rotary.dim = 64;
  rotary.theta = 500000;
  rotary.scaling = RotaryEmbedding::Scaling::kLlama3;
  rotary.factor = 8;
  rotary.low_freq_factor = 1;
  rotary.high_freq_factor = 4;
  rotary.original_max_positions = 8192;
  rotary.init();
  auto reference = inverse_frequencies(64, 500000);
  for (double& f : reference) {
    const double wavelength = 2 * std::numbers::pi / f;
    if (wavelength < 8192 / 4.0) continue;
    if (wavelength > 8192 / 1.0) {
      f /= 8;
    } else {
      const double smooth = (8192 / wavelength - 1) / (4 - 1);
      f = (1 - smooth) * f / 8 + smooth * f;
    }
  }
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(rotary.inv_freq[i], reference[i], 1e-6 * reference[i]);
  expect_rotation_matches(rotary, 3, 64, 1000, 1000, reference);
}

// BLOOM's build_alibi_tensor, in float64: 2^(-8k/n) for k = 1..n (n the largest power of two
// <= heads), then 2^(-4k/n) for odd k for the remaining heads.
std::vector<double> alibi_reference(int n_heads) {
  const int n = 1 << int(std::floor(std::log2(n_heads)));
  std::vector<double> slopes;
  for (int k = 1; k <= n; ++k) slopes.push_back(std::pow(2.0, -8.0 * k / n));
  for (int k = 1; int(slopes.size()) < n_heads; k += 2) {
    slopes.push_back(std::pow(2.0, -8.0 * k / (2 * n)));
  }
  return slopes;
}

TEST(Alibi, SlopesForAnyHeadCount) {
  for (int n_heads : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 40, 112}) {
    const std::vector<float> slopes = alibi_slopes(n_heads);
    const std::vector<double> want = alibi_reference(n_heads);
    ASSERT_EQ(slopes.size(), want.size()) << n_heads << " heads";
    for (int h = 0; h < n_heads; ++h) {
      EXPECT_NEAR(slopes[h], want[h], 1e-6 * want[h]) << n_heads << " heads, head " << h;
    }
  }
  // The published values for 8 heads: 1/2, 1/4, ..., 1/256.
  const std::vector<float> eight = alibi_slopes(8);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(eight[h], std::ldexp(1.0f, -(h + 1)));
}

}  // namespace
}  // namespace attn::test
