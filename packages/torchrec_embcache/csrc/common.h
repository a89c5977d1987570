// Shared definitions of the embcache core: error types and the id hash.
//
// The core is plain C++17 with no torch dependency; only the bindings see torch, so the
// core compiles quickly and can be unit-tested or reused without Python.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "recsdk_ext/id_hash.h"
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

// The id hash of every map of the core (host-table shard = its top bits; a map's home slot: see
// flat_map.h) and splitmix64's finaliser, from packages/common/csrc/recsdk_ext/id_hash.h.
using recsdk_ext::id_hash;
using recsdk_ext::kGoldenGamma;
using recsdk_ext::splitmix64_mix;

}  // namespace embcache
