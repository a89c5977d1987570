#include "common.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace hybrid {

void* allocate_large(size_t bytes) {
    constexpr size_t kHuge = size_t{1} << 21;
    if (bytes < kHuge) {
        void* p = std::malloc(bytes > 0 ? bytes : 1);
        if (p == nullptr)
            throw std::bad_alloc();
        return p;
    }
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = nullptr;
    if (posix_memalign(&p, kHuge, rounded) != 0)
        throw std::bad_alloc();
    // Advice only: without transparent huge pages this changes nothing.
    madvise(p, rounded, MADV_HUGEPAGE);
    return p;
}

}  // namespace hybrid
