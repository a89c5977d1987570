// Definitions shared by the hybrid_torchrec core: error types, buffers.
//
// The core is plain C++17 without torch: only bindings.cpp sees tensors, so the core builds
// fast and a sharder can drive it from any thread without touching Python.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "recsdk_ext/id_hash.h"
#include "recsdk_ext/thread_pool.h"

namespace hybrid {

// The shared host pool (packages/common/csrc/recsdk_ext/thread_pool.h).
using recsdk_ext::parallel_chunks;
using recsdk_ext::parallel_for;
using recsdk_ext::parallel_tasks;
using recsdk_ext::ThreadPool;

// A table cannot take the ids of a batch: it is full and has no eviction policy, or every
// row it could evict is protected. Raised before anything changes.
class CapacityError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Positions inside one batch are stored in 32 bits to halve the memory traffic of the
// scatter passes; a batch of 2^31 ids would need 40+ GB of workspace anyway.
constexpr int64_t kMaxBatch = (int64_t{1} << 31) - 1;

// Row links are 32-bit for the same reason, so a table holds at most this many rows.
constexpr int64_t kMaxCapacity = (int64_t{1} << 31) - 1;

inline void check_batch_size(int64_t n) {
    if (n < 0 || n > kMaxBatch) {
        throw std::invalid_argument("a batch may hold at most 2^31 - 1 ids, got " +
                                    std::to_string(n));
    }
}

// The id hashes (packages/common/csrc/recsdk_ext/id_hash.h): id_hash places an id in the
// mapper's partitions and hash tables, route_bucket routes it to a rank in hash bucketization.
using recsdk_ext::id_hash;
using recsdk_ext::route_bucket;

// What addresses an id's slot in the core's hash tables (the mapper's FlatMap, BatchTable): the
// low 32 bits of id_hash(id). Its top bits pick the partition, which all keys of a table
// share; the low bits still spread them over the slots. A map holds at most 2^32 slots.
inline uint32_t hash_for_slot(int64_t id) {
    return static_cast<uint32_t>(id_hash(id));
}

// Memory for large arrays: 2 MiB-aligned and marked for transparent huge pages, because the
// core reads and writes its batch arrays at random or through hundreds of scatter streams,
// and with 4 KiB pages most of those accesses would miss the TLB. Freed with std::free.
void* allocate_large(size_t bytes);

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};

// An array that grows without initialising and never shrinks: the per-batch workspaces are
// reused across batches, and value-initialising megabytes per batch would cost as much as
// the work itself. T must be trivially constructible.
template <class T>
class Buffer {
public:
    T* data() { return data_.get(); }
    const T* data() const { return data_.get(); }
    T& operator[](int64_t i) { return data_.get()[i]; }
    const T& operator[](int64_t i) const { return data_.get()[i]; }
    int64_t capacity() const { return capacity_; }
    // Contents are not preserved.
    void ensure(int64_t n) {
        if (n <= capacity_)
            return;
        int64_t cap = capacity_ > 0 ? capacity_ : 1024;
        while (cap < n)
            cap *= 2;
        data_.reset(static_cast<T*>(allocate_large(static_cast<size_t>(cap) * sizeof(T))));
        capacity_ = cap;
    }
    size_t memory_bytes() const { return static_cast<size_t>(capacity_) * sizeof(T); }

private:
    std::unique_ptr<T, FreeDeleter> data_;
    int64_t capacity_ = 0;
};

inline int ceil_log2(uint64_t x) {
    int k = 0;
    while ((uint64_t{1} << k) < x)
        ++k;
    return k;
}

}  // namespace hybrid
