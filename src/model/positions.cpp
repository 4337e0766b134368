#include "src/model/positions.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>

namespace attn {

std::vector<float> rotary_inverse_frequencies(int dim, double theta) {
  // torch: 1.0 / (theta ** (arange(0, dim, 2).float() / dim)), every step rounded to float32.
  std::vector<float> inv_freq(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    const float exponent = float(2 * i) / float(dim);
    inv_freq[i] = 1.0f / float(std::pow(theta, double(exponent)));
  }
  return inv_freq;
}

namespace {

// Phi-3's longrope frequencies: 1 / (factor_i * theta^(2i/dim)), float32 at every step.
std::vector<float> long_rope_frequencies(int dim, double theta, std::span<const float> factors) {
  std::vector<float> frequencies(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    const float exponent = float(2 * i) / float(dim);
    frequencies[i] = 1.0f / (factors[i] * float(std::pow(theta, double(exponent))));
  }
  return frequencies;
}

}  // namespace

void RotaryEmbedding::init() {
  if (scaling == Scaling::kLongRope) {
    inv_freq = long_rope_frequencies(dim, theta, short_factor);
    long_inv_freq = long_rope_frequencies(dim, theta, long_factor);
    return;
  }
  inv_freq = rotary_inverse_frequencies(dim, theta);
  if (scaling != Scaling::kLlama3) return;
  // Llama 3.1: long wavelengths (low frequencies) are slowed down by `factor`, short ones kept,
  // and the band between blended smoothly (Hugging Face's _compute_llama3_parameters).
  const double low_freq_wavelength = original_max_positions / low_freq_factor;
  const double high_freq_wavelength = original_max_positions / high_freq_factor;
  for (float& frequency : inv_freq) {
    const double wavelength = 2 * std::numbers::pi / frequency;
    if (wavelength > low_freq_wavelength) {
      frequency = float(frequency / factor);
    } else if (wavelength >= high_freq_wavelength) {
      const double smooth = (original_max_positions / wavelength - low_freq_factor) /
                            (high_freq_factor - low_freq_factor);
      frequency = float((1 - smooth) * frequency / factor + smooth * frequency);
    }
  }
}

void RotaryEmbedding::angles(std::span<const int> positions, float* cos, float* sin) const {
  const int half = dim / 2;
  std::span<const float> frequencies = inv_freq;
  std::vector<float> stretched;
  // longrope, as Hugging Face's Phi-3: the factor set of each pass from its longest position,
  // so that keys cached before the sequence grew past original_max_positions keep the short one.
  const bool long_pass =
      scaling == Scaling::kLongRope && !positions.empty() &&
      *std::max_element(positions.begin(), positions.end()) + 1 > original_max_positions;
  if (long_pass) frequencies = long_inv_freq;
  if (scaling == Scaling::kDynamic && !positions.empty()) {
    // NTK-aware scaling: past the trained context, a larger base for the whole pass.
    const int length = *std::max_element(positions.begin(), positions.end()) + 1;
    if (length > original_max_positions) {
      const double base =
          theta * std::pow(double(factor) * length / original_max_positions - (double(factor) - 1),
                           double(dim) / (dim - 2));
      stretched = rotary_inverse_frequencies(dim, base);
      frequencies = stretched;
    }
  }
  for (std::size_t r = 0; r < positions.size(); ++r) {
    // Linear scaling divides the position; float32 products as in torch.
    const float position =
        scaling == Scaling::kLinear ? float(positions[r]) / factor : float(positions[r]);
    for (int i = 0; i < half; ++i) {
      const float angle = position * frequencies[i];
      cos[r * half + i] = float(std::cos(double(angle))) * attention_factor;
      sin[r * half + i] = float(std::sin(double(angle))) * attention_factor;
    }
  }
}

void RotaryEmbedding::rotate(float* x, int rows, long row_stride, int n_heads, int head_dim,
                             const float* cos, const float* sin) const {
  const int half = dim / 2;
  for (int r = 0; r < rows; ++r) {
    const float* c = cos + long(r) * half;
    const float* s = sin + long(r) * half;
    for (int h = 0; h < n_heads; ++h) {
      float* head = x + r * row_stride + long(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float x1 = head[i], x2 = head[i + half];
        head[i] = x1 * c[i] - x2 * s[i];
        head[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

std::vector<float> alibi_slopes(int n_heads) {
  // Every step rounded to float32 as BLOOM's torch code does: the powers 1, 2, ... of
  // 2^(-8/n) for n the largest power of two <= n_heads, then the odd powers of 2^(-8/2n).
  const int n = 1 << int(std::floor(std::log2(n_heads)));
  const float base = float(std::pow(2.0, -8.0 / n));
  const float extra_base = float(std::pow(2.0, -8.0 / (2 * n)));
  std::vector<float> slopes;
  for (int k = 1; k <= n; ++k) slopes.push_back(float(std::pow(double(base), k)));
  for (int k = 1; int(slopes.size()) < n_heads; k += 2) {
    slopes.push_back(float(std::pow(double(extra_base), k)));
  }
  return slopes;
}

std::vector<float> sinusoidal_position_table(int n_positions, int dim) {
  const int half = dim / 2;
  std::vector<float> table(std::size_t(n_positions) * dim);
  for (int p = 0; p < n_positions; ++p) {
    float* row = table.data() + std::size_t(p) * dim;
    for (int i = 0; i < half; ++i) {
      const double angle = p / std::pow(10000.0, 2.0 * i / dim);
      row[i] = float(std::sin(angle));
      row[half + i] = float(std::cos(angle));
    }
  }
  return table;
}

int RelativePositionBias::bucket(int offset) const {
  int buckets = num_buckets;
  int bucket = 0;
  int distance;
  if (bidirectional) {
    buckets /= 2;
    if (offset > 0) bucket += buckets;
    distance = std::abs(offset);
  } else {
    distance = std::max(-offset, 0);
  }
  const int max_exact = buckets / 2;
  if (distance < max_exact) return bucket + distance;
  // float32 throughout, as the torch code; truncated toward zero as .to(torch.long).
  const float scaled = std::log(float(distance) / float(max_exact)) /
                       float(std::log(double(max_distance) / max_exact)) *
                       float(buckets - max_exact);
  return bucket + std::min(max_exact + int(scaled), buckets - 1);
}

}  // namespace attn
