// attn bench --kernels: the libraries attn could use instead of its own GEMM, on the same shapes,
// so that the choice is a measurement (issue 43). OpenBLAS (cblas_sgemm; cblas_sbgemm where the
// build has bf16) and oneDNN's BLAS-like functions (dnnl_sgemm in f32; dnnl_gemm_u8s8s32, the
// integer product VNNI runs, for int8) are opened at run time with dlopen, so attn neither links
// nor needs them: a library that is not installed is left out with a line on stderr. Each runs on
// one thread, as attn's rows do (openblas_set_num_threads, omp_set_num_threads for oneDNN's
// OpenMP runtime), with B stored [out, in] as nn.Linear stores it, and packs B at every call, as
// attn's gemm_columns does for weights not packed at load.
#include "src/cli/bench_library_gemm.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace attn {
namespace {

// The C interfaces, as their headers declare them (cblas.h, dnnl.h), so that neither header is
// needed to build attn.
enum CblasOrder { kCblasRowMajor = 101 };
enum CblasTranspose { kCblasNoTrans = 111, kCblasTrans = 112 };
using CblasSgemm = void (*)(int order, int transa, int transb, int m, int n, int k, float alpha,
                            const float* a, int lda, const float* b, int ldb, float beta, float* c,
                            int ldc);
using CblasSbgemm = void (*)(int order, int transa, int transb, int m, int n, int k, float alpha,
                             const uint16_t* a, int lda, const uint16_t* b, int ldb, float beta,
                             float* c, int ldc);
using SetThreads = void (*)(int threads);
using DnnlSgemm = int (*)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                          float* c, int64_t ldc);
using DnnlGemmU8S8S32 = int (*)(char transa, char transb, char offsetc, int64_t m, int64_t n,
                                int64_t k, float alpha, const uint8_t* a, int64_t lda, uint8_t ao,
                                const int8_t* b, int64_t ldb, int8_t bo, float beta, int32_t* c,
                                int64_t ldc, const int32_t* co);

// The first of `names` that dlopen finds, or nullptr. Never closed: a library's threads may
// outlive the rows.
void* open_library(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  return nullptr;
}

template <class Function>
Function symbol(void* library, const char* name) {
  return reinterpret_cast<Function>(dlsym(library, name));
}

std::string shape_text(const char* type, const LibraryGemmShape& shape) {
  return std::string("gemm ") + type + " " + std::to_string(shape.rows) + "x" +
         std::to_string(shape.in) + "x" + std::to_string(shape.out);
}

}  // namespace

std::vector<LibraryGemmRate> library_gemm_rates(std::span<const LibraryGemmShape> shapes,
                                                const RateOf& rate_of) {
  std::vector<LibraryGemmRate> rates;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::uniform_int_distribution<int> byte(-127, 127);
  // Each shape's A (rows, in) and B (out, in) in f32, random in [-1, 1), for both libraries.
  struct Floats {
    std::vector<float> a, b;
  };
  std::vector<Floats> inputs;
  for (const LibraryGemmShape& shape : shapes) {
    Floats& floats =
        inputs.emplace_back(Floats{std::vector<float>(std::size_t(shape.rows) * shape.in),
                                   std::vector<float>(std::size_t(shape.out) * shape.in)});
    for (float& value : floats.a) value = uniform(random);
    for (float& value : floats.b) value = uniform(random);
  }

  if (void* openblas = open_library({"libopenblas.so.0", "libopenblas.so"})) {
    const auto set_threads = symbol<SetThreads>(openblas, "openblas_set_num_threads");
    const auto sgemm = symbol<CblasSgemm>(openblas, "cblas_sgemm");
    const auto sbgemm = symbol<CblasSbgemm>(openblas, "cblas_sbgemm");
    if (set_threads) set_threads(1);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const LibraryGemmShape& shape = shapes[i];
      const std::vector<float>&a = inputs[i].a, &b = inputs[i].b;
      std::vector<float> c(std::size_t(shape.rows) * shape.out);
      const double operations = 2.0 * shape.rows * shape.in * shape.out;
      if (sgemm) {
        rates.push_back({"openblas", shape_text("f32", shape), "f32", rate_of([&] {
                           sgemm(kCblasRowMajor, kCblasNoTrans, kCblasTrans, shape.rows, shape.out,
                                 shape.in, 1, a.data(), shape.in, b.data(), shape.in, 0, c.data(),
                                 shape.out);
                           return operations;
                         })});
      }
      if (sbgemm) {
        // bf16 as the upper halves of the floats (truncated: the rate does not depend on it).
        std::vector<uint16_t> a16(a.size()), b16(b.size());
        for (std::size_t i = 0; i < a.size(); ++i)
          a16[i] = uint16_t(std::bit_cast<uint32_t>(a[i]) >> 16);
        for (std::size_t i = 0; i < b.size(); ++i)
          b16[i] = uint16_t(std::bit_cast<uint32_t>(b[i]) >> 16);
        rates.push_back({"openblas", shape_text("bf16", shape), "bf16", rate_of([&] {
                           sbgemm(kCblasRowMajor, kCblasNoTrans, kCblasTrans, shape.rows, shape.out,
                                  shape.in, 1, a16.data(), shape.in, b16.data(), shape.in, 0,
                                  c.data(), shape.out);
                           return operations;
                         })});
      }
    }
  } else {
    spdlog::warn(
        "bench --kernels: no OpenBLAS rows: libopenblas.so.0 not found "
        "(apt install libopenblas0)");
  }

  if (void* onednn = open_library({"libdnnl.so.3", "libdnnl.so.2", "libdnnl.so"})) {
    // oneDNN's OpenMP runtime is loaded with it: its thread count is set through it.
    const auto set_threads = symbol<SetThreads>(onednn, "omp_set_num_threads");
    const auto sgemm = symbol<DnnlSgemm>(onednn, "dnnl_sgemm");
    const auto gemm_u8s8s32 = symbol<DnnlGemmU8S8S32>(onednn, "dnnl_gemm_u8s8s32");
    if (set_threads) set_threads(1);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const LibraryGemmShape& shape = shapes[i];
      const double operations = 2.0 * shape.rows * shape.in * shape.out;
      if (sgemm) {
        const std::vector<float>&a = inputs[i].a, &b = inputs[i].b;
        std::vector<float> c(std::size_t(shape.rows) * shape.out);
        rates.push_back({"onednn", shape_text("f32", shape), "f32", rate_of([&] {
                           sgemm('N', 'T', shape.rows, shape.out, shape.in, 1, a.data(), shape.in,
                                 b.data(), shape.in, 0, c.data(), shape.out);
                           return operations;
                         })});
      }
      if (gemm_u8s8s32) {
        std::vector<uint8_t> a(std::size_t(shape.rows) * shape.in);
        std::vector<int8_t> b(std::size_t(shape.out) * shape.in);
        std::vector<int32_t> c(std::size_t(shape.rows) * shape.out);
        for (uint8_t& value : a) value = uint8_t(byte(random) + 128);
        for (int8_t& value : b) value = int8_t(byte(random));
        const int32_t no_offset = 0;
        rates.push_back({"onednn", shape_text("u8s8s32", shape), "int8", rate_of([&] {
                           gemm_u8s8s32('N', 'T', 'F', shape.rows, shape.out, shape.in, 1, a.data(),
                                        shape.in, 0, b.data(), shape.in, 0, 0, c.data(), shape.out,
                                        &no_offset);
                           return operations;
                         })});
      }
    }
  } else {
    spdlog::warn(
        "bench --kernels: no oneDNN rows: libdnnl.so.2 not found "
        "(apt install libdnnl2)");
  }
  return rates;
}

}  // namespace attn
