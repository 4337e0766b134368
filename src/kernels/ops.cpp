#include "src/kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "src/kernels/gemm.h"
#include "src/kernels/thread_pool.h"
#include "src/kernels/weight_kernels.h"

namespace attn {

namespace {

// Splits [0, n) into the pool's threads' shares, in multiples of `multiple` (a power of two:
// 16 floats are a cache line, and a GEMM's panels are 16 or 32 columns wide).
struct ColumnBlocks {
  ColumnBlocks(int n, int multiple)
      : n(n),
        multiple(multiple),
        count(std::min(thread_pool().size(), (n + multiple - 1) / multiple)) {}
  int begin(int block) const { return int(long(n) * block / count) & ~(multiple - 1); }
  int end(int block) const { return block + 1 == count ? n : begin(block + 1); }
  int n;
  int multiple;
  int count;
};

// partial (out) = sum_i x[i] W[i, :] over rows i in [begin, end) of W stored [in, out], of any
// type: one share of a one-row product.
void partial_sum_over_rows(float* partial, const float* x, const Linear& linear, int begin,
                           int end) {
  std::fill(partial, partial + linear.out, 0.0f);
  weight_kernels(linear.type)
      .accumulate_rows(partial, linear.element(long(begin) * linear.row_stride), linear.row_stride,
                       x + begin, end - begin, linear.out);
}

// y[j] = bias[j] + dot(W[j, :], x) for j in [begin, end), W stored [out, in], of any type.
void dot_rows_with_bias(float* y, const float* x, const Linear& linear, int begin, int end) {
  weight_kernels(linear.type)
      .dot_rows(y + begin, linear.element(long(begin) * linear.row_stride), linear.row_stride, x,
                linear.in, end - begin);
  if (linear.bias) {
    for (int j = begin; j < end; ++j) y[j] += linear.bias[j];
  }
}

// Maps whose weights lie side by side in one [in, out] matrix (GPT-2's c_attn: Q, K and V are
// column slices of one fused weight) as one map over all their columns, so that each stored
// row is read once, in one pass, rather than once per slice.
// Returns a buffer of the calling thread, reused: a decode step allocates nothing.
const std::vector<Linear>& merge_adjacent_slices(std::span<const LinearOutput> outputs) {
  static thread_local std::vector<Linear> merged;
  merged.clear();
  for (const LinearOutput& output : outputs) {
    const Linear& next = *output.linear;
    if (!merged.empty()) {
      Linear& last = merged.back();
      if (last.in_out_layout && next.in_out_layout && last.type == next.type &&
          last.in == next.in && last.row_stride == next.row_stride &&
          last.element(last.out) == next.weight &&
          (last.bias == nullptr) == (next.bias == nullptr) &&
          (!last.bias || last.bias + last.out == next.bias)) {
        last.out += next.out;
        continue;
      }
    }
    merged.push_back(next);
  }
  return merged;
}

// One row through maps stored [in, out]: each thread streams its own block of whole stored
// rows (contiguous memory reads fastest) for every map, giving partial sums over its share of
// the inputs; the partial sums are added at the end.
void one_row_in_out(std::span<const LinearOutput> outputs, const float* x) {
  const int in = outputs[0].linear->in;
  const std::vector<Linear>& maps = merge_adjacent_slices(outputs);
  int total_out = 0;
  for (const Linear& map : maps) total_out += map.out;
  const int n_parts = std::min(thread_pool().size(), std::max(1, in / 64));
  // (n_parts, total_out), kept between calls: a decode step makes dozens of these calls.
  static thread_local std::vector<float> partials;
  partials.resize(std::size_t(n_parts) * total_out);
  // The workers must see this thread's buffer, not their own thread_local copy.
  float* partial_sums = partials.data();
  thread_pool().run(n_parts, [&](int part) {
    const int begin = int(long(in) * part / n_parts), end = int(long(in) * (part + 1) / n_parts);
    float* partial = partial_sums + long(part) * total_out;
    for (const Linear& map : maps) {
      partial_sum_over_rows(partial, x, map, begin, end);
      partial += map.out;
    }
  });
  int column = 0;  // of the first output of each map in a row of partials
  for (const LinearOutput& output : outputs) {
    const Linear& linear = *output.linear;
    for (int j = 0; j < linear.out; ++j) output.y[j] = linear.bias ? linear.bias[j] : 0.0f;
    for (int part = 0; part < n_parts; ++part) {
      add_in_place(output.y, partial_sums + long(part) * total_out + column, linear.out);
    }
    column += linear.out;
  }
}

// One row through maps stored [out, in]: the outputs of all maps, one after another, are split
// into equal blocks, each thread taking whole rows of W (contiguous again).
void one_row_out_in(std::span<const LinearOutput> outputs, const float* x) {
  int total_out = 0;
  for (const LinearOutput& output : outputs) total_out += output.linear->out;
  const ColumnBlocks blocks(total_out, 16);
  thread_pool().run(blocks.count, [&](int block) {
    // This block's share [begin, end) of the outputs, map by map.
    const int begin = blocks.begin(block), end = blocks.end(block);
    int first = 0;  // of the current map among all outputs
    for (const LinearOutput& output : outputs) {
      const int out = output.linear->out;
      const int from = std::max(begin, first), to = std::min(end, first + out);
      if (from < to) dot_rows_with_bias(output.y, x, *output.linear, from - first, to - first);
      first += out;
    }
  });
}

}  // namespace

void linear_forward_shared_input(std::span<const LinearOutput> outputs, const float* x, int rows) {
  const bool all_in_out = std::all_of(outputs.begin(), outputs.end(), [](const LinearOutput& o) {
    return o.linear->in_out_layout;
  });
  const bool all_out_in = std::none_of(outputs.begin(), outputs.end(), [](const LinearOutput& o) {
    return o.linear->in_out_layout;
  });
  if (rows == 1 && all_in_out) {
    one_row_in_out(outputs, x);
  } else if (rows == 1 && all_out_in) {
    one_row_out_in(outputs, x);
  } else {
    for (const LinearOutput& output : outputs) linear_forward(output.y, x, rows, *output.linear);
  }
}

void linear_forward(float* y, const float* x, int rows, const Linear& linear) {
  const int in = linear.in;
  const int out = linear.out;
  if (rows == 1) {
    const LinearOutput output{.linear = &linear, .y = y};
    linear_forward_shared_input(std::span(&output, 1), x, rows);
    return;
  }
  // Each thread multiplies all rows by its own block of output columns.
  const GemmKernels& kernels = gemm_kernels();
  const ColumnBlocks blocks(out, kernels.tile_columns);
  thread_pool().run(blocks.count, [&](int block) {
    const int begin = blocks.begin(block), end = blocks.end(block);
    for (int r = 0; r < rows; ++r) {
      float* y_row = y + long(r) * out;
      if (linear.bias) {
        std::copy(linear.bias + begin, linear.bias + end, y_row + begin);
      } else {
        std::fill(y_row + begin, y_row + end, 0.0f);
      }
    }
    gemm_columns(kernels, y, out, x, in, rows, linear, begin, end);
  });
}

void norm_forward(float* y, const float* x, int rows, int d, const Norm& norm) {
  if (norm.kind == NormKind::kIdentity) {
    if (y != x) std::copy_n(x, long(rows) * d, y);
    return;
  }
  for (int r = 0; r < rows; ++r) {
    const float* row = x + long(r) * d;
    float* out = y + long(r) * d;
    // Accumulate in double: d can be thousands, and HF's float32 norms are the reference.
    double mean = 0;
    if (norm.kind == NormKind::kLayerNorm) {
      for (int i = 0; i < d; ++i) mean += row[i];
      mean /= d;
    }
    double squares = 0;
    for (int i = 0; i < d; ++i) squares += (row[i] - mean) * (row[i] - mean);
    const float inv_std = float(1.0 / std::sqrt(squares / d + norm.eps));
    const float mean_f = float(mean);
    if (norm.bias) {
      for (int i = 0; i < d; ++i)
        out[i] = (row[i] - mean_f) * inv_std * norm.weight[i] + norm.bias[i];
    } else {
      for (int i = 0; i < d; ++i) out[i] = (row[i] - mean_f) * inv_std * norm.weight[i];
    }
  }
}

void activation_forward(float* x, long n, Activation activation) {
  constexpr long kChunk = 16384;  // below this, threads cost more than they save
  const int chunks = int(std::min<long>(thread_pool().size(), (n + kChunk - 1) / kChunk));
  thread_pool().run(chunks, [&](int chunk) {
    const long begin = n * chunk / chunks, end = n * (chunk + 1) / chunks;
    activation_range(x + begin, end - begin, activation);
  });
}

void softmax_row(float* x, int n) {
  const float max = *std::max_element(x, x + n);
  float sum = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv_sum = 1.0f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv_sum;
}

void soft_cap(float* x, long n, float cap) {
  for (long i = 0; i < n; ++i) x[i] = std::tanh(x[i] / cap) * cap;
}

void add_in_place(float* y, const float* x, long n) {
  for (long i = 0; i < n; ++i) y[i] += x[i];
}

void multiply_in_place(float* y, const float* x, long n) {
  for (long i = 0; i < n; ++i) y[i] *= x[i];
}

}  // namespace attn
