#include "backend/cpu/amx.h"

#include <cstdlib>
#include <string_view>

#include "core/log.h"

#if OMNI_HAVE_AMX
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace omni::cpu {

bool AmxUsable() {
#if OMNI_HAVE_AMX
  static const bool usable = [] {
    const char* env = std::getenv("OMNI_CPU_AMX");
    if (env != nullptr && std::string_view(env) == "0") return false;
    // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): Linux hands the
    // 8 KiB of tile data state only to processes that ask.
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    const bool granted = syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
    if (!granted) OMNI_LOG(kInfo, "AMX tile state not granted by the kernel; bf16 kernels use AVX-512");
    return granted;
  }();
  return usable;
#else
  return false;
#endif
}

#if OMNI_HAVE_AMX
namespace {
// The 64-byte operand of ldtilecfg, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);
}  // namespace

void ConfigureTiles(int rows) {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.rows[t] = static_cast<uint8_t>(t < 5 ? rows : 16);
    c.bytes_per_row[t] = 64;
  }
  // Not _tile_loadconfig: GCC 12 declares it as reading 8 bytes, and the
  // stores of the rest of `c` were dropped.
  __asm__ volatile("ldtilecfg %0" ::"m"(c));
}
#endif

}  // namespace omni::cpu
