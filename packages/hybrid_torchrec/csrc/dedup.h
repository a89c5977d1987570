// De-duplication of a batch of ids: the distinct ids in order of first occurrence, the
// inverse (which distinct id each position holds) and occurrence counts.
//
// The batch is split by the top bits of each id's hash into a fixed number of partitions
// (a function of the batch or table size, never of the thread count); each partition is
// de-duplicated by one task. A standalone de-duplication sizes its partitions so that each
// one's table fits the L2 cache. The mapper reuses its tables' partitions (their count set by
// the capacity: one up to 8192 rows), so partition p of a batch only ever touches table p; a
// small table's batch is then de-duplicated by few tasks, in a table that may not fit L2.
//
// Grouping is a stable counting sort of the ids alone; each position's partition is kept, so
// the elements of chunk c of positions that fall in partition p form one contiguous run of
// the grouped arrays, and a walk over a chunk's positions finds each position's element at
// the cursor of its partition's run. The outputs are made by such walks, chunk by chunk, in
// position order.
#pragma once

#include <cstdint>
#include <vector>

#include "common.h"

namespace hybrid {

struct DedupWorkspace {
    int64_t n = 0;
    int log2_parts = 0;
    int64_t num_parts = 1;
    int64_t num_chunks = 0;
    int64_t num_unique = 0;

    // The partition of each batch position.
    Buffer<uint8_t> part;
    // The batch's ids grouped by partition, in positional order within each partition:
    // partition p holds elements [begin[p], begin[p + 1]); the elements of chunk c in
    // partition p end at run_end[c * num_parts + p] (and start where chunk c - 1's run ends,
    // or at begin[p]). Only the id is kept: the scatter into hundreds of partitions costs in
    // proportion to the bytes it writes, and the rest of an element is cheaper to recompute
    // (its hash) or to recover by walking the positions with `part` (its position).
    std::vector<int64_t> begin;
    std::vector<uint32_t> run_end;
    Buffer<int64_t> elems;
    // For each grouped element, the index of its distinct id in `dist`, with kFirst set when
    // the element is that id's first occurrence in the batch.
    static constexpr uint32_t kFirst = 0x80000000u;
    Buffer<uint32_t> refs;
    // refs in position order (set by number_distinct): what both the numbering and the
    // inverse read, gathered from the partitions once.
    Buffer<uint32_t> ord;

    // Partition p's distinct ids occupy [begin[p], begin[p] + distinct[p]) of `dist`, in
    // order of first occurrence within the partition. Sixteen bytes per distinct id: the
    // de-duplication writes one record per id it reads (see IdMapper), and the numbering
    // visits them in position order, at random.
    struct Distinct {
        int64_t id;
        int32_t value;   // free for the caller (the mapper keeps rows here)
        uint32_t count;  // occurrences in the batch
    };
    std::vector<int64_t> distinct;
    Buffer<Distinct> dist;
    // Per distinct id (indexed as `dist`): its index among all distinct ids, set by
    // number_distinct; until then free for the de-duplication.
    Buffer<uint32_t> global;

    // Where the distinct ids of partition p first seen in chunk c start in `dist`
    // ([p * (num_chunks + 1) + c]; entry c = num_chunks ends the partition's list): each
    // partition's list is in order of first occurrence, so those ids form one sub-range.
    // Filled while de-duplicating, run by run.
    std::vector<int64_t> chunk_start;
    // Scratch of number_distinct: how many distinct ids are first seen before chunk c.
    std::vector<int64_t> chunk_base;

    size_t memory_bytes() const;
};

// Partition count for a standalone de-duplication of n ids: about 4096 ids per partition, so
// a partition's table stays in the L2 cache.
int dedup_log2_parts(int64_t n);

inline int64_t partition_of(uint64_t h, int log2_parts) {
    return log2_parts == 0 ? 0 : static_cast<int64_t>(h >> (64 - log2_parts));
}

// Groups ids[0, n) by partition (part, elems, begin, run_end) and sizes the workspace: the
// first half of dedup, for callers that de-duplicate partitions their own way.
void group(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w);

// Calls fn(c, lo, hi) for the run [lo, hi) of each chunk c in partition p, in chunk order,
// and records in chunk_start where each chunk's new distinct ids start: fn returns how many
// distinct ids of the partition have been found when its run is done.
template <class F>
void for_each_run(DedupWorkspace& w, int64_t p, F&& fn) {
    const int64_t parts = w.num_parts;
    const int64_t chunks = w.num_chunks;
    const int64_t base = w.begin[static_cast<size_t>(p)];
    int64_t* start = w.chunk_start.data() + p * (chunks + 1);
    start[0] = base;
    int64_t lo = base;
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t hi = w.run_end[static_cast<size_t>(c * parts + p)];
        start[c + 1] = base + fn(c, lo, hi);
        lo = hi;
    }
}

// The slot hashes of a partition's grouped ids, each computed kAhead elements before its id
// is processed, so that the cache miss of the probe it addresses is under way by then
// (`start` is called with each hash as it is computed). Probes depend on loads the hardware
// cannot predict; started a few elements ahead, their misses overlap.
template <int64_t kAhead>
class HashesAhead {
public:
    template <class Start>
    HashesAhead(const int64_t* elems, int64_t lo, int64_t hi, Start&& start)
        : elems_(elems), hi_(hi) {
        for (int64_t e = lo; e < hi && e < lo + kAhead; ++e) {
            ring_[e & kMask] = hash_for_slot(elems[e]);
            start(ring_[e & kMask]);
        }
    }
    // The hash of element e, for e = lo, lo + 1, ... in turn.
    template <class Start>
    uint32_t next(int64_t e, Start&& start) {
        const uint32_t h = ring_[e & kMask];
        if (e + kAhead < hi_) {
            const uint32_t later = hash_for_slot(elems_[e + kAhead]);
            ring_[(e + kAhead) & kMask] = later;
            start(later);
        }
        return h;
    }

private:
    static_assert((kAhead & (kAhead - 1)) == 0, "kAhead must be a power of two");
    static constexpr int64_t kMask = kAhead - 1;
    const int64_t* elems_;
    int64_t hi_;
    uint32_t ring_[kAhead];
};

// A batch-local table: empty at every reset() without being cleared (slots carry the epoch
// of their reset), so a partition pays only for the slots it touches. One per thread.
class BatchTable {
public:
    static BatchTable& of_this_thread();
    // Prepares an empty table for up to `keys` keys.
    void reset(int64_t keys);
    // The index stored for `key`, or stores `index` for it and returns kAbsent. `h` is
    // hash_for_slot(key).
    static constexpr uint32_t kAbsent = 0xffffffffu;
    uint32_t find_or_add(int64_t key, uint32_t h, uint32_t index) {
        for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.epoch != epoch_) {
                s = Slot{key, index, epoch_};
                return kAbsent;
            }
            if (s.key == key)
                return s.index;
        }
    }
    void prefetch(uint32_t h) const { __builtin_prefetch(slots_.data() + (h & mask_)); }

private:
    struct Slot {
        int64_t key;
        uint32_t index;
        uint32_t epoch;
    };
    std::vector<Slot> slots_;
    uint64_t mask_ = 0;
    uint32_t epoch_ = 0;
};

// De-duplicates partition p of a grouped batch in this thread's batch-local table: every
// distinct id gets value -1.
void dedup_partition_in_batch_table(DedupWorkspace& w, int64_t p);

// Groups and de-duplicates ids[0, n) in batch-local tables; sets num_unique. Parallel on the
// global pool; nothing depends on the number of threads.
void dedup(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w);

// Numbers the distinct ids in order of first occurrence (`global`) and writes, at each
// distinct id's number, the id, its count and its value (each output may be null).
void number_distinct(DedupWorkspace& w, int64_t* unique, int64_t* counts, int64_t* values);

// out[i] = the number of the distinct id at position i. Needs number_distinct first.
void write_inverse(const DedupWorkspace& w, int64_t* out);

// out[i] = the value of the distinct id at position i.
void write_values_per_position(const DedupWorkspace& w, int64_t* out);

// Reorders a first-occurrence result in place so that `unique` is ascending (as
// torch.unique(sorted=True) returns it) and remaps `inverse` and `counts` to match.
void sort_unique(int64_t num_unique, int64_t* unique, int64_t* counts, int64_t n, int64_t* inverse);

}  // namespace hybrid
