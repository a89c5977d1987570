// CRC-32C (Castagnoli polynomial), the checksum of checkpoint files.
//
// Chosen over CRC-32 because x86 (SSE 4.2) and ARMv8 have an instruction for it, which keeps
// checksumming multi-gigabyte checkpoints cheaper than writing them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace embcache {

// Extends `crc` (the value returned for the preceding bytes; 0 to start) over data[0, n).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

inline uint32_t crc32c(const void* data, size_t n) {
    return crc32c_extend(0, data, n);
}

}  // namespace embcache
