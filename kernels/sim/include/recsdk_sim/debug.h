// The debugging APIs of kernel_operator_dump_tensor_intf.h, printing on the host:
// - printf / PRINTF (printf.md): the C format string and arguments, to standard output.
// - DumpTensor (DumpTensor.md): a header line with the label `desc` and the first dumpSize
//   elements, in the layout of the page's example ("DumpTensor: desc=5, addr=0,
//   data_type=float16, position=UB, dump_size=32" then the values in brackets); addr is the
//   tensor's byte offset in the unified buffer, or its global-memory address.
// The ShapeInfo overloads and DumpAccChkPoint are refused (recsdk_sim/refused.h for the latter).
#ifndef RECSDK_SIM_DEBUG_H
#define RECSDK_SIM_DEBUG_H

#include <cstdio>
#include <string>
#include <type_traits>

#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"
#include "recsdk_sim/vector.h"

namespace recsdk::sim {

template <typename T>
inline const char* DumpTypeName() {
    if constexpr (std::is_same_v<T, half>)
        return "float16";
    else if constexpr (std::is_same_v<T, bfloat16_t>)
        return "bfloat16";
    else if constexpr (std::is_same_v<T, float>)
        return "float32";
    else if constexpr (std::is_same_v<T, double>)
        return "float64";
    else if constexpr (std::is_integral_v<T>)
        return std::is_signed_v<T> ? (sizeof(T) == 1   ? "int8"
                                      : sizeof(T) == 2 ? "int16"
                                      : sizeof(T) == 4 ? "int32"
                                                       : "int64")
                                   : (sizeof(T) == 1   ? "uint8"
                                      : sizeof(T) == 2 ? "uint16"
                                      : sizeof(T) == 4 ? "uint32"
                                                       : "uint64");
    else
        return "unknown";
}

template <typename T>
inline void DumpValues(const T* data, uint32_t n, const char* head) {
    std::string line = head;
    line += "\n[";
    char buf[64];
    for (uint32_t i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> ||
                      std::is_same_v<T, bfloat16_t>) {
            std::snprintf(buf, sizeof(buf), "%f", static_cast<double>(AsFloat(data[i])));
        } else if constexpr (std::is_signed_v<T>) {
            std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(data[i]));
        } else {
            std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(data[i]));
        }
        line += buf;
        line += i + 1 < n ? ", " : "";
    }
    line += "]\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
}

}  // namespace recsdk::sim

namespace AscendC {

using ::printf;

template <typename... Args>
inline void PRINTF(const char* fmt, Args... args) {
    std::printf(fmt, args...);
}

template <typename T>
inline void DumpTensor(const LocalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize,
                       recsdk::sim::SrcLoc loc = {}) {
    tensor.CheckSpan(dumpSize, "DumpTensor", loc);
    char head[160];
    std::snprintf(head, sizeof(head),
                  "DumpTensor: desc=%u, addr=%llu, data_type=%s, position=%s, dump_size=%u", desc,
                  static_cast<unsigned long long>(tensor.UbOffset()),
                  recsdk::sim::DumpTypeName<T>(),
                  PositionName(static_cast<TPosition>(tensor.GetPosition())), dumpSize);
    recsdk::sim::DumpValues(tensor.SimData(), dumpSize, head);
}

template <typename T>
inline void DumpTensor(const GlobalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize,
                       recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::CheckGm(tensor.GetPhyAddr(), uint64_t(dumpSize) * sizeof(T), false, "DumpTensor",
                         loc);
    char head[160];
    std::snprintf(head, sizeof(head),
                  "DumpTensor: desc=%u, addr=%p, data_type=%s, position=GM, dump_size=%u", desc,
                  static_cast<const void*>(tensor.GetPhyAddr()), recsdk::sim::DumpTypeName<T>(),
                  dumpSize);
    recsdk::sim::DumpValues(tensor.GetPhyAddr(), dumpSize, head);
}

}  // namespace AscendC

#endif  // RECSDK_SIM_DEBUG_H
