// Linked into the test binaries that ctest runs once per CPU kernel level
// (omni_isa_tests in cmake/OmniTarget.cmake). With OMNI_CPU_ISA set, the
// binary must run at exactly that level: where this CPU lacks it the run
// exits 77 (ctest: skipped, with the reason printed), and a level that was
// asked for but not taken fails the run, so a level can never pass by
// quietly testing another one.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/kernels.h"

namespace omni::cpu {
namespace {

class IsaLevelGuard : public testing::Environment {
 public:
  void SetUp() override {
    const char* env = std::getenv("OMNI_CPU_ISA");
    if (env == nullptr || *env == '\0') return;
    const std::optional<CpuIsa> want = ParseIsa(env);
    ASSERT_TRUE(want.has_value()) << "OMNI_CPU_ISA=" << env << " is not a level";
    const IsaChoice& c = ActiveIsa();
    if (*want > c.best) {
      std::printf("SKIPPED: OMNI_CPU_ISA=%s: this CPU's best level is %s\n", env, std::string(IsaName(c.best)).c_str());
      std::fflush(stdout);
      std::_Exit(77);
    }
    ASSERT_EQ(c.selected, *want);
    ASSERT_EQ(Kernels().isa, *want) << "the kernel table is not the requested level's";
    std::printf("CPU kernels at level %s\n", IsaSummary().c_str());
  }
};

const testing::Environment* const kGuard = testing::AddGlobalTestEnvironment(new IsaLevelGuard);

}  // namespace
}  // namespace omni::cpu
