// IdMapper: the id -> row mapping of one table (or of one shard of a table).
//
// Rows are handed out as ids arrive, smallest free row first, until `capacity` rows are in
// use. Then a batch with new ids either fails with CapacityError (no policy) or takes the
// rows of the ids the policy gives up (LRU or LFU order); the evicted ids and their rows are
// returned so that the caller can reset those rows' embeddings and optimiser state.
//
// With a TTL (`ttl_steps` > 0, a policy's option) every inserting batch also gives up the ids
// not seen for more than ttl_steps batches, whether or not the table is full: their rows
// become free (new ids of the batch take them first) and are returned with the evicted ones.
// Which rows expired is read off the front of a recency order (the LRU order itself, or a
// second EvictionOrder beside LFU's), as torchrec_embcache's host table does.
//
// Per batch (map): the ids are de-duplicated (first-occurrence order), the distinct ids are
// looked up, and with `insert` the missing ones get rows. Within a batch the ids already
// mapped are touched first, in order of first occurrence, then the new ids are added in the
// same order; rows used by the last `protect_batches` batches (this one included) are never
// evicted. A failing batch changes nothing.
//
// Use statistics (the batches an id occurred in, the step of the last one) are what LRU and
// LFU order by, and are kept only by tables with a policy: keeping them costs a random memory
// access per distinct id and batch. A table without a policy records count 1 and the step
// of insertion for every id (a state loaded into it keeps the loaded values).
//
// Everything the mapper does is a function of its state and the batch: the thread count,
// timing and memory addresses play no part, so ranks that feed identical ids to identical
// mappers hold identical mappings.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <vector>

#include "common.h"
#include "dedup.h"
#include "recsdk_ext/eviction_order.h"
#include "recsdk_ext/flat_map.h"

namespace hybrid {

enum class Policy : int { kNone = 0, kLRU = 1, kLFU = 2 };

const char* policy_name(Policy p);

// An int64 array handed to the caller without being initialised first.
struct Int64Array {
    std::unique_ptr<int64_t[]> data;
    int64_t size = 0;
    void allocate(int64_t n) {
        data.reset(new int64_t[static_cast<size_t>(n > 0 ? n : 1)]);
        size = n;
    }
};

struct MapResult {
    Int64Array unique_ids;  // distinct ids of the batch, in order of first occurrence
    Int64Array rows;        // row of each distinct id; -1 for an unmapped id without insert
    Int64Array counts;      // occurrences of each distinct id in the batch
    Int64Array inverse;     // per input id, its index in unique_ids
    std::vector<int64_t> evicted_ids;   // ids that lost their rows to this batch
    std::vector<int64_t> evicted_rows;  // their rows, now held by new ids of this batch
    int64_t num_new = 0;                // distinct ids that got a row in this batch
};

// The mapping in eviction order (row order without a policy): what a checkpoint holds.
struct MappingState {
    std::vector<int64_t> ids, rows, counts, last_used;
    int64_t step = 0;
};

// A partition's map (packages/common/csrc/recsdk_ext/flat_map.h): id -> row, and beside it a
// 32-bit scratch word of the current batch (kNoBatch between batches), in the id's 16-byte
// slot so that a hit costs one cache line.
struct RowSlot {
    int32_t row;  // -1: empty
    uint32_t batch;
};
constexpr uint32_t kNoBatch = 0xffffffffu;
struct RowSlotTraits {
    using Value = RowSlot;
    static constexpr Value empty() { return Value{-1, kNoBatch}; }
    static bool is_empty(const Value& v) { return v.row < 0; }
    // Slots by the hash's low bits: its top bits are the partition's (see hash_for_slot).
    static constexpr bool kHomeFromTopBits = false;
};
using FlatMap = recsdk_ext::FlatMap<RowSlotTraits>;
using recsdk_ext::EvictionOrder;

class IdMapper {
public:
    IdMapper(int64_t capacity, Policy policy, int64_t protect_batches, int64_t ttl_steps,
             std::string name);

    MapResult map(const int64_t* ids, int64_t n, bool insert);
    // Row of each id, -1 for unmapped ids; changes nothing.
    void lookup(const int64_t* ids, int64_t n, int64_t* rows) const;
    // Unmaps the ids; writes the row each id had (-1 if unmapped). Freed rows are handed out
    // again smallest first.
    void remove(const int64_t* ids, int64_t n, int64_t* rows);
    MappingState export_state() const;
    // Replaces the mapping. Validates everything first: on error nothing changes.
    void load_state(const MappingState& state);
    void clear();

    int64_t size() const;
    int64_t capacity() const { return capacity_; }
    int64_t step() const;
    Policy policy() const { return policy_; }
    int64_t protect_batches() const { return protect_batches_; }
    int64_t ttl_steps() const { return ttl_steps_; }
    const std::string& name() const { return name_; }
    int log2_partitions() const { return log2_parts_; }
    size_t memory_bytes() const;

private:
    struct Tables {
        std::vector<FlatMap> maps;  // one per partition of the id hash
        // Per row below `high_water`: its id, and in one record (one cache line per visit)
        // the batches it occurred in (0: free row) and the step of its last batch.
        struct RowMeta {
            int64_t last_used;
            uint32_t count;
            uint32_t reserved;
        };
        std::vector<int64_t> id_of_row;
        std::vector<RowMeta> meta;
        int64_t high_water = 0;
        std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> free_rows;
        EvictionOrder order;
        // Rows by the step last seen, for the TTL of an LFU table (an LRU table's `order` is
        // that already); empty otherwise.
        EvictionOrder recency;
        int64_t step = 0;
        int64_t size = 0;
    };

    uint32_t key_of(uint32_t count) const { return policy_ == Policy::kLFU ? count : 0; }
    bool keeps_recency() const { return ttl_steps_ > 0 && policy_ == Policy::kLFU; }
    const EvictionOrder& recency_order() const { return keeps_recency() ? t_.recency : t_.order; }
    bool expired(int64_t used, int64_t step) const {
        return ttl_steps_ > 0 && step - used > ttl_steps_;
    }
    void find_expired(int64_t step, std::vector<int32_t>& expired) const;
    int64_t take_free_row(Tables& t);
    void find_victims(int64_t needed, int64_t step, std::vector<int32_t>& victims) const;
    [[noreturn]] void throw_full(int64_t new_ids, int64_t evictable) const;
    // De-duplicates partition p of the grouped batch against the partition's hash map;
    // Distinct::value = row, or -1 for ids without one. A task de-duplicates a few partitions
    // in turn; `first_of_task` and `last_of_task` say where p is among them.
    void dedup_partition(DedupWorkspace& w, int64_t p, bool first_of_task, bool last_of_task);
    // Whether partition p's batch has at least as many ids as its hash map has cache lines.
    bool wholly_visited(const DedupWorkspace& w, int64_t p) const;
    // De-duplicates a batch and looks its distinct ids up (in ws_).
    void dedup_and_probe(const int64_t* ids, int64_t n);

    const int64_t capacity_;
    const Policy policy_;
    const int64_t protect_batches_;
    const int64_t ttl_steps_;  // 0: no TTL
    const std::string name_;
    const int log2_parts_;

    mutable std::mutex mu_;
    Tables t_;
    DedupWorkspace ws_;
    std::vector<int64_t> missing_;  // per partition: distinct ids of the batch without a row
};

// Maps the batches of several tables at once, one table per task (the tables' own work then
// runs inline on that task's thread). Each table is atomic on its own: if one fails, the
// tables that succeeded keep their new mappings.
std::vector<MapResult> map_tables(const std::vector<IdMapper*>& mappers,
                                  const std::vector<const int64_t*>& ids,
                                  const std::vector<int64_t>& sizes, bool insert);

}  // namespace hybrid
