#include "src/kernels/cpu_features.h"

#include <cstdlib>
#include <string>

#if ATTN_KERNELS_X86
#include <cpuid.h>
#endif

#include "src/base/error.h"

namespace attn {

namespace {

#if ATTN_KERNELS_X86
// CPUID leaf 7, sub-leaf 1, EAX: AVX-VNNI is bit 4, AVX512_BF16 bit 5. (Read directly: clang 14's
// __builtin_cpu_supports knows neither name. The registers they use are those of AVX2 and
// AVX-512, whose operating-system support the builtin checks.)
unsigned leaf7_subleaf1_eax() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return 0;
  return eax;
}
#endif

CpuFeatures read_cpu_features() {
  CpuFeatures features;
#if ATTN_KERNELS_X86
  // __builtin_cpu_supports also checks that the operating system saves the registers (XGETBV).
  __builtin_cpu_init();
  // Every CPU with AVX2 and FMA has F16C too (clang cannot ask for it by name).
  features.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  features.avx_vnni = features.avx2 && (leaf7_subleaf1_eax() >> 4 & 1);
  features.avx512 = features.avx2 && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  features.avx512_bf16 = features.avx512 && (leaf7_subleaf1_eax() >> 5 & 1);
#endif
  return features;
}

}  // namespace

CpuFeatures capped_features(const CpuFeatures& hardware, const char* cap) {
  const std::string name = cap;
  if (name == "avx512") {
    if (!hardware.avx512)
      throw Error("ATTN_KERNELS=avx512: this CPU has no AVX-512 (F, BW, DQ, VL and VNNI)");
    return hardware;
  }
  if (name == "avx2") {
    if (!hardware.avx2) throw Error("ATTN_KERNELS=avx2: this CPU has no AVX2 and FMA");
    // Without AVX-VNNI too: what an AVX2-only CPU (Zen 3) runs, for tests that stand in for one.
    return {.avx2 = true};
  }
  if (name == "scalar") return {};
  throw Error("ATTN_KERNELS=" + name +
              ": not an instruction set attn has kernels for (scalar, avx2, avx512)");
}

const CpuFeatures& cpu_hardware_features() {
  static const CpuFeatures features = read_cpu_features();
  return features;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    const char* cap = std::getenv("ATTN_KERNELS");
    return cap && *cap ? capped_features(cpu_hardware_features(), cap) : cpu_hardware_features();
  }();
  return features;
}

}  // namespace attn
