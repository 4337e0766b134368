// attn bench --kernels: what one core does with each instruction set attn has kernels for.
// The peaks, each a loop of independent multiply-adds: in f32 (GemmKernels::peak_loop), of bf16
// pairs where the set has bf16 products (GemmKernels::bf16, vdpbf16ps) and of int8 byte pairs
// (Int8GemmKernels::peak_loop, vpdpbusd where there is VNNI). The GEMM rates are on a BERT-base
// layer's shapes, 128 rows by weights of each type stored [out, in]: gemm_columns for the
// element-wise types (f32, f16, bf16), as fractions of the f32 peak (bf16 of the bf16 peak where
// it multiplies in bf16); for q8_0 and q4_0 the integer path linear_forward takes (the rows
// quantized, then quantized_gemm_columns), as fractions of the int8 peak. They count a multiply
// and an add per product, floating-point or integer. The one-row kernels of a decode step
// (dot_rows, accumulate_rows) stream weights far larger than the caches, so their rates are in
// GB/s of weights read, as fractions of the read bandwidth of one core, measured first by a plain
// sum over a buffer as large (and by all cores, the thread pool's threads each summing a share).
// Last, the same GEMM shapes through OpenBLAS and oneDNN where they are installed
// (bench_library_gemm.h), each as a fraction of the widest instruction set's peak of its kind,
// which the row's "of" names ("avx512 int8 peak").
// Each figure is the best of -r timings of at least 0.2 s of the calling thread's CPU time (the
// all-cores read: wall time).
#include <spdlog/fmt/fmt.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "src/cli/bench.h"
#include "src/cli/bench_library_gemm.h"
#include "src/io/output_file.h"
#include "src/kernels/gemm.h"
#include "src/kernels/gemm_int8.h"
#include "src/kernels/thread_pool.h"
#include "src/kernels/weight_conversion.h"
#include "src/kernels/weight_kernels.h"

namespace attn {
namespace {

using Json = nlohmann::ordered_json;

// Seconds of the calling thread's CPU time: a one-core rate counts only the time the core ran
// it, not the time slices other processes took (on a shared machine, wall time made the same
// kernel vary by 5x).
double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best units per second of `run` (which returns the units of work it did: operations or
// bytes), over `repetitions` timings, each of enough calls to last at least 0.2 s of `clock`
// (thread_seconds, or wall_seconds where several threads run).
template <class Run>
double best_rate(int repetitions, const Run& run, double (*clock)() = thread_seconds) {
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    const double start = clock();
    double operations = 0, seconds = 0;
    do {
      operations += run();
      seconds = clock() - start;
    } while (seconds < 0.2);
    best = std::max(best, operations / seconds);
  }
  return best;
}

using Shape = LibraryGemmShape;

// A weight matrix (out, in) of `type`, random in [-1, 1), converted as attn's loader converts.
std::vector<std::byte> random_weights(WeightType type, const Shape& shape, std::mt19937& random) {
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> row(std::size_t(shape.in));
  std::vector<std::byte> weights(storage_bytes(type, long(shape.out) * shape.in));
  for (int j = 0; j < shape.out; ++j) {
    for (float& value : row) value = uniform(random);
    convert_row(type, row.data(), weights.data() + storage_bytes(type, long(j) * shape.in),
                shape.in);
  }
  return weights;
}

// A Linear of random weights of `type` with the shape's [out, in], and its storage.
struct RandomLinear {
  RandomLinear(WeightType type, const Shape& shape, std::mt19937& random)
      : weights(random_weights(type, shape, random)),
        linear{.weight = weights.data(),
               .bias = nullptr,
               .in = shape.in,
               .out = shape.out,
               .in_out_layout = false,
               .row_stride = shape.in,
               .type = type,
               .bf16_products = true} {}
  std::vector<std::byte> weights;
  Linear linear;
};

std::vector<float> random_floats(std::size_t n, std::mt19937& random) {
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> values(n);
  for (float& value : values) value = uniform(random);
  return values;
}

std::string gemm_test_name(WeightType type, const Shape& shape) {
  return fmt::format("gemm {} {}x{}x{}", weight_type_name(type), shape.rows, shape.in, shape.out);
}

// A row of the table: a rate in `unit` and its fraction of the reference named by `of` (the
// instruction set's multiply-add peak, or one core's read bandwidth).
Json row(const std::string& isa, const std::string& test, double rate, const std::string& unit,
         double fraction, const std::string& of) {
  return {{"isa", isa},   {"test", test},         {"rate", rate},
          {"unit", unit}, {"fraction", fraction}, {"of", of}};
}

void write_rows(const BenchCommand& command, const std::vector<Json>& rows) {
  if (command.format == BenchCommand::Format::kJsonLines) {
    for (const Json& row : rows) write_stdout(json_text(row) + "\n");
  } else if (command.format == BenchCommand::Format::kCsv) {
    write_stdout("isa,test,rate,unit,fraction,of\n");
    for (const Json& row : rows) {
      write_stdout(fmt::format("{},{},{:.2f},{},{:.3f},{}\n", row["isa"].get<std::string>(),
                               row["test"].get<std::string>(), row["rate"].get<double>(),
                               row["unit"].get<std::string>(), row["fraction"].get<double>(),
                               row["of"].get<std::string>()));
    }
  } else {
    write_stdout(
        "| isa         | test                             |   rate | unit    |     of | what       "
        " "
        "|\n");
    write_stdout(
        "| ----------- | -------------------------------- | -----: | ------- | -----: | "
        "----------- "
        "|\n");
    for (const Json& row : rows) {
      write_stdout(fmt::format("| {:<11} | {:<32} | {:6.1f} | {:<7} | {:5.1f}% | {:<11} |\n",
                               row["isa"].get<std::string>(), row["test"].get<std::string>(),
                               row["rate"].get<double>(), row["unit"].get<std::string>(),
                               100 * row["fraction"].get<double>(), row["of"].get<std::string>()));
    }
  }
  flush_stdout();
}

// The weights the one-row kernels stream: far beyond any last-level cache, so that every pass
// reads them from DRAM, as a decode step does.
constexpr std::size_t kStreamBytes = std::size_t(256) << 20;
// The read-bandwidth buffer, twice as large, read by one core or split among all.
constexpr std::size_t kReadBytes = std::size_t(512) << 20;

// The sum of the 64-bit integers of `bytes` bytes at `data` (a multiple of 128): a plain
// streaming read, four independent sums of four lanes (GCC's vector extension: 256-bit
// registers in attn's x86-64-v3 build). Measured on a Zen 5 core, 19-20 GB/s as an AVX-512 sum
// reads; a scalar loop the compiler vectorizes itself reads 11-14.
uint64_t stream_sum(const std::byte* data, std::size_t bytes) {
  using Lanes = uint64_t __attribute__((vector_size(32)));
  Lanes sums[4] = {};
  for (std::size_t offset = 0; offset < bytes; offset += sizeof(sums)) {
    for (int k = 0; k < 4; ++k) {
      Lanes words;
      std::memcpy(&words, data + offset + sizeof(Lanes) * std::size_t(k), sizeof(words));
      sums[k] += words;
    }
  }
  const Lanes total = sums[0] + sums[1] + sums[2] + sums[3];
  return total[0] + total[1] + total[2] + total[3];
}

// Fills `bytes` bytes at `data` with rows of `width` random elements of `type`, in [-1, 1) as
// random_weights makes them: a few distinct rows, repeated (the rates do not depend on the
// values, and converting hundreds of MiB one by one would take seconds).
void fill_with_rows(std::byte* data, std::size_t bytes, WeightType type, int width,
                    std::mt19937& random) {
  constexpr int kDistinctRows = 16;
  const std::vector<std::byte> rows = random_weights(type, {0, width, kDistinctRows}, random);
  for (std::size_t offset = 0; offset < bytes; offset += rows.size()) {
    std::memcpy(data + offset, rows.data(), std::min(rows.size(), bytes - offset));
  }
}

// The weight kernels of the instruction set that `gemm_kernels_name` names.
auto weight_kernels_named(const std::string& gemm_kernels_name) {
#if ATTN_KERNELS_X86
  if (gemm_kernels_name == "avx2") return avx2_weight_kernels;
  if (gemm_kernels_name == "avx512" || gemm_kernels_name == "avx512_bf16") {
    return avx512_weight_kernels;
  }
#endif
  return scalar_weight_kernels;
}

// Rows for the one-row kernels of `isa` over kStreamBytes of weights at `buffer`, each as a
// fraction of `bandwidth`, one core's read rate: dot_rows of every type over an [out, in] matrix
// 768 wide (GPT-2's hidden size: its tied head and every nn.Linear of that width), and
// accumulate_rows of the element types over an [in, out] matrix 3072 wide (GPT-2's c_fc). Tests
// name the matrices by their stored rows x width.
void add_one_row_rows(std::vector<Json>& rows, const std::string& isa,
                      const WeightKernels& (*kernels_of)(WeightType), std::byte* buffer,
                      double bandwidth, int repetitions, std::mt19937& random) {
  const WeightType types[] = {WeightType::kF32, WeightType::kF16, WeightType::kBF16,
                              WeightType::kQ8_0, WeightType::kQ4_0};
  constexpr int kDotWidth = 768, kAccumulateWidth = 3072;
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (WeightType type : types) {
    const WeightKernels& kernels = kernels_of(type);
    for (const bool accumulate : {false, true}) {
      if (accumulate && !kernels.accumulate_rows) continue;
      const int width = accumulate ? kAccumulateWidth : kDotWidth;
      const int n_rows = int(kStreamBytes / std::size_t(storage_bytes(type, width)));
      const double bytes = double(storage_bytes(type, long(n_rows) * width));
      fill_with_rows(buffer, kStreamBytes, type, width, random);
      // x (n_rows for accumulate_rows, width for dot_rows), y (width or n_rows)
      std::vector<float> x(std::size_t(accumulate ? n_rows : width)),
          y(std::size_t(accumulate ? width : n_rows));
      for (float& value : x) value = uniform(random);
      const double rate = best_rate(repetitions, [&] {
        if (accumulate) {
          kernels.accumulate_rows(y.data(), buffer, width, x.data(), n_rows, width);
        } else {
          kernels.dot_rows(y.data(), buffer, width, x.data(), width, n_rows);
        }
        return bytes;
      });
      rows.push_back(row(isa,
                         fmt::format("{} {} {}x{}", accumulate ? "accumulate_rows" : "dot_rows",
                                     weight_type_name(type), n_rows, width),
                         rate / 1e9, "GB/s", rate / bandwidth, "1-core read"));
    }
  }
}

}  // namespace

int run_kernel_bench(const BenchCommand& command) {
  const Shape shapes[] = {{128, 768, 768}, {128, 768, 3072}, {128, 3072, 768}};
  const WeightType float_types[] = {WeightType::kF32, WeightType::kF16, WeightType::kBF16};
  const WeightType block_types[] = {WeightType::kQ8_0, WeightType::kQ4_0};
  std::mt19937 random(1);
  std::vector<Json> rows;

  // One core's read bandwidth, then all cores' (the pool's threads, each summing its share).
  std::vector<std::byte> buffer(kReadBytes, std::byte{1});
  volatile uint64_t sink = 0;  // keeps the sums from being optimized away
  const double bandwidth = best_rate(command.repetitions, [&] {
    sink = sink + stream_sum(buffer.data(), kReadBytes);
    return double(kReadBytes);
  });
  rows.push_back(row("-", "read 512 MiB, 1 core", bandwidth / 1e9, "GB/s", 1.0, "1-core read"));
  const int cores = thread_pool().size();
  const double all_cores_bandwidth = best_rate(
      command.repetitions,
      [&] {
        thread_pool().run(cores, [&](int core) {
          const std::size_t share = kReadBytes / std::size_t(cores) / 128 * 128;
          sink = sink + stream_sum(buffer.data() + share * std::size_t(core), share);
        });
        return double(kReadBytes / std::size_t(cores) / 128 * 128 * std::size_t(cores));
      },
      wall_seconds);
  rows.push_back(row("-", fmt::format("read 512 MiB, {} cores", cores), all_cores_bandwidth / 1e9,
                     "GB/s", all_cores_bandwidth / bandwidth, "1-core read"));

  // The widest instruction set's peaks (the last measured) and names, by kind ("f32", "bf16",
  // "int8"), for the libraries' rows.
  std::map<std::string, double> widest_peak;
  std::map<std::string, std::string> widest_name;
  for (const GemmKernels* kernels : runnable_gemm_kernels()) {
    const double peak = best_rate(command.repetitions, [&] { return kernels->peak_loop(1 << 20); });
    widest_peak["f32"] = widest_peak["bf16"] = peak;
    widest_name["f32"] = widest_name["bf16"] = kernels->name;
    rows.push_back(row(kernels->name, "multiply-add peak", peak / 1e9, "GFLOP/s", 1.0, "peak"));
    double bf16_peak = peak;  // what the bf16 GEMM rows are fractions of
    if (kernels->bf16) {
      bf16_peak = best_rate(command.repetitions, [&] { return kernels->bf16->peak_loop(1 << 20); });
      rows.push_back(row(kernels->name, "bf16 dot-product peak", bf16_peak / 1e9, "GFLOP/s", 1.0,
                         "bf16 peak"));
      widest_peak["bf16"] = bf16_peak;
      widest_name["bf16"] = kernels->name;
    }
    for (WeightType type : float_types) {
      for (const Shape& shape : shapes) {
        const RandomLinear b(type, shape, random);
        const std::vector<float> a = random_floats(std::size_t(shape.rows) * shape.in, random);
        std::vector<float> c(std::size_t(shape.rows) * shape.out);
        const double rate = best_rate(command.repetitions, [&] {
          gemm_columns(*kernels, c.data(), shape.out, a.data(), shape.in, shape.rows, b.linear, 0,
                       shape.out);
          return 2.0 * shape.rows * shape.in * shape.out;
        });
        const bool in_bf16 = type == WeightType::kBF16 && kernels->bf16;
        rows.push_back(row(kernels->name, gemm_test_name(type, shape), rate / 1e9, "GFLOP/s",
                           rate / (in_bf16 ? bf16_peak : peak), in_bf16 ? "bf16 peak" : "peak"));
      }
    }
    add_one_row_rows(rows, kernels->name, weight_kernels_named(kernels->name), buffer.data(),
                     bandwidth, command.repetitions, random);
  }
  for (const Int8GemmKernels* kernels : runnable_int8_gemm_kernels()) {
    const double peak = best_rate(command.repetitions, [&] { return kernels->peak_loop(1 << 20); });
    rows.push_back(
        row(kernels->name, "int8 multiply-add peak", peak / 1e9, "GOP/s", 1.0, "int8 peak"));
    widest_peak["int8"] = peak;
    widest_name["int8"] = kernels->name;
    for (WeightType type : block_types) {
      for (const Shape& shape : shapes) {
        const RandomLinear b(type, shape, random);
        const std::vector<float> a = random_floats(std::size_t(shape.rows) * shape.in, random);
        // A quantized, on this thread: (rows, in) values and (rows, in / 32) scales.
        std::vector<int8_t> values(a.size());
        std::vector<float> scales(a.size() / kQuantBlockSize);
        std::vector<float> c(std::size_t(shape.rows) * shape.out);
        const double rate = best_rate(command.repetitions, [&] {
          kernels->quantize_rows(values.data(), scales.data(), a.data(), shape.in, shape.rows,
                                 shape.in);
          quantized_gemm_columns(*kernels, c.data(), shape.out,
                                 {.values = values.data(),
                                  .scales = scales.data(),
                                  .rows = shape.rows,
                                  .in = shape.in},
                                 b.linear, 0, shape.out);
          return 2.0 * shape.rows * shape.in * shape.out;
        });
        rows.push_back(row(kernels->name, gemm_test_name(type, shape), rate / 1e9, "GOP/s",
                           rate / peak, "int8 peak"));
      }
    }
  }
  const RateOf rate_of = [&](const std::function<double()>& run) {
    return best_rate(command.repetitions, run);
  };
  for (const LibraryGemmRate& library : library_gemm_rates(shapes, rate_of)) {
    // "avx512 int8 peak": the peak of the kind (f32's is "peak" in attn's own rows) of the set.
    const std::string& kind = library.kind;
    rows.push_back(row(library.library, library.test, library.rate / 1e9,
                       kind == "int8" ? "GOP/s" : "GFLOP/s", library.rate / widest_peak[kind],
                       widest_name[kind] + (kind == "f32" ? " peak" : " " + kind + " peak")));
  }
  write_rows(command, rows);
  return 0;
}

}  // namespace attn
