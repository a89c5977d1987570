// The host table: int64 id -> row (embedding + optimiser state + bookkeeping), growing
// without a preset size.
//
// Layout. Ids are spread over 2^shard_bits shards by the top bits of their hash. A shard has
// an open-addressing index (id -> row number) and a row store of fixed-size blocks, so rows
// never move once written (growth allocates a block; no reallocation copies gigabytes) and
// memory above the raw row bytes stays small: a 16-byte index slot at 35-70% load, a 16-byte
// row header and at most one partly used block per shard.
//
// Concurrency. A reader-writer lock guards the table: lookups share it, anything that
// inserts, deletes or writes rows holds it exclusively. Inside one batched call the work is
// split by shard over the thread pool, each shard handled by exactly one task, so no finer
// locking is needed and results do not depend on the thread count.
//
// Steps. A training batch advances the table's step; rows remember the step they were last
// seen at and how often they were seen, which drives admission and eviction.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "initializer.h"
#include "recsdk_ext/eviction_order.h"
#include "optimizer.h"

namespace embcache {

struct TableConfig {
    int64_t dim = 0;
    OptimConfig optim;
    InitConfig init;
    // An id gets a row at its admit_threshold-th sighting; earlier sightings read
    // admit_default. Values <= 1 admit on first sight.
    int64_t admit_threshold = 1;
    float admit_default = 0.f;
    // Rows (and pending admission counters) not seen for more than ttl_steps steps are
    // evicted; 0 disables.
    int64_t ttl_steps = 0;
    // When more than `capacity` rows exist, the least-used rows are evicted (fewest
    // sightings, then longest unseen, then smallest id); 0 disables. Both policies read
    // their victims off the front of an exact order each shard keeps (recsdk_ext's
    // EvictionOrder, the one hybrid_torchrec's mapper uses), kept only for a policy set here.
    int64_t capacity = 0;
    // The capacity pass's order: least recently seen first (then smallest id) instead.
    bool capacity_by_recency = false;
    // Eviction is checked every evict_interval training steps.
    int64_t evict_interval = 1;
    int shard_bits = 5;
    // Storage of the embedding part of rows; optimiser state is float32 whatever this is.
    RowDtype dtype = RowDtype::F32;
    // 16-bit rows only: updates are rounded stochastically instead of to nearest even.
    bool stochastic_rounding = false;
};

struct RowHeader {
    int64_t key;
    uint32_t last_seen;  // table step of the last sighting
    uint32_t count;      // sightings, saturating
};

// Result of preparing a batch of ids (see HostTable::prepare).
struct PreparedBatch {
    std::vector<int64_t> unique_ids;  // distinct ids, ascending
    std::vector<int64_t> inverse;     // per input position: index into unique_ids
    std::vector<uint8_t> has_row;     // per unique id: 1 if it has a row (is admitted)
    std::vector<float> rows;          // [unique, dim] embeddings if requested
    std::vector<int64_t> evicted;     // ids removed by the eviction policy at this step
    int64_t step = 0;
};

// A snapshot of rows for export, checkpoints and state_dict.
struct RowDump {
    std::vector<int64_t> keys;
    std::vector<uint32_t> last_seen;
    std::vector<uint32_t> count;
    std::vector<float> rows;  // [n, row_width]
};

struct PendingDump {
    std::vector<int64_t> keys;
    std::vector<uint32_t> count;
    std::vector<uint32_t> last_seen;
};

class RowStore {
public:
    RowStore(int64_t row_width, uint32_t block_rows_log2);
    RowStore(RowStore&&) noexcept = default;
    RowStore& operator=(RowStore&&) noexcept = default;

    uint32_t allocate();
    void release(uint32_t r);
    RowHeader& header(uint32_t r) {
        return *reinterpret_cast<RowHeader*>(block(r) + (r & mask_) * sizeof(RowHeader));
    }
    const RowHeader& header(uint32_t r) const {
        return *reinterpret_cast<const RowHeader*>(block(r) + (r & mask_) * sizeof(RowHeader));
    }
    float* data(uint32_t r) { return payload(block(r)) + static_cast<int64_t>(r & mask_) * width_; }
    const float* data(uint32_t r) const {
        return payload(block(r)) + static_cast<int64_t>(r & mask_) * width_;
    }
    bool live(uint32_t r) const { return (live_[r >> 6] >> (r & 63)) & 1u; }
    bool modified(uint32_t r) const { return (modified_[r >> 6] >> (r & 63)) & 1u; }
    void set_modified(uint32_t r) { modified_[r >> 6] |= uint64_t{1} << (r & 63); }
    // For callers that split work by id rather than by shard: neighbouring rows share a word.
    void set_modified_atomic(uint32_t r) {
        __atomic_fetch_or(&modified_[r >> 6], uint64_t{1} << (r & 63), __ATOMIC_RELAXED);
    }
    void clear_modified();
    // Calls fn(r) for each live row r in row order. fn may release rows (eviction does).
    template <class F>
    void for_each_live(F&& fn) const {
        const uint32_t hw = used_;
        for (uint32_t r = 0; r < hw; ++r) {
            if (live(r))
                fn(r);
        }
    }
    size_t memory_bytes() const;

private:
    struct Free {
        void operator()(char* p) const;
    };
    char* block(uint32_t r) const { return blocks_[r >> shift_].get(); }
    float* payload(char* b) const { return reinterpret_cast<float*>(b + header_bytes_); }
    const float* payload(const char* b) const {
        return reinterpret_cast<const float*>(b + header_bytes_);
    }

    int64_t width_;
    uint32_t shift_;
    uint32_t mask_;
    size_t header_bytes_;
    size_t block_bytes_;
    std::vector<std::unique_ptr<char, Free>> blocks_;
    uint32_t used_ = 0;
    std::vector<uint32_t> free_;
    std::vector<uint64_t> live_;
    std::vector<uint64_t> modified_;
};

struct Shard {
    FlatMap<RowIndexTraits> index;
    RowStore rows;
    FlatMap<PendingTraits> pending;
    std::vector<int64_t> deleted;  // ids deleted since the last checkpoint
    // The eviction orders of the shard's rows: by last_seen (TTL), and by count, then
    // last_seen, then id (capacity). Rows of one step are touched in ascending id order
    // (sort_shard), which is what keeps the id the last tie-break.
    recsdk_ext::EvictionOrder recency;
    recsdk_ext::EvictionOrder frequency;
    uint64_t admitted = 0;  // rows created by training lookups (metrics)

    explicit Shard(RowStore store) : rows(std::move(store)) {}
};

// A checkpoint file's contents, encoded (checkpoint.cpp); write() puts it on disk atomically.
struct CheckpointSnapshot {
    uint64_t id = 0;
    std::string label;  // which table and kind, for errors
    std::vector<char> header;
    std::vector<std::pair<uint32_t, std::vector<char>>> sections;
    uint64_t bytes() const;
    uint64_t write(const std::string& path) const;
};

class HostTable {
public:
    explicit HostTable(const TableConfig& cfg);

    const TableConfig& config() const { return cfg_; }
    int64_t dim() const { return cfg_.dim; }
    // 4-byte units per stored row: the embedding (embedding_units) then the float32 state.
    int64_t row_width() const { return row_width_; }
    int64_t embedding_units() const { return units_; }
    int64_t num_shards() const { return static_cast<int64_t>(shards_.size()); }

    int64_t size() const;          // rows
    int64_t pending_size() const;  // ids seen but not admitted yet
    // Rows created by training lookups and rows removed by the eviction policy, since the
    // table was created (metrics; not part of checkpoints).
    int64_t admitted_total() const;
    int64_t evicted_total() const;
    int64_t step() const;
    int64_t optimizer_step() const;
    size_t memory_bytes() const;

    void set_learning_rate(double lr);
    double learning_rate() const;

    // De-duplicates a batch of ids. For training (`train`): advances the step, counts the
    // sightings, creates rows for newly admitted ids, then applies the eviction policy (never
    // to ids of this batch). Otherwise read-only. With `gather`, rows receives each unique
    // id's embedding (the admission default, or for ids without a row and no admission
    // policy, the id's initial values). With max_unique >= 0, a batch with more distinct ids
    // is refused with CacheCapacityError before anything changes.
    PreparedBatch prepare(const int64_t* ids, int64_t n, bool train, bool gather,
                          int64_t max_unique = -1);

    // Per-position embeddings as float32 (no de-duplication, read-only): the lookup hot path.
    // `out` is [n, dim] and may be a buffer the caller reuses.
    void lookup(const int64_t* ids, int64_t n, float* out) const;

    // Full rows (embedding + state) of ids that must all exist; for swapping into a cache.
    void read_rows(const int64_t* ids, int64_t n, float* out) const;
    // Writes full rows back; ids without a row (evicted meanwhile) are skipped.
    void write_rows(const int64_t* ids, int64_t n, const float* rows);

    // One optimiser step on the rows of `ids` (unique) with gradients [n, dim]; entries with
    // has_row[i] == 0 (may be null) or without a row are skipped. Advances the optimiser step.
    void apply_gradients(const int64_t* ids, int64_t n, const float* grads, const uint8_t* has_row);

    // The same update on rows held elsewhere (a device cache on the host): rows[slot[i]] with
    // `stride` floats between rows. Advances the optimiser step.
    // `ids` (the id of each slot's row) drive stochastic rounding; they may be null otherwise.
    void apply_gradients_to(float* rows, int64_t stride, const int64_t* slots, const int64_t* ids,
                            int64_t n, const float* grads, const uint8_t* mask);
    // Advances and returns the optimiser step, for updates computed outside the core.
    int64_t next_optimizer_step();

    std::vector<uint8_t> contains(const int64_t* ids, int64_t n) const;
    // Removes the given ids; returns how many had a row.
    int64_t erase(const int64_t* ids, int64_t n);
    // Runs the eviction policy now (as at a training step), returns the evicted ids.
    std::vector<int64_t> evict_now();
    void clear();

    RowDump dump(bool only_modified) const;
    PendingDump dump_pending() const;
    // Inserts or overwrites rows (used by state_dict loading and checkpoints).
    void upsert(const RowDump& rows);
    // Sets admission counters of ids without a row (state_dict loading).
    void upsert_pending(const PendingDump& pending);
    void restore_counters(int64_t step, int64_t optimizer_step);

    // Checkpoints (checkpoint.cpp). save() writes atomically and returns the checkpoint id.
    uint64_t save(const std::string& path, bool incremental);
    // The same checkpoint in two halves, for saving while training goes on: snapshot() copies
    // what the file will hold (the rows changed since the last checkpoint if incremental) under
    // the table's lock and makes it the base of the next incremental one; its write() needs no
    // lock. If a write fails, the table's checkpoint id names a file that does not exist, so
    // the next incremental save is refused by the manifest check and a full one is needed.
    std::shared_ptr<CheckpointSnapshot> snapshot(bool incremental);
    // Builds a table from a full checkpoint followed by incrementals, each verified entirely
    // before anything is loaded; the config must match the files' geometry.
    static std::unique_ptr<HostTable> load(const TableConfig& cfg,
                                           const std::vector<std::string>& paths);
    uint64_t checkpoint_id() const;

private:
    friend class CheckpointIO;

    int64_t shard_of(uint64_t h) const {
        return static_cast<int64_t>((h >> shard_shift_) & shard_mask_);
    }
    // Creates the row of `key` (caller holds the exclusive lock and owns the shard).
    uint32_t insert_row(Shard& s, int64_t key, uint64_t h, uint32_t count, uint32_t step);
    void delete_row(Shard& s, int64_t key, uint64_t h, uint32_t r);
    // The eviction orders follow every row change; a bulk load rebuilds them instead.
    bool track_recency() const {
        return cfg_.ttl_steps > 0 || (cfg_.capacity > 0 && cfg_.capacity_by_recency);
    }
    bool track_frequency() const { return cfg_.capacity > 0 && !cfg_.capacity_by_recency; }
    void order_added(Shard& s, uint32_t r);
    void order_seen(Shard& s, uint32_t r);
    void rebuild_orders();
    void fill_missing(int64_t key, float* out) const;
    // One optimiser step on a stored row (embedding in cfg_.dtype, then state).
    void update_stored(const OptimConfig& optim, const StepConstants& k, int64_t step, int64_t key,
                       float* row, const float* grad) const;
    int64_t size_locked() const;

    // The eviction policy (caller holds the exclusive lock), policy by policy.
    struct EvictionCandidate;
    std::vector<int64_t> evict_locked(int64_t step);
    void evict_expired(uint32_t now, bool parallel, std::vector<std::vector<int64_t>>& per_shard);
    void evict_least_used(uint32_t now, bool parallel,
                          std::vector<std::vector<int64_t>>& per_shard);
    std::vector<EvictionCandidate> least_used(uint32_t now, int64_t excess) const;

    // prepare(), phase by phase (host_table.cpp).
    struct ShardPositions;
    struct ShardBatch;
    // Before the lock: group the batch's positions by shard, de-duplicate each shard's ids.
    ShardPositions group_by_shard(const std::vector<uint64_t>& hashes) const;
    std::vector<ShardBatch> dedup_by_shard(const int64_t* ids, const std::vector<uint64_t>& hashes,
                                           const ShardPositions& groups,
                                           std::vector<int64_t>& local_index, bool parallel) const;
    static ShardBatch dedup_shard(const int64_t* ids, const std::vector<uint64_t>& hashes,
                                  const int64_t* first, const int64_t* last,
                                  std::vector<int64_t>& local_index);
    static void sort_shard(ShardBatch& batch, const int64_t* first, const int64_t* last,
                           std::vector<int64_t>& local_index);
    static int64_t count_unique(const std::vector<ShardBatch>& batches, int64_t max_unique);
    // Under the lock (exclusive when `train`): find, count and admit rows.
    void resolve_rows(std::vector<ShardBatch>& batches, bool train, uint32_t now, bool parallel);
    void resolve_shard(Shard& sh, ShardBatch& batch, bool train, uint32_t now);
    uint32_t admit(Shard& sh, int64_t key, uint64_t h, uint32_t occurrences, uint32_t now);
    // Still under the lock: the outputs in ascending id order.
    static std::vector<std::vector<int64_t>> merge_ranks(const std::vector<ShardBatch>& batches);
    void write_unique(const std::vector<ShardBatch>& batches,
                      const std::vector<std::vector<int64_t>>& rank, int64_t total, bool gather,
                      bool parallel, PreparedBatch& out) const;
    void write_inverse(const std::vector<uint64_t>& hashes, const std::vector<int64_t>& local_index,
                       const std::vector<std::vector<int64_t>>& rank, PreparedBatch& out) const;

    TableConfig cfg_;
    int64_t row_width_;
    int64_t units_;
    int shard_shift_;
    uint64_t shard_mask_;
    std::vector<Shard> shards_;
    int64_t step_ = 0;
    int64_t optimizer_step_ = 0;
    int64_t evicted_total_ = 0;
    uint64_t checkpoint_id_ = 0;  // id of the last checkpoint saved or loaded (0: none)
    mutable std::shared_mutex mu_;
};

}  // namespace embcache
