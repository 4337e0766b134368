#include "src/kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "src/kernels/gemm.h"
#include "src/kernels/gemm_int8.h"
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

// y[j] = bias[j] + dot(W[j, :], x) for j in [begin, end), W stored [out, in], of any type.
void add_bias(float* y, const Linear& linear, int begin, int end) {
  if (linear.bias) {
    for (int j = begin; j < end; ++j) y[j] += linear.bias[j];
  }
}

void dot_rows_with_bias(float* y, const float* x, const Linear& linear, int begin, int end) {
  weight_kernels(linear.type)
      .dot_rows(y + begin, linear.element(long(begin) * linear.row_stride), linear.row_stride, x,
                linear.in, end - begin);
  add_bias(y, linear, begin, end);
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

// Elements of an element-wise pass (an activation, a norm) per thread: below this, handing work
// to another thread costs more than it saves.
constexpr long kElementwiseChunk = 16384;

// Bytes of weights in a chunk that separate rows pass over one after another: they stay in L2
// (512 KiB and up) between the rows, so that each weight comes from memory once for all rows.
constexpr long kChunkBytes = 128 * 1024;

// Stored rows of `width` elements of `type` in a chunk: a multiple of 8 (dot_rows takes 8 rows
// at a time, accumulate_rows 4), at least 8.
int rows_per_chunk(WeightType type, int width) {
  return std::max(8, int(kChunkBytes / std::max(1L, storage_bytes(type, width))) & ~7);
}

// Separate rows (RowKind) through maps stored [in, out]: each thread streams its own block of
// whole stored rows (contiguous memory reads fastest) for every map, giving partial sums over
// its share of the inputs; the partial sums are added at the end. Each row's sums are those of a
// lone row: the same shares, accumulated in the same order. Several rows go over a chunk at once
// where the kernels can (accumulate_rows_of_seqs), each vector of W loaded once for all rows.
void separate_rows_in_out(std::span<const LinearOutput> outputs, const float* x, int rows) {
  const int in = outputs[0].linear->in;
  const std::vector<Linear>& maps = merge_adjacent_slices(outputs);
  int total_out = 0;
  for (const Linear& map : maps) total_out += map.out;
  const int n_parts = std::min(thread_pool().size(), std::max(1, in / 64));
  // (n_parts, rows, total_out), kept between calls: a decode step makes dozens of these calls.
  static thread_local std::vector<float> partials;
  partials.resize(std::size_t(n_parts) * rows * total_out);
  // The workers must see this thread's buffer, not their own thread_local copy.
  float* partial_sums = partials.data();
  thread_pool().run(n_parts, [&](int part) {
    const int begin = int(long(in) * part / n_parts), end = int(long(in) * (part + 1) / n_parts);
    float* part_sums = partial_sums + long(part) * rows * total_out;  // (rows, total_out)
    std::fill(part_sums, part_sums + long(rows) * total_out, 0.0f);
    int column = 0;  // of the map's first output in a row of part_sums
    for (const Linear& map : maps) {
      const WeightKernels& kernels = weight_kernels(map.type);
      // With accumulate_rows_of_seqs, which reads each chunk once for all rows, chunks of twice
      // the rows: 768 x 3072 f32 with 8 rows on Zen 5, 0.51-0.52 ms against 0.55-0.61 for 1x and
      // 0.63 for 4x (what stays in L2 while the columns are swept).
      const int chunk =
          rows == 1 ? end - begin
                    : (kernels.accumulate_rows_of_seqs ? 2 : 1) * rows_per_chunk(map.type, map.out);
      for (int first = begin; first < end; first += chunk) {
        const int n = std::min(chunk, end - first);
        const void* weights = map.element(long(first) * map.row_stride);
        if (rows > 1 && kernels.accumulate_rows_of_seqs) {
          kernels.accumulate_rows_of_seqs(part_sums + column, total_out, weights, map.row_stride,
                                          x + first, in, n, map.out, rows);
          continue;
        }
        for (int r = 0; r < rows; ++r) {
          kernels.accumulate_rows(part_sums + long(r) * total_out + column, weights, map.row_stride,
                                  x + long(r) * in + first, n, map.out);
        }
      }
      column += map.out;
    }
  });
  int column = 0;  // of the first output of each map in a row of partials
  for (const LinearOutput& output : outputs) {
    const Linear& linear = *output.linear;
    for (int r = 0; r < rows; ++r) {
      float* y = output.y + long(r) * linear.out;
      for (int j = 0; j < linear.out; ++j) y[j] = linear.bias ? linear.bias[j] : 0.0f;
      for (int part = 0; part < n_parts; ++part) {
        add_in_place(y, partial_sums + (long(part) * rows + r) * total_out + column, linear.out);
      }
    }
    column += linear.out;
  }
}

// Separate rows through maps stored [out, in]: the outputs of all maps, one after another, are
// split into equal blocks, each thread taking whole rows of W (contiguous again). With several
// rows, a thread takes its block in chunks, every row passing over a chunk before the next: at
// once where the kernels can (dot_rows_of_seqs), each vector of W loaded once for all rows.
void separate_rows_out_in(std::span<const LinearOutput> outputs, const float* x, int rows) {
  int total_out = 0;
  for (const LinearOutput& output : outputs) total_out += output.linear->out;
  const ColumnBlocks blocks(total_out, 16);
  thread_pool().run(blocks.count, [&](int block) {
    // This block's share [begin, end) of the outputs, map by map.
    const int begin = blocks.begin(block), end = blocks.end(block);
    int first = 0;  // of the current map among all outputs
    for (const LinearOutput& output : outputs) {
      const Linear& linear = *output.linear;
      const int from = std::max(begin, first) - first,
                to = std::min(end, first + linear.out) - first;
      const int chunk = rows == 1 ? to - from : rows_per_chunk(linear.type, linear.in);
      for (int chunk_begin = from; chunk_begin < to; chunk_begin += chunk) {
        const int chunk_end = std::min(chunk_begin + chunk, to);
        const WeightKernels& kernels = weight_kernels(linear.type);
        if (rows > 1 && kernels.dot_rows_of_seqs) {
          kernels.dot_rows_of_seqs(output.y + chunk_begin, linear.out,
                                   linear.element(long(chunk_begin) * linear.row_stride),
                                   linear.row_stride, x, linear.in, linear.in,
                                   chunk_end - chunk_begin, rows);
          for (int r = 0; r < rows; ++r) {
            add_bias(output.y + long(r) * linear.out, linear, chunk_begin, chunk_end);
          }
          continue;
        }
        for (int r = 0; r < rows; ++r) {
          dot_rows_with_bias(output.y + long(r) * linear.out, x + long(r) * linear.in, linear,
                             chunk_begin, chunk_end);
        }
      }
      first += linear.out;
    }
  });
}

}  // namespace

void linear_forward_shared_input(std::span<const LinearOutput> outputs, const float* x, int rows,
                                 RowKind kind) {
  const bool separate = rows == 1 || kind == RowKind::kSeparate;
  const bool all_in_out = std::all_of(outputs.begin(), outputs.end(), [](const LinearOutput& o) {
    return o.linear->in_out_layout;
  });
  const bool all_out_in = std::none_of(outputs.begin(), outputs.end(), [](const LinearOutput& o) {
    return o.linear->in_out_layout;
  });
  const bool any_packed = std::any_of(outputs.begin(), outputs.end(),
                                      [](const LinearOutput& o) { return o.linear->panels; });
  if (separate && (all_in_out || all_out_in) && !any_packed) {
    if (all_in_out) {
      separate_rows_in_out(outputs, x, rows);
    } else {
      separate_rows_out_in(outputs, x, rows);
    }
    for (const LinearOutput& output : outputs) {
      if (output.activation) {
        activation_forward(output.y, long(rows) * output.linear->out, *output.activation);
      }
    }
  } else {
    for (const LinearOutput& output : outputs) {
      linear_forward(output.y, x, rows, *output.linear, kind, output.activation);
    }
  }
}

void linear_forward(float* y, const float* x, int rows, const Linear& linear, RowKind kind,
                    std::optional<Activation> activation) {
  const int in = linear.in;
  const int out = linear.out;
  // Packed weights (Linear::panels) go through the GEMM whatever the rows: their stored copy
  // has been let go. Each row's sums are the same there whatever rows share the product.
  if ((rows == 1 || kind == RowKind::kSeparate) && !linear.panels) {
    const LinearOutput output{.linear = &linear, .y = y, .activation = activation};
    linear_forward_shared_input(std::span(&output, 1), x, rows, RowKind::kSeparate);
    return;
  }
  // Each thread multiplies all rows by its own block of output columns, in integers for the
  // block types (gemm_int8.h), once x is quantized.
  const bool in_integers = is_block_type(linear.type);
  const GemmKernels& kernels = gemm_kernels();
  const Int8GemmKernels& int8_kernels = int8_gemm_kernels();
  const QuantizedRows quantized =
      in_integers ? quantize_rows(int8_kernels, x, rows, in) : QuantizedRows{};
  const ColumnBlocks blocks(out, in_integers ? int8_kernels.tile_columns : kernels.tile_columns);
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
    if (in_integers) {
      quantized_gemm_columns(int8_kernels, y, out, quantized, linear, begin, end, activation);
    } else {
      gemm_columns(kernels, y, out, x, in, rows, linear, begin, end, activation);
    }
  });
}

void norm_forward(float* y, const float* x, int rows, int d, const Norm& norm) {
  if (norm.kind == NormKind::kIdentity) {
    if (y != x) std::copy_n(x, long(rows) * d, y);
    return;
  }
  // Rows in chunks across the pool: alone, the norms of a pass over many rows were the serial
  // part of it. A decode step's norms stay on the calling thread.
  const long elements = long(rows) * d;
  const int chunks = int(
      std::min<long>(thread_pool().size(), (elements + kElementwiseChunk - 1) / kElementwiseChunk));
  thread_pool().run(chunks, [&](int chunk) {
    for (int r = rows * chunk / chunks; r < rows * (chunk + 1) / chunks; ++r) {
      const float* row = x + long(r) * d;
      float* out = y + long(r) * d;
      // Accumulate in double: d can be thousands, and HF's float32 norms are the reference. In
      // vector lanes: the order of a double sum of d floats changes a float result it gives
      // only where that result lies within a hair of a rounding boundary, and then by its last
      // bit.
      double mean = 0;
      if (norm.kind == NormKind::kLayerNorm) {
#pragma omp simd reduction(+ : mean)
        for (int i = 0; i < d; ++i) mean += row[i];
        mean /= d;
      }
      double squares = 0;
#pragma omp simd reduction(+ : squares)
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
  });
}

void activation_forward(float* x, long n, Activation activation) {
  const int chunks =
      int(std::min<long>(thread_pool().size(), (n + kElementwiseChunk - 1) / kElementwiseChunk));
  thread_pool().run(chunks, [&](int chunk) {
    const long begin = n * chunk / chunks, end = n * (chunk + 1) / chunks;
    activation_range(x + begin, end - begin, activation);
  });
}

void softmax_row(float* x, int n) {
  float max = x[0];
#pragma omp simd reduction(max : max)
  for (int i = 1; i < n; ++i) max = std::max(max, x[i]);
  exp_of_differences(x, n, max);
  // In vector lanes: a sum in order waits on each add.
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) sum += x[i];
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
