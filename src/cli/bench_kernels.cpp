// attn bench --kernels: what one core does with each instruction set attn has kernels for. The
// peak is a loop of independent multiply-adds (GemmKernels::peak_loop); the GEMM rates are
// gemm_columns on a BERT-base layer's shapes, 128 rows by weights of each type stored [out, in],
// as fractions of that peak. A set with bf16 products (GemmKernels::bf16) also gives its bf16
// peak, a loop of independent vdpbf16ps, and its bf16 GEMM rates are fractions of that one.
// Each figure is the best of -r timings of at least 0.2 s.
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
#include "src/kernels/weight_conversion.h"

namespace attn {
namespace {

using Json = nlohmann::ordered_json;

// Best floating-point operations per second of `run` (which returns the operations it did),
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
    write_stdout("| isa         | test                     |  GFLOP/s | of peak |\n");
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

}  // namespace

int run_kernel_bench(const BenchCommand& command) {
  const Shape shapes[] = {{128, 768, 768}, {128, 768, 3072}, {128, 3072, 768}};
  const WeightType types[] = {WeightType::kF32, WeightType::kF16, WeightType::kBF16,
                              WeightType::kQ8_0, WeightType::kQ4_0};
  std::mt19937 random(1);
  std::vector<Json> rows;
  for (const GemmKernels* kernels : runnable_gemm_kernels()) {
    const double peak = best_rate(command.repetitions, [&] { return kernels->peak_loop(1 << 20); });
    rows.push_back({{"isa", kernels->name},
                    {"test", "multiply-add peak"},
                    {"gflops", peak / 1e9},
                    {"fraction_of_peak", 1.0}});
    double bf16_peak = peak;  // what the bf16 GEMM rows are fractions of
    if (kernels->bf16) {
      bf16_peak = best_rate(command.repetitions, [&] { return kernels->bf16->peak_loop(1 << 20); });
      rows.push_back({{"isa", kernels->name},
                      {"test", "bf16 dot-product peak"},
                      {"gflops", bf16_peak / 1e9},
                      {"fraction_of_peak", 1.0}});
    }
    for (WeightType type : types) {
      for (const Shape& shape : shapes) {
        const std::vector<std::byte> weights = random_weights(type, shape, random);
        const Linear linear{.weight = weights.data(),
                            .bias = nullptr,
                            .in = shape.in,
                            .out = shape.out,
                            .in_out_layout = false,
                            .row_stride = shape.in,
                            .type = type};
        std::vector<float> a(std::size_t(shape.rows) * shape.in),
            c(std::size_t(shape.rows) * shape.out);
        std::uniform_real_distribution<float> uniform(-1, 1);
        for (float& value : a) value = uniform(random);
        const double rate = best_rate(command.repetitions, [&] {
          gemm_columns(*kernels, c.data(), shape.out, a.data(), shape.in, shape.rows, linear, 0,
                       shape.out);
          return 2.0 * shape.rows * shape.in * shape.out;
        });
        rows.push_back(
            {{"isa", kernels->name},
             {"test", fmt::format("gemm {} {}x{}x{}", weight_type_name(type), shape.rows, shape.in,
                                  shape.out)},
             {"gflops", rate / 1e9},
             {"fraction_of_peak", rate / (type == WeightType::kBF16 ? bf16_peak : peak)}});
      }
    }
  }
  write_rows(command, rows);
  return 0;
}

}  // namespace attn
