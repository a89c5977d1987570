// De-duplication of a batch of ids: the distinct ids in order of first occurrence, the
// inverse (which distinct id each position holds) and occurrence counts.
//
// The batch is split by the top bits of each id's hash into a fixed number of partitions
// (a function of the batch or table size, never of the thread count); each partition is
// de-duplicated by one task in a table small enough for the L2 cache, and one pass over
// first-occurrence flags numbers the distinct ids globally. The mapper reuses the partitions:
// its own hash tables are split by the same bits, so partition p of a batch only ever
// touches table p.
#pragma once

#include <cstdint>
#include <vector>

#include "common.h"

namespace hybrid {

struct DedupWorkspace {
    int64_t n = 0;
    int log2_parts = 0;
    int64_t num_parts = 1;
    int64_t num_unique = 0;

    // The batch grouped by partition, in positional order within each partition: partition
    // p holds elements [begin[p], begin[p + 1]).
    std::vector<int64_t> begin;
    Buffer<int64_t> ids;
    Buffer<uint32_t> pos;
    // For each grouped element, the index of its distinct id in the arrays below.
    Buffer<uint32_t> slot;

    // Partition p's distinct ids occupy [begin[p], begin[p] + distinct[p]) of these, in order
    // of first occurrence within the partition.
    std::vector<int64_t> distinct;
    Buffer<int64_t> d_id;
    Buffer<uint32_t> d_first;   // position of the first occurrence in the batch
    Buffer<uint32_t> d_count;   // occurrences in the batch
    Buffer<uint32_t> d_global;  // index among all distinct ids of the batch
    Buffer<int64_t> d_value;    // free for the caller (the mapper keeps rows here)

    // Scratch of the global numbering.
    Buffer<uint8_t> first_flag;
    Buffer<uint32_t> global_at;
    std::vector<uint32_t> histogram;
    std::vector<int64_t> chunk_base;

    size_t memory_bytes() const;
};

// Partition count for a standalone de-duplication of n ids: about 2048 ids per partition, so
// a partition's table (16 bytes a slot at load <= 1/2) stays in L2.
int dedup_log2_parts(int64_t n);

inline int64_t partition_of(uint64_t h, int log2_parts) {
    return log2_parts == 0 ? 0 : static_cast<int64_t>(h >> (64 - log2_parts));
}

// Fills `w` for ids[0, n). Parallel on the global pool; the result does not depend on the
// number of threads.
void dedup(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w);

// Writes unique[num_unique] (first-occurrence order), counts[num_unique] (may be null) and
// inverse[n] from a filled workspace.
void write_dedup(const DedupWorkspace& w, int64_t* unique, int64_t* counts, int64_t* inverse);

// Reorders a first-occurrence result in place so that `unique` is ascending (as
// torch.unique(sorted=True) returns it) and remaps `inverse` and `counts` to match.
void sort_unique(int64_t num_unique, int64_t* unique, int64_t* counts, int64_t n, int64_t* inverse);

}  // namespace hybrid
