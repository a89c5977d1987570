// De-duplication of a batch of ids: the distinct ids in order of first occurrence, the
// inverse (which distinct id each position holds) and occurrence counts.
//
// The batch is split by the top bits of each id's hash into a fixed number of partitions
// (a function of the batch or table size, never of the thread count); each partition is
// de-duplicated by one task in a table small enough for the L2 cache. The mapper reuses the
// partitions: its own hash tables are split by the same bits, so partition p of a batch only
// ever touches table p.
//
// Results are then written chunk by chunk of batch positions: the elements of chunk c that
// fall in partition p form one contiguous run of the partitioned arrays, so a chunk's
// writes stay within a window of the output that fits the cache, where writing partition by
// partition would scatter them over the whole output.
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

    // The batch grouped by partition, in positional order within each partition: partition
    // p holds elements [begin[p], begin[p + 1]); the elements of chunk c in partition p end at
    // run_end[c * num_parts + p] (and start where chunk c - 1's run ends, or at begin[p]).
    std::vector<int64_t> begin;
    std::vector<uint32_t> run_end;
    // One element of the grouped batch. Only the low 32 bits of the hash are kept: they
    // address every hash table of the core (at most 2^32 slots), the top bits are the
    // partition, and one 16-byte record per element keeps the scatter to one write stream
    // per partition.
    struct Element {
        int64_t id;
        uint32_t hash;
        uint32_t pos;  // position in the batch
    };
    Buffer<Element> elems;
    // For each grouped element, the index of its distinct id in `dist`.
    Buffer<uint32_t> slot;

    // Partition p's distinct ids occupy [begin[p], begin[p] + distinct[p]) of `dist`, in
    // order of first occurrence within the partition. One record per distinct id, so that
    // each random visit costs one cache line.
    struct Distinct {
        int64_t id;
        int64_t value;    // free for the caller (the mapper keeps rows here)
        uint32_t hash;    // low bits of hash_for_map(id)
        uint32_t first;   // position of the first occurrence in the batch
        uint32_t count;   // occurrences in the batch
        uint32_t global;  // index among all distinct ids (set by number_distinct)
    };
    std::vector<int64_t> distinct;
    Buffer<Distinct> dist;

    // Scratch of number_distinct: where each partition's distinct ids first seen in chunk c
    // start ([p * (num_chunks + 1) + c]), and how many distinct ids precede chunk c.
    std::vector<int64_t> chunk_start;
    std::vector<int64_t> chunk_base;

    size_t memory_bytes() const;
};

// Partition count for a standalone de-duplication of n ids: about 4096 ids per partition, so
// a partition's table stays in the L2 cache.
int dedup_log2_parts(int64_t n);

inline int64_t partition_of(uint64_t h, int log2_parts) {
    return log2_parts == 0 ? 0 : static_cast<int64_t>(h >> (64 - log2_parts));
}

// Groups ids[0, n) by partition (elems, begin, run_end) and sizes the workspace: the first
// half of dedup, for callers that de-duplicate partitions their own way.
void group(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w);

// A batch-local table: empty at every reset() without being cleared (slots carry the epoch
// of their reset), so a partition pays only for the slots it touches. One per thread.
class BatchTable {
public:
    static BatchTable& of_this_thread();
    // Prepares an empty table for up to `keys` keys; returns its mask.
    uint64_t reset(int64_t keys);
    // The index stored for `key`, or stores `index` for it and returns kAbsent.
    static constexpr uint32_t kAbsent = 0xffffffffu;
    uint32_t find_or_add(int64_t key, uint64_t h, uint32_t index) {
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
    void prefetch(uint64_t h) const { __builtin_prefetch(slots_.data() + (h & mask_)); }

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

// Groups and de-duplicates ids[0, n) in batch-local tables; sets num_unique. Parallel on the
// global pool; nothing depends on the number of threads.
void dedup(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w);

// Numbers the distinct ids in order of first occurrence (Distinct::global) and writes, at
// each distinct id's number, the id, its count and its value (each output may be null).
void number_distinct(DedupWorkspace& w, int64_t* unique, int64_t* counts, int64_t* values);

// out[i] = the number of the distinct id at position i. Needs number_distinct first, and
// turns `slot` into those numbers: call write_values_per_position before, not after.
void write_inverse(DedupWorkspace& w, int64_t* out);

// out[i] = the value of the distinct id at position i.
void write_values_per_position(const DedupWorkspace& w, int64_t* out);

// Reorders a first-occurrence result in place so that `unique` is ascending (as
// torch.unique(sorted=True) returns it) and remaps `inverse` and `counts` to match.
void sort_unique(int64_t num_unique, int64_t* unique, int64_t* counts, int64_t n, int64_t* inverse);

}  // namespace hybrid
