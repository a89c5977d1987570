// The high-level API's Fill of global memory (adv_api/utils/init_global_memory.h, reachable from
// kernel_operator.h as in CANN; Fill-97.md): `size` elements of gmWorkspaceAddr set to `value`,
// written by MTE3 from a unified-buffer staging block. A2/A3 types: uint16_t, int16_t, half,
// uint32_t, int32_t, float. The page allows it only before InitBuffer (it stages in UB the
// kernel has not yet divided up): a call after an InitBuffer is refused. Other cores see the
// values only after a SyncAll, as with any DMA write.
//
// The basic API's Fill (kernel_operator_mm_intf.h, an L0A/L0B/L1 fill with InitConstValueParams)
// is not emulated: InitConstValueParams is not declared, so such a call stops at that name.
#ifndef RECSDK_SIM_INIT_GLOBAL_MEMORY_H
#define RECSDK_SIM_INIT_GLOBAL_MEMORY_H

#include <type_traits>
#include <vector>

#include "recsdk_sim/datacopy.h"

namespace AscendC {

template <typename T>
inline void Fill(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value,
                 recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(std::is_same_v<T, uint16_t> || std::is_same_v<T, int16_t> ||
                      std::is_same_v<T, half> || std::is_same_v<T, uint32_t> ||
                      std::is_same_v<T, int32_t> || std::is_same_v<T, float>,
                  "Fill(GlobalTensor): on Atlas A2/A3 uint16_t, int16_t, half, uint32_t, int32_t "
                  "or float");
    const char* call = "Fill(GlobalTensor)";
    CoreState& core = Core();
    if (core.buffers != 0) {
        Fail(call, loc,
             "called after InitBuffer: Fill-97.md allows it only before the unified buffer is "
             "allocated");
    }
    if (size == 0)
        return;
    T* dst = const_cast<T*>(gmWorkspaceAddr.GetPhyAddr());
    CheckGm(dst, size * sizeof(T), true, call, loc);
    const std::vector<T> values(size, value);
    WriteGm(dst, values.data(), size, call, loc);
    ++Stats().dma_transfers;
}

// InitOutput (kernel_operator_common_intf.h; deprecated for Fill): gm[0, size) = value. dav_c220
// fills a buffer of its reserved stack space with Duplicate and copies it out with DataCopyPad,
// so unlike Fill it may follow InitBuffer; on an AIC it does nothing.
template <typename T>
inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint32_t size, T value = 0,
                       recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(sizeof(T) == 2 || sizeof(T) == 4,
                  "InitOutput duplicates T with the vector unit: 16- and 32-bit types only");
    const char* call = "InitOutput";
    if (Core().core_type == kAic || size == 0)
        return;
    T* dst = const_cast<T*>(gmWorkspaceAddr.GetPhyAddr());
    CheckGm(dst, uint64_t(size) * sizeof(T), true, call, loc);
    const std::vector<T> values(size, value);
    WriteGm(dst, values.data(), size, call, loc);
    ++Stats().dma_transfers;
}

}  // namespace AscendC

#endif  // RECSDK_SIM_INIT_GLOBAL_MEMORY_H
