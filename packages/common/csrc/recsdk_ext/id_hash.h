// The id hashes and the id-to-bucket functions of both extension packages, in one place.
//
// Every value here is persistent: bucket numbers are recorded in checkpoints (embcache's
// bucket maps) and decide which rank holds an id (hybrid's hash routing), so a change to any
// constant or shift breaks every checkpoint written before it. Tests pin them on fixed ids.
//
// Two hashes, on purpose: an id's bucket (rank) and its place in that rank's maps must not be
// read from the same bits, or all ids of one rank would share those bits and crowd into a few
// partitions or probe runs. hybrid routes by murmur3's finaliser and maps by splitmix64's;
// embcache routes by splitmix64's low bits and indexes its maps by the top bits of the hash
// times the golden gamma (flat_map.h), which are decorrelated from the low bits.
#pragma once

#include <cstdint>

namespace recsdk_ext {

// splitmix64's increment: 2^64 over the golden ratio, odd.
constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's output function. Every output bit depends on every input bit, which ids that
// are sequential or share their low bits need before any of their bits pick a place.
inline uint64_t splitmix64_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// The hash of an id in both packages' maps and in embcache's buckets. The offset keeps id 0
// away from the finaliser's fixed point at 0.
inline uint64_t id_hash(int64_t id) {
    return splitmix64_mix(static_cast<uint64_t>(id) + kGoldenGamma);
}

// murmur3's 64-bit finaliser of an id: hybrid's routing hash, independent of id_hash.
inline uint64_t route_hash(int64_t id) {
    uint64_t x = static_cast<uint64_t>(id);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

// floor(h * n / 2^64): [0, n) by ranges of the hash, so bucket r of n holds the hash range
// [r/n, (r+1)/n). Ranges nest when n changes, which lets a checkpoint of W ranks be split or
// merged for W' ranks.
inline uint64_t scale_hash(uint64_t h, uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

// hybrid's hash routing: the bucket (rank) of `id` among n, by ranges of route_hash.
inline uint64_t route_bucket(int64_t id, uint64_t n) {
    return scale_hash(route_hash(id), n);
}

// embcache's bucket of `id` among n (n >= 1): id_hash's top 63 bits modulo n. The 63 bits are
// what the first (Python, int64) implementation could compute; kept for its checkpoints.
inline uint64_t hash_bucket(int64_t id, uint64_t n) {
    return (id_hash(id) >> 1) % n;
}

}  // namespace recsdk_ext
