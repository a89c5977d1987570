// Shared definitions of the embcache core: error types and the key hash.
//
// The core is plain C++17 with no torch dependency; only the bindings see torch, so the
// core compiles quickly and can be unit-tested or reused without Python.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "recsdk_ext/thread_pool.h"

namespace embcache {

// The shared host pool (packages/common/csrc/recsdk_ext/thread_pool.h).
using recsdk_ext::parallel_chunks;
using recsdk_ext::parallel_for;
using recsdk_ext::parallel_tasks;
using recsdk_ext::ThreadPool;

// Errors the user can act on. The bindings translate each into the Python exception of the
// same name in torchrec_embcache.errors; std::invalid_argument becomes ValueError.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A checkpoint file is missing, truncated, corrupted or does not belong to this table.
class CheckpointError : public Error {
public:
    using Error::Error;
};

// A batch needs more distinct rows than the device cache has slots.
class CacheCapacityError : public Error {
public:
    using Error::Error;
};

// The operation is not allowed in the current state (e.g. an evaluation lookup while a
// prefetched training plan has not been executed yet).
class StateError : public Error {
public:
    using Error::Error;
};

// 64-bit finaliser (splitmix64's output function). Ids are often sequential or share low
// bits, so a full-avalanche mix is needed before the bits pick a shard and a bucket.
inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

// Hash of an id as used by every map of the core (host-table shard = its top bits; a map's
// home slot: see flat_map.h).
inline uint64_t hash_key(int64_t key) {
    // The offset keeps id 0 away from the finaliser's fixed point at 0.
    return mix64(static_cast<uint64_t>(key) + 0x9e3779b97f4a7c15ULL);
}

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

}  // namespace embcache
