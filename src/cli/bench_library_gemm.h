#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

// The GEMM rates of the libraries attn could use instead of its own kernels (OpenBLAS, oneDNN),
// found at run time, for attn bench --kernels.

namespace attn {

struct LibraryGemmShape {
  int rows, in, out;  // A (rows, in) times B, stored (out, in)
};

struct LibraryGemmRate {
  std::string library;  // "openblas" or "onednn"
  std::string test;     // "gemm f32 128x768x768"
  std::string kind;     // the peak it is a fraction of: "f32", "bf16" or "int8"
  double rate;          // operations per second (a multiply and an add per product)
};

// The best rate of a call that returns the operations it did, as bench --kernels times its own.
using RateOf = std::function<double(const std::function<double()>& run)>;

// Each library's rates on `shapes`, one thread: those whose library is not installed are left out
// (with a warning on stderr).
std::vector<LibraryGemmRate> library_gemm_rates(std::span<const LibraryGemmShape> shapes,
                                                const RateOf& rate_of);

}  // namespace attn
