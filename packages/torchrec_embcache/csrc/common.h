// Shared definitions of the embcache core: error types and the id hash.
//
// The core is plain C++17 with no torch dependency; only the bindings see torch, so the
// core compiles quickly and can be unit-tested or reused without Python.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "recsdk_ext/flat_map.h"
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
// below) and splitmix64's finaliser, from packages/common/csrc/recsdk_ext/id_hash.h.
using recsdk_ext::id_hash;
using recsdk_ext::kGoldenGamma;
using recsdk_ext::splitmix64_mix;

// The core's maps (packages/common/csrc/recsdk_ext/flat_map.h). Every one has its home slot in
// the top bits of the hash times the golden gamma: the sharded collections route ids to ranks
// by the hash's low bits and the host table to its shards by its top bits, so on one rank or
// shard those bits are (nearly) constant.
using recsdk_ext::FlatMap;

// id -> row number inside a shard's row store.
struct RowIndexTraits {
    using Value = uint32_t;
    static constexpr Value empty() { return 0xffffffffu; }
    static bool is_empty(Value v) { return v == 0xffffffffu; }
    static constexpr bool kHomeFromTopBits = true;
};

// id -> sightings of an id that has not been admitted yet.
struct PendingTraits {
    struct Value {
        uint32_t count;  // 0 marks an empty slot: a pending id has been seen at least once
        uint32_t last_seen;
    };
    static constexpr Value empty() { return Value{0, 0}; }
    static bool is_empty(const Value& v) { return v.count == 0; }
    static constexpr bool kHomeFromTopBits = true;
};

// id -> position, for de-duplicating a batch and for the device cache's slot map.
struct PositionTraits {
    using Value = int64_t;
    static constexpr Value empty() { return -1; }
    static bool is_empty(Value v) { return v < 0; }
    static constexpr bool kHomeFromTopBits = true;
};

}  // namespace embcache
