// Stand-in for CANN's tiling/platform/platform_ascendc.h (see register/op_def_registry.h).
#ifndef FAKE_CANN_PLATFORM_ASCENDC_H
#define FAKE_CANN_PLATFORM_ASCENDC_H

#include <cstdint>

namespace gert {
struct PlatFormInfos;
}

namespace platform_ascendc {
enum class CoreMemType { L0_A, L0_B, L0_C, L1, L2, UB, HBM };
class PlatformAscendC {
public:
    explicit PlatformAscendC(struct PlatFormInfos* info);
    explicit PlatformAscendC(gert::PlatFormInfos* info);
    uint32_t GetCoreNumAiv() const;
    uint32_t GetCoreNumAic() const;
    void GetCoreMemSize(CoreMemType type, uint64_t& size) const;
    uint32_t GetLibApiWorkSpaceSize() const;
};
}  // namespace platform_ascendc

#endif  // FAKE_CANN_PLATFORM_ASCENDC_H
