// The emulation's kernel_log.h: ASCENDC_ASSERT and KERNEL_LOG as the toolkit's CPU-debug build
// has them (asc-devkit impl/basic_api/kernel_log.h): a failed ASCENDC_ASSERT runs its behaviour
// (usually a KERNEL_LOG) and stops the kernel, reported here as a trap naming the condition.
// KERNEL_LOG prints to stderr with the core index.
#ifndef RECSDK_SIM_KERNEL_LOG_H
#define RECSDK_SIM_KERNEL_LOG_H

#include <cstdio>

#include "recsdk_sim/runtime.h"

namespace AscendC {
enum class LogLevel : uint8_t { KERNEL_DEBUG = 0, KERNEL_INFO, KERNEL_WARN, KERNEL_ERROR };
}  // namespace AscendC

namespace recsdk::sim {
inline const char* LogLevelName(AscendC::LogLevel l) {
    switch (l) {
        case AscendC::LogLevel::KERNEL_DEBUG:
            return "DEBUG";
        case AscendC::LogLevel::KERNEL_INFO:
            return "INFO";
        case AscendC::LogLevel::KERNEL_WARN:
            return "WARN";
        default:
            return "ERROR";
    }
}
inline uint32_t LogCore() {
    return g_core != nullptr ? g_core->idx : 0;
}
}  // namespace recsdk::sim

#define KERNEL_LOG(level, format, ...)                                    \
    std::fprintf(stderr, "[%s] core %u %s:%d " format "\n",               \
                 ::recsdk::sim::LogLevelName(::AscendC::LogLevel::level), \
                 ::recsdk::sim::LogCore(), __FILE__, __LINE__, ##__VA_ARGS__)

#define ASCENDC_ASSERT(cond, behavior)                                            \
    do {                                                                          \
        if (!(cond)) {                                                            \
            behavior;                                                             \
            throw ::recsdk::sim::CheckError(                                      \
                ::recsdk::sim::Where("ASCENDC_ASSERT", ::recsdk::sim::SrcLoc()) + \
                    ": assertion failed: " #cond,                                 \
                RECSDK_SIM_TRAP);                                                 \
        }                                                                         \
    } while (0)

#define ASCENDC_ASSERT_WARNING(cond, behavior) \
    do {                                       \
        if (!(cond)) {                         \
            behavior;                          \
        }                                      \
    } while (0)

#endif  // RECSDK_SIM_KERNEL_LOG_H
