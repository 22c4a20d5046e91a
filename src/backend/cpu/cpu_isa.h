// Which instruction-set level the CPU kernels run at. The binary is built
// for x86-64-v2; the hot kernels are compiled once per level (isa/) and one
// set is chosen at start from cpuid and the OS's XSAVE state, capped by
// OMNI_CPU_ISA. Only the backend sees a level: ops and models call the
// kernels through the table in kernels.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "backend/cpu/isa_level.h"

namespace omni::cpu {

std::string_view IsaName(CpuIsa isa);
// "amx", "avx512bf16", "avx512", "avx2", "generic"; nullopt otherwise.
std::optional<CpuIsa> ParseIsa(std::string_view name);

// What cpuid and XGETBV report; `os_*` say the OS saves the registers.
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512bf16 = false;
  bool amx_tile = false, amx_bf16 = false;
  bool os_ymm = false;     // XCR0 bits 1-2
  bool os_zmm = false;     // XCR0 bits 5-7
  bool os_tiles = false;   // XCR0 bits 17-18
  std::string brand;       // cpuid's brand string
};

CpuFeatures DetectCpuFeatures();

// The best level `f` supports (AMX also needs the tile permission, asked
// of Linux separately: `amx_granted`).
CpuIsa BestIsa(const CpuFeatures& f, bool amx_granted);

struct IsaChoice {
  CpuIsa best = CpuIsa::kGeneric;
  CpuIsa selected = CpuIsa::kGeneric;
  std::string warning;  // non-empty when the request could not be honoured
};

// The level to run at given the best the CPU has and OMNI_CPU_ISA's value
// (null or empty: the best). A request above `best` falls back to `best`;
// an unknown name keeps `best`; both with a warning.
IsaChoice ChooseIsa(CpuIsa best, const char* requested);

// The level in use, chosen once (first call) from the CPU and
// OMNI_CPU_ISA; also caps oneDNN's own dispatch at the same level. Logs
// the warning of the choice, if any.
const IsaChoice& ActiveIsa();

// The CPU's brand string (cpuid; empty where there is none), read once.
const std::string& CpuBrand();

// One line for logs and `omniserve version`: "avx512bf16 (best avx512bf16;
// AMD EPYC ...)".
std::string IsaSummary();

}  // namespace omni::cpu
