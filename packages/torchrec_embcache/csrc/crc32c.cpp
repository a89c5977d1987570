#include "crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define EMBCACHE_CRC_X86 1
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define EMBCACHE_CRC_ARM 1
#endif

namespace embcache {

namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
struct Tables {
    std::array<std::array<uint32_t, 256>, 8> t{};
    Tables() {
        for (uint32_t b = 0; b < 256; ++b) {
            uint32_t c = b;
            for (int i = 0; i < 8; ++i)
                c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
            t[0][b] = c;
        }
        for (int k = 1; k < 8; ++k) {
            for (uint32_t b = 0; b < 256; ++b)
                t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
        }
    }
};

const Tables& tables() {
    static const Tables tab;
    return tab;
}

uint32_t software(uint32_t crc, const unsigned char* p, size_t n) {
    const auto& t = tables().t;
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);  // little-endian hosts only (checked in checkpoint.cpp)
        v ^= crc;
        crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^
              t[4][(v >> 24) & 0xff] ^ t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^
              t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xffu];
    return crc;
}

#if EMBCACHE_CRC_X86
__attribute__((target("sse4.2"))) uint32_t hardware(uint32_t crc, const unsigned char* p,
                                                    size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = static_cast<uint32_t>(c);
    while (n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

bool has_hardware() {
    static const bool yes = __builtin_cpu_supports("sse4.2");
    return yes;
}
#elif EMBCACHE_CRC_ARM
uint32_t hardware(uint32_t crc, const unsigned char* p, size_t n) {
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        crc = __crc32cd(crc, v);
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = __crc32cb(crc, *p++);
    return crc;
}
bool has_hardware() {
    return true;
}
#endif

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    crc = ~crc;
#if EMBCACHE_CRC_X86 || EMBCACHE_CRC_ARM
    if (has_hardware())
        return ~hardware(crc, p, n);
#endif
    return ~software(crc, p, n);
}

}  // namespace embcache
