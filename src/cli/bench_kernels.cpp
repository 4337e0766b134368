// attn bench --kernels: what one core does with each instruction set attn has kernels for. The
// peaks, each a loop of independent multiply-adds: in f32 (GemmKernels::peak_loop), of bf16 pairs
// where the set has bf16 products (GemmKernels::bf16, vdpbf16ps) and of int8 byte pairs
// (Int8GemmKernels::peak_loop, vpdpbusd where there is VNNI). The GEMM rates are on a BERT-base
// layer's shapes, 128 rows by weights of each type stored [out, in]: gemm_columns for the
// element-wise types (f32, f16, bf16), as fractions of the f32 peak (bf16 of the bf16 peak where
// it multiplies in bf16); for q8_0 and q4_0 the integer path linear_forward takes (the rows
// quantized, then quantized_gemm_columns), as fractions of the int8 peak. The rates count a
// multiply and an add per product, floating-point or integer (GOP/s). Each figure is the best of
// -r timings of at least 0.2 s.
#include <spdlog/fmt/fmt.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "src/io/output_file.h"
#include "src/kernels/gemm.h"
#include "src/kernels/gemm_int8.h"
#include "src/kernels/weight_conversion.h"

namespace attn {
namespace {

using Json = nlohmann::ordered_json;

// Best operations per second of `run` (which returns the operations it did),
// over `repetitions` timings, each of enough calls to last at least 0.2 s.
template <class Run>
double best_rate(int repetitions, const Run& run) {
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    double operations = 0, seconds = 0;
    do {
      operations += run();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < 0.2);
    best = std::max(best, operations / seconds);
  }
  return best;
}

struct Shape {
  int rows, in, out;
};

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

void write_rows(const BenchCommand& command, const std::vector<Json>& rows) {
  if (command.format == BenchCommand::Format::kJsonLines) {
    for (const Json& row : rows) write_stdout(json_text(row) + "\n");
  } else if (command.format == BenchCommand::Format::kCsv) {
    write_stdout("isa,test,gflops,fraction_of_peak\n");
    for (const Json& row : rows) {
      write_stdout(fmt::format("{},{},{:.2f},{:.3f}\n", row["isa"].get<std::string>(),
                               row["test"].get<std::string>(), row["gflops"].get<double>(),
                               row["fraction_of_peak"].get<double>()));
    }
  } else {
    write_stdout("| isa         | test                     |    GOP/s | of peak |\n");
    write_stdout("| ----------- | ------------------------ | -------: | ------: |\n");
    for (const Json& row : rows) {
      write_stdout(fmt::format("| {:<11} | {:<24} | {:8.1f} | {:6.1f}% |\n",
                               row["isa"].get<std::string>(), row["test"].get<std::string>(),
                               row["gflops"].get<double>(),
                               100 * row["fraction_of_peak"].get<double>()));
    }
  }
  flush_stdout();
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
               .type = type} {}
  std::vector<std::byte> weights;
  Linear linear;
};

std::vector<float> random_floats(std::size_t n, std::mt19937& random) {
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> values(n);
  for (float& value : values) value = uniform(random);
  return values;
}

Json rate_row(const char* isa, const std::string& test, double rate, double peak) {
  return {{"isa", isa}, {"test", test}, {"gflops", rate / 1e9}, {"fraction_of_peak", rate / peak}};
}

std::string gemm_test_name(WeightType type, const Shape& shape) {
  return fmt::format("gemm {} {}x{}x{}", weight_type_name(type), shape.rows, shape.in, shape.out);
}

}  // namespace

int run_kernel_bench(const BenchCommand& command) {
  const Shape shapes[] = {{128, 768, 768}, {128, 768, 3072}, {128, 3072, 768}};
  const WeightType float_types[] = {WeightType::kF32, WeightType::kF16, WeightType::kBF16};
  const WeightType block_types[] = {WeightType::kQ8_0, WeightType::kQ4_0};
  std::mt19937 random(1);
  std::vector<Json> rows;
  for (const GemmKernels* kernels : runnable_gemm_kernels()) {
    const double peak = best_rate(command.repetitions, [&] { return kernels->peak_loop(1 << 20); });
    rows.push_back(rate_row(kernels->name, "multiply-add peak", peak, peak));
    double bf16_peak = peak;  // what the bf16 GEMM rows are fractions of
    if (kernels->bf16) {
      bf16_peak = best_rate(command.repetitions, [&] { return kernels->bf16->peak_loop(1 << 20); });
      rows.push_back(rate_row(kernels->name, "bf16 dot-product peak", bf16_peak, bf16_peak));
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
        rows.push_back(rate_row(kernels->name, gemm_test_name(type, shape), rate,
                                type == WeightType::kBF16 ? bf16_peak : peak));
      }
    }
  }
  for (const Int8GemmKernels* kernels : runnable_int8_gemm_kernels()) {
    const double peak = best_rate(command.repetitions, [&] { return kernels->peak_loop(1 << 20); });
    rows.push_back(rate_row(kernels->name, "int8 multiply-add peak", peak, peak));
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
        rows.push_back(rate_row(kernels->name, gemm_test_name(type, shape), rate, peak));
      }
    }
  }
  write_rows(command, rows);
  return 0;
}

}  // namespace attn
