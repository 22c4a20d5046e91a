// AMX tile configuration and a tile load that declares its memory read.
// kernels_isa.cc includes this fragment once per ISA level, inside its
// anonymous namespace, after simd.h (the vector vocabulary) and its
// OMNI_ISA_BF16 / OMNI_ISA_AMX switches; it is not a header of its own.

#if OMNI_ISA_AMX
// tileloadd that the compiler knows reads memory: GCC 12's _tile_loadd
// declares no memory operand, so stores the tile load depends on could be
// moved past it.
#define OMNI_TILE_LOADD(tile, base, stride)                                                            \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #tile ::"r"(static_cast<const void*>(base)),          \
                   "r"(static_cast<long>(stride))                                                      \
                   : "memory")

// The 64-byte operand of ldtilecfg, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// All eight tiles 64 bytes wide; tiles 0-4 (accumulators and the A operand)
// `rows` rows tall, tiles 5-7 (B operands) 16.
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
