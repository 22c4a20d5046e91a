#include "backend/cpu/cpu_isa.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/log.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace omni::cpu {
namespace {

constexpr std::array<std::string_view, 5> kNames = {"generic", "avx2", "avx512", "avx512bf16", "amx"};

#if defined(__x86_64__)
struct Regs {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

Regs Cpuid(uint32_t leaf, uint32_t sub) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) return {};
  return r;
}

uint64_t Xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool Bit(uint32_t v, int i) { return (v >> i) & 1u; }

// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): Linux hands the
// 8 KiB of tile data state only to processes that ask.
bool RequestAmxPermission() {
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
}
#endif

// oneDNN's cap for a level it must not exceed.
dnnl::cpu_isa DnnlCap(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kGeneric: return dnnl::cpu_isa::sse41;
    case CpuIsa::kAvx2: return dnnl::cpu_isa::avx2;
    case CpuIsa::kAvx512: return dnnl::cpu_isa::avx512_core;
    case CpuIsa::kAvx512Bf16: return dnnl::cpu_isa::avx512_core_bf16;
    case CpuIsa::kAmx: return dnnl::cpu_isa::avx512_core_amx;
  }
  return dnnl::cpu_isa::all;
}

}  // namespace

std::string_view IsaName(CpuIsa isa) { return kNames[static_cast<int>(isa)]; }

std::optional<CpuIsa> ParseIsa(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<CpuIsa>(i);
  }
  return std::nullopt;
}

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__)
  const Regs l0 = Cpuid(0, 0);
  const Regs l1 = Cpuid(1, 0);
  const bool osxsave = Bit(l1.c, 27);
  const uint64_t xcr0 = osxsave ? Xgetbv0() : 0;
  f.os_ymm = (xcr0 & 0x6) == 0x6;
  f.os_zmm = f.os_ymm && (xcr0 & 0xE0) == 0xE0;
  f.os_tiles = (xcr0 & 0x60000) == 0x60000;
  f.fma = Bit(l1.c, 12);
  f.f16c = Bit(l1.c, 29);
  if (l0.a >= 7) {
    const Regs l7 = Cpuid(7, 0);
    f.avx2 = Bit(l7.b, 5);
    f.avx512f = Bit(l7.b, 16);
    f.avx512dq = Bit(l7.b, 17);
    f.avx512bw = Bit(l7.b, 30);
    f.avx512vl = Bit(l7.b, 31);
    f.amx_bf16 = Bit(l7.d, 22);
    f.amx_tile = Bit(l7.d, 24);
    if (l7.a >= 1) f.avx512bf16 = Bit(Cpuid(7, 1).a, 5);
  }
  if (Cpuid(0x80000000, 0).a >= 0x80000004) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      const Regs r = Cpuid(0x80000002 + i, 0);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    f.brand = brand;
    while (!f.brand.empty() && f.brand.back() == ' ') f.brand.pop_back();
    while (!f.brand.empty() && f.brand.front() == ' ') f.brand.erase(f.brand.begin());
  }
#endif
  return f;
}

CpuIsa BestIsa(const CpuFeatures& f, bool amx_granted) {
  if (!(f.os_ymm && f.avx2 && f.fma && f.f16c)) return CpuIsa::kGeneric;
  if (!(f.os_zmm && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl)) return CpuIsa::kAvx2;
  if (!f.avx512bf16) return CpuIsa::kAvx512;
  if (!(f.amx_tile && f.amx_bf16 && f.os_tiles && amx_granted)) return CpuIsa::kAvx512Bf16;
  return CpuIsa::kAmx;
}

IsaChoice ChooseIsa(CpuIsa best, const char* requested) {
  IsaChoice c{.best = best, .selected = best};
  if (requested == nullptr || *requested == '\0') return c;
  const std::optional<CpuIsa> want = ParseIsa(requested);
  if (!want) {
    c.warning = std::string("OMNI_CPU_ISA=") + requested +
                " is not a level (amx, avx512bf16, avx512, avx2, generic); using " + std::string(IsaName(best));
  } else if (*want > best) {
    c.warning = std::string("OMNI_CPU_ISA=") + requested + ": this CPU has no " + std::string(IsaName(*want)) +
                "; using its best level, " + std::string(IsaName(best));
  } else {
    c.selected = *want;
  }
  return c;
}

const IsaChoice& ActiveIsa() {
  static const IsaChoice choice = [] {
    const CpuFeatures f = DetectCpuFeatures();
    bool amx_granted = false;
#if defined(__x86_64__)
    // Ask for the tile state only where the CPU and OS have AMX at all.
    if (f.amx_tile && f.amx_bf16 && f.os_tiles) {
      amx_granted = RequestAmxPermission();
      if (!amx_granted) OMNI_LOG(kInfo, "AMX tile state not granted by the kernel; using avx512bf16 kernels");
    }
#endif
    const char* requested = std::getenv("OMNI_CPU_ISA");
    // OMNI_CPU_AMX=0, the earlier switch, still keeps AMX off.
    const char* amx_env = std::getenv("OMNI_CPU_AMX");
    if ((requested == nullptr || *requested == '\0') && amx_env != nullptr && std::string_view(amx_env) == "0") {
      requested = "avx512bf16";
    }
    IsaChoice c = ChooseIsa(BestIsa(f, amx_granted), requested);
    if (!c.warning.empty()) OMNI_LOG(kWarn, "{}", c.warning);
    // oneDNN picks its own kernels from cpuid; a capped level caps it too,
    // so a level chosen for a CPU without (say) AVX-512 runs nothing that
    // CPU lacks. Must precede oneDNN's first primitive.
    if (c.selected < c.best) {
      try {
        dnnl::set_max_cpu_isa(DnnlCap(c.selected));
      } catch (const dnnl::error& e) {
        OMNI_LOG(kWarn, "could not cap oneDNN at {}: {}", IsaName(c.selected), e.what());
      }
    }
    return c;
  }();
  return choice;
}

const std::string& CpuBrand() {
  static const std::string brand = DetectCpuFeatures().brand;
  return brand;
}

std::string IsaSummary() {
  const std::string& brand = CpuBrand();
  const IsaChoice& c = ActiveIsa();
  std::string s(IsaName(c.selected));
  s += " (best ";
  s += IsaName(c.best);
  if (!brand.empty()) s += "; " + brand;
  s += ")";
  return s;
}

}  // namespace omni::cpu
