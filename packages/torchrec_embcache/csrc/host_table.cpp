#include "host_table.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <tuple>

#include "common.h"

namespace embcache {

namespace {

// A copy of a field of the table, read under the shared lock.
template <class T>
T read_shared(std::shared_mutex& mu, const T& value) {
    std::shared_lock<std::shared_mutex> lock(mu);
    return value;
}

constexpr uint32_t kNoRow = 0xffffffffu;

uint32_t saturating_add(uint32_t a, uint64_t b) {
    const uint64_t s = static_cast<uint64_t>(a) + b;
    return s > 0xffffffffULL ? 0xffffffffu : static_cast<uint32_t>(s);
}

// Rows per parallel chunk for per-row work of `floats` floats per row: a chunk must be worth
// waking a worker (~1e5 floats). Fanning small batches out is slower than doing them inline,
// and on a busy machine a descheduled worker makes the caller wait for a whole time slice.
int64_t row_grain(int64_t floats) {
    return std::max<int64_t>(64, (int64_t{1} << 17) / std::max<int64_t>(floats, 1));
}

uint32_t step32(int64_t step) {
    return step >= static_cast<int64_t>(0xffffffffu) ? 0xffffffffu : static_cast<uint32_t>(step);
}

size_t round_up(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

// Rows per block: blocks of ~64 KiB bound the unused tail of a shard's last block (one per
// shard) while keeping the block table small for tens of millions of rows.
uint32_t block_rows_log2(int64_t row_width) {
    const size_t per_row = sizeof(RowHeader) + static_cast<size_t>(row_width) * sizeof(float);
    uint32_t log2 = 4;
    while (log2 < 12 && (size_t{2} << log2) * per_row <= (size_t{64} << 10))
        ++log2;
    return log2;
}

}  // namespace

namespace {

// float16 -> float32 for the lookup paths. Decoding with row_format.h's bit manipulation made
// float16 lookups 2.4x slower than float32 ones; GCC's _Float16 converts with the hardware
// (F16C in the x86-64-v3 clone, native on aarch64), vectorised.
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__aarch64__))
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void decode_f16(const uint16_t* __restrict h, float* __restrict out, int64_t dim) {
    const _Float16* f = reinterpret_cast<const _Float16*>(h);
    for (int64_t j = 0; j < dim; ++j)
        out[j] = static_cast<float>(f[j]);
}
#else
void decode_f16(const uint16_t* h, float* out, int64_t dim) {
    for (int64_t j = 0; j < dim; ++j)
        out[j] = f16_to_float(h[j]);
}
#endif

void decode_row(RowDtype t, const float* stored, float* out, int64_t dim) {
    if (t == RowDtype::F16) {
        decode_f16(reinterpret_cast<const uint16_t*>(stored), out, dim);
    } else {
        decode_embedding(t, stored, out, dim);
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// RowStore

void RowStore::Free::operator()(char* p) const {
    std::free(p);
}

RowStore::RowStore(int64_t row_width, uint32_t log2)
    : width_(row_width), shift_(log2), mask_((1u << log2) - 1) {
    const size_t rows = size_t{1} << log2;
    header_bytes_ = round_up(rows * sizeof(RowHeader), 64);
    block_bytes_ = round_up(header_bytes_ + rows * static_cast<size_t>(width_) * sizeof(float), 64);
}

uint32_t RowStore::allocate() {
    uint32_t r;
    if (!free_.empty()) {
        r = free_.back();
        free_.pop_back();
    } else {
        if (used_ == kNoRow - 1)
            throw Error("a shard of the host table is full (2^32 - 2 rows)");
        r = used_++;
        if ((r >> shift_) >= blocks_.size()) {
            void* p = std::aligned_alloc(64, block_bytes_);
            if (p == nullptr)
                throw std::bad_alloc();
            blocks_.emplace_back(static_cast<char*>(p));
        }
        if ((r >> 6) >= live_.size()) {
            live_.push_back(0);
            modified_.push_back(0);
        }
    }
    live_[r >> 6] |= uint64_t{1} << (r & 63);
    return r;
}

void RowStore::release(uint32_t r) {
    live_[r >> 6] &= ~(uint64_t{1} << (r & 63));
    modified_[r >> 6] &= ~(uint64_t{1} << (r & 63));
    free_.push_back(r);
}

void RowStore::clear_modified() {
    std::fill(modified_.begin(), modified_.end(), 0);
}

size_t RowStore::memory_bytes() const {
    return blocks_.size() * block_bytes_ + blocks_.capacity() * sizeof(void*) +
           free_.capacity() * sizeof(uint32_t) + (live_.capacity() + modified_.capacity()) * 8;
}

// ---------------------------------------------------------------------------------------
// HostTable

HostTable::HostTable(const TableConfig& cfg) : cfg_(cfg) {
    if (cfg.dim <= 0)
        throw std::invalid_argument("embedding_dim must be positive, got " +
                                    std::to_string(cfg.dim));
    if (cfg.shard_bits < 0 || cfg.shard_bits > 10) {
        throw std::invalid_argument("shard_bits must be in [0, 10], got " +
                                    std::to_string(cfg.shard_bits));
    }
    if (cfg.evict_interval < 1)
        throw std::invalid_argument("eviction interval must be >= 1");
    if (cfg.ttl_steps < 0 || cfg.capacity < 0) {
        throw std::invalid_argument("ttl_steps and capacity must be >= 0 (0 disables)");
    }
    if (cfg.stochastic_rounding && cfg.dtype == RowDtype::F32) {
        throw std::invalid_argument(
            "stochastic rounding applies to float16 or bfloat16 rows, not float32 ones");
    }
    units_ = embcache::embedding_units(cfg.dtype, cfg.dim);
    row_width_ = units_ + state_width(cfg.optim.kind, cfg.dim);
    // A shift by 64 is undefined: one shard uses shift 63 and mask 0.
    shard_shift_ = cfg.shard_bits == 0 ? 63 : 64 - cfg.shard_bits;
    shard_mask_ = (uint64_t{1} << cfg.shard_bits) - 1;
    const uint32_t log2 = block_rows_log2(row_width_);
    const int n = 1 << cfg.shard_bits;
    shards_.reserve(n);
    for (int i = 0; i < n; ++i)
        shards_.emplace_back(RowStore(row_width_, log2));
}

int64_t HostTable::size() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return size_locked();
}

int64_t HostTable::size_locked() const {
    int64_t n = 0;
    for (const auto& s : shards_)
        n += s.index.size();
    return n;
}

int64_t HostTable::pending_size() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    int64_t n = 0;
    for (const auto& s : shards_)
        n += s.pending.size();
    return n;
}

int64_t HostTable::admitted_total() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    uint64_t n = 0;
    for (const auto& s : shards_)
        n += s.admitted;
    return static_cast<int64_t>(n);
}

int64_t HostTable::evicted_total() const {
    return read_shared(mu_, evicted_total_);
}

int64_t HostTable::step() const {
    return read_shared(mu_, step_);
}

int64_t HostTable::optimizer_step() const {
    return read_shared(mu_, optimizer_step_);
}

uint64_t HostTable::checkpoint_id() const {
    return read_shared(mu_, checkpoint_id_);
}

size_t HostTable::memory_bytes() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    size_t b = sizeof(*this) + shards_.capacity() * sizeof(Shard);
    for (const auto& s : shards_) {
        b += s.index.memory_bytes() + s.rows.memory_bytes() + s.pending.memory_bytes() +
             s.deleted.capacity() * sizeof(int64_t) + s.recency.memory_bytes() +
             s.frequency.memory_bytes();
    }
    return b;
}

void HostTable::set_learning_rate(double lr) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    cfg_.optim.lr = lr;
}

double HostTable::learning_rate() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return cfg_.optim.lr;
}

uint32_t HostTable::insert_row(Shard& s, int64_t key, uint64_t h, uint32_t count, uint32_t step) {
    const uint32_t r = s.rows.allocate();
    RowHeader& hdr = s.rows.header(r);
    hdr.key = key;
    hdr.last_seen = step;
    hdr.count = count;
    float* data = s.rows.data(r);
    if (cfg_.dtype == RowDtype::F32) {
        initialize_row(cfg_.init, key, data, cfg_.dim);
    } else {
        thread_local std::vector<float> values;
        values.resize(cfg_.dim);
        initialize_row(cfg_.init, key, values.data(), cfg_.dim);
        encode_embedding(cfg_.dtype, values.data(), data, cfg_.dim);
    }
    init_state(cfg_.optim, data + units_, cfg_.dim);
    s.rows.set_modified(r);
    bool inserted = false;
    *s.index.find_or_insert(key, h, r, &inserted) = r;
    order_added(s, r);
    return r;
}

void HostTable::delete_row(Shard& s, int64_t key, uint64_t h, uint32_t r) {
    if (s.recency.contains(static_cast<int32_t>(r)))
        s.recency.unlink(static_cast<int32_t>(r));
    if (s.frequency.contains(static_cast<int32_t>(r)))
        s.frequency.unlink(static_cast<int32_t>(r));
    s.index.erase(key, h);
    s.rows.release(r);
    // Deletions matter only to the next incremental checkpoint, which needs a full one first.
    if (checkpoint_id_ != 0)
        s.deleted.push_back(key);
}

// An id without a row reads what its row would hold: values rounded to the row dtype.
void HostTable::fill_missing(int64_t key, float* out) const {
    if (cfg_.admit_threshold > 1) {
        std::fill(out, out + cfg_.dim, cfg_.admit_default);
    } else {
        initialize_row(cfg_.init, key, out, cfg_.dim);
    }
    if (cfg_.dtype != RowDtype::F32) {
        for (int64_t j = 0; j < cfg_.dim; ++j)
            out[j] = decode_16(cfg_.dtype, round_float_to_16(cfg_.dtype, out[j]));
    }
}

void HostTable::update_stored(const OptimConfig& optim, const StepConstants& k, int64_t step,
                              int64_t key, float* row, const float* grad) const {
    if (cfg_.dtype == RowDtype::F32) {
        update_row(optim, k, row, grad, cfg_.dim);
        return;
    }
    const uint64_t sr = cfg_.stochastic_rounding ? stochastic_stream(cfg_.init.seed, key, step) : 0;
    update_row_16(optim, k, cfg_.dtype, row, grad, cfg_.dim, units_, sr);
}

// prepare() and its phases, in the order prepare() runs them.

// A shard's positions in the batch are order[begin[s], begin[s + 1]).
struct HostTable::ShardPositions {
    std::vector<int64_t> begin;
    std::vector<int64_t> order;
};

// The distinct ids one shard contributes to a batch; sorted ascending by sort_shard, with
// rows and has_row filled in by resolve_shard.
struct HostTable::ShardBatch {
    std::vector<int64_t> keys;
    std::vector<uint64_t> hashes;
    std::vector<uint32_t> occurrences;
    std::vector<uint32_t> rows;
    std::vector<uint8_t> has_row;
};

PreparedBatch HostTable::prepare(const int64_t* ids, int64_t n, bool train, bool gather,
                                 int64_t max_unique) {
    // Below this many ids a batch is processed on the calling thread.
    const bool parallel = n >= (1 << 13);

    // Everything that only reads the batch runs before the lock is taken. Each position is
    // hashed once: the hash picks the shard and is reused for every probe.
    std::vector<uint64_t> hashes(n);
    parallel_for(0, n, 1 << 14, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
            hashes[i] = id_hash(ids[i]);
    });
    const ShardPositions groups = group_by_shard(hashes);
    std::vector<int64_t> local_index(n);  // per position: index into its shard's ShardBatch
    std::vector<ShardBatch> batches = dedup_by_shard(ids, hashes, groups, local_index, parallel);
    const int64_t total = count_unique(batches, max_unique);

    // The lock is held from resolving the rows until the eviction, so that the returned rows,
    // has_row and step describe one state of the table.
    std::unique_lock<std::shared_mutex> wlock(mu_, std::defer_lock);
    std::shared_lock<std::shared_mutex> rlock(mu_, std::defer_lock);
    if (train) {
        wlock.lock();
        ++step_;
    } else {
        rlock.lock();
    }
    PreparedBatch out;
    out.step = step_;
    resolve_rows(batches, train, step32(step_), parallel);
    const std::vector<std::vector<int64_t>> rank = merge_ranks(batches);
    write_unique(batches, rank, total, gather, parallel, out);
    write_inverse(hashes, local_index, rank, out);
    if (train)
        out.evicted = evict_locked(step_);
    return out;
}

// A counting sort of positions by shard, in chunks so that it parallelises.
HostTable::ShardPositions HostTable::group_by_shard(const std::vector<uint64_t>& hashes) const {
    const int64_t n = static_cast<int64_t>(hashes.size());
    const int64_t S = num_shards();
    const int64_t chunk = 1 << 15;
    const int64_t num_chunks = std::max<int64_t>(1, (n + chunk - 1) / chunk);
    std::vector<int64_t> counts(num_chunks * S, 0);
    parallel_tasks(num_chunks, [&](int64_t c) {
        int64_t* cnt = &counts[c * S];
        const int64_t hi = std::min(n, (c + 1) * chunk);
        for (int64_t i = c * chunk; i < hi; ++i)
            ++cnt[shard_of(hashes[i])];
    });
    // Each chunk's count becomes the first slot it writes within its shard's run.
    ShardPositions g;
    g.begin.assign(S + 1, 0);
    int64_t acc = 0;
    for (int64_t s = 0; s < S; ++s) {
        g.begin[s] = acc;
        for (int64_t c = 0; c < num_chunks; ++c) {
            const int64_t v = counts[c * S + s];
            counts[c * S + s] = acc;
            acc += v;
        }
    }
    g.begin[S] = acc;
    g.order.resize(n);
    parallel_tasks(num_chunks, [&](int64_t c) {
        int64_t* pos = &counts[c * S];
        const int64_t hi = std::min(n, (c + 1) * chunk);
        for (int64_t i = c * chunk; i < hi; ++i)
            g.order[pos[shard_of(hashes[i])]++] = i;
    });
    return g;
}

// Read-only on the table, so it runs before the lock is taken.
std::vector<HostTable::ShardBatch> HostTable::dedup_by_shard(const int64_t* ids,
                                                             const std::vector<uint64_t>& hashes,
                                                             const ShardPositions& groups,
                                                             std::vector<int64_t>& local_index,
                                                             bool parallel) const {
    std::vector<ShardBatch> batches(num_shards());
    parallel_tasks(
        num_shards(),
        [&](int64_t s) {
            const int64_t b = groups.begin[s], e = groups.begin[s + 1];
            if (b == e)
                return;
            const int64_t* first = groups.order.data() + b;
            const int64_t* last = groups.order.data() + e;
            batches[s] = dedup_shard(ids, hashes, first, last, local_index);
            sort_shard(batches[s], first, last, local_index);
        },
        parallel);
    return batches;
}

// Distinct ids in order of first sighting; local_index gets each position's index among them.
HostTable::ShardBatch HostTable::dedup_shard(const int64_t* ids,
                                             const std::vector<uint64_t>& hashes,
                                             const int64_t* first, const int64_t* last,
                                             std::vector<int64_t>& local_index) {
    ShardBatch L;
    FlatMap<PositionTraits> seen;
    seen.reserve(last - first);
    for (const int64_t* p = first; p != last; ++p) {
        const int64_t i = *p;
        bool inserted = false;
        int64_t* slot =
            seen.find_or_insert(ids[i], hashes[i], static_cast<int64_t>(L.keys.size()), &inserted);
        if (inserted) {
            L.keys.push_back(ids[i]);
            L.hashes.push_back(hashes[i]);
            L.occurrences.push_back(0);
        }
        ++L.occurrences[*slot];
        local_index[i] = *slot;
    }
    return L;
}

// Renumbers the shard's distinct ids in ascending order (merge_ranks says why the output is
// sorted) and the shard's positions with them.
void HostTable::sort_shard(ShardBatch& L, const int64_t* first, const int64_t* last,
                           std::vector<int64_t>& local_index) {
    const size_t u = L.keys.size();
    std::vector<uint32_t> perm(u);
    std::iota(perm.begin(), perm.end(), 0u);
    std::sort(perm.begin(), perm.end(),
              [&](uint32_t a, uint32_t b) { return L.keys[a] < L.keys[b]; });
    std::vector<int64_t> new_of(u);
    ShardBatch sorted;
    sorted.keys.resize(u);
    sorted.hashes.resize(u);
    sorted.occurrences.resize(u);
    for (size_t j = 0; j < u; ++j) {
        new_of[perm[j]] = static_cast<int64_t>(j);
        sorted.keys[j] = L.keys[perm[j]];
        sorted.hashes[j] = L.hashes[perm[j]];
        sorted.occurrences[j] = L.occurrences[perm[j]];
    }
    L = std::move(sorted);
    for (const int64_t* p = first; p != last; ++p)
        local_index[*p] = new_of[local_index[*p]];
}

// Refuses an oversized batch before anything changes.
int64_t HostTable::count_unique(const std::vector<ShardBatch>& batches, int64_t max_unique) {
    int64_t total = 0;
    for (const ShardBatch& b : batches)
        total += static_cast<int64_t>(b.keys.size());
    if (max_unique >= 0 && total > max_unique) {
        throw CacheCapacityError("the batch has " + std::to_string(total) +
                                 " distinct ids but the device cache has only " +
                                 std::to_string(max_unique) +
                                 " usable slots; give the cache more slots or use smaller batches");
    }
    return total;
}

// Each shard is handled by one task, so the shards' rows and maps need no finer locking.
void HostTable::resolve_rows(std::vector<ShardBatch>& batches, bool train, uint32_t now,
                             bool parallel) {
    parallel_tasks(
        num_shards(),
        [&](int64_t s) {
            if (!batches[s].keys.empty())
                resolve_shard(shards_[s], batches[s], train, now);
        },
        parallel);
}

// Training counts the sightings of existing rows and admits (creates) rows for new ids.
void HostTable::resolve_shard(Shard& sh, ShardBatch& L, bool train, uint32_t now) {
    const size_t u = L.keys.size();
    L.rows.assign(u, kNoRow);
    L.has_row.assign(u, 0);
    for (size_t j = 0; j < u; ++j) {
        const uint32_t* found = sh.index.find(L.keys[j], L.hashes[j]);
        if (found != nullptr) {
            L.rows[j] = *found;
            L.has_row[j] = 1;
            if (train) {
                RowHeader& hdr = sh.rows.header(*found);
                hdr.last_seen = now;
                hdr.count = saturating_add(hdr.count, L.occurrences[j]);
                sh.rows.set_modified(*found);
                order_seen(sh, *found);
            }
        } else if (train) {
            const uint32_t r = admit(sh, L.keys[j], L.hashes[j], L.occurrences[j], now);
            if (r == kNoRow)
                continue;
            L.rows[j] = r;
            L.has_row[j] = 1;
        }
    }
}

// A training sighting of an id without a row: the new row, or kNoRow while the id's
// sightings (counted in the shard's pending map) are below the admission threshold.
uint32_t HostTable::admit(Shard& sh, int64_t key, uint64_t h, uint32_t occurrences, uint32_t now) {
    uint32_t count = occurrences;
    if (cfg_.admit_threshold > 1) {
        const uint32_t threshold =
            static_cast<uint32_t>(std::min<int64_t>(cfg_.admit_threshold, 0xffffffffLL));
        bool inserted = false;
        PendingTraits::Value* p =
            sh.pending.find_or_insert(key, h, PendingTraits::Value{1, now}, &inserted);
        if (!inserted)
            p->count = saturating_add(p->count, occurrences);
        else
            p->count = occurrences;
        p->last_seen = now;
        if (p->count < threshold)
            return kNoRow;
        count = p->count;
        sh.pending.erase(key, h);
    }
    ++sh.admitted;
    return insert_row(sh, key, h, count, now);
}

// Output position of each shard's distinct ids: ascending id order, like torch.unique.
// The order is what torch's embedding_bag backward sorts by when it accumulates the
// gradient of a repeated row, so numbering rows in id order makes the accumulation -
// hence SGD results - bit-identical to an nn.EmbeddingBag whose rows are in id order. The
// shards' sorted runs are merged here (a shard owns a hash range, not a value range).
std::vector<std::vector<int64_t>> HostTable::merge_ranks(const std::vector<ShardBatch>& batches) {
    const int64_t S = static_cast<int64_t>(batches.size());
    std::vector<std::vector<int64_t>> rank(S);
    using Head = std::pair<int64_t, int64_t>;  // (id, shard)
    std::vector<Head> heap;
    std::vector<size_t> next(S, 0);
    for (int64_t s = 0; s < S; ++s) {
        rank[s].resize(batches[s].keys.size());
        if (!batches[s].keys.empty())
            heap.emplace_back(batches[s].keys[0], s);
    }
    auto later = [](const Head& a, const Head& b) { return a.first > b.first; };
    std::make_heap(heap.begin(), heap.end(), later);
    int64_t r = 0;
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const int64_t s = heap.back().second;
        heap.pop_back();
        rank[s][next[s]] = r++;
        if (++next[s] < batches[s].keys.size()) {
            heap.emplace_back(batches[s].keys[next[s]], s);
            std::push_heap(heap.begin(), heap.end(), later);
        }
    }
    return rank;
}

// unique_ids, has_row and (with `gather`) the embeddings, in rank order.
void HostTable::write_unique(const std::vector<ShardBatch>& batches,
                             const std::vector<std::vector<int64_t>>& rank, int64_t total,
                             bool gather, bool parallel, PreparedBatch& out) const {
    const int64_t dim = cfg_.dim;
    out.unique_ids.resize(total);
    out.has_row.resize(total);
    if (gather)
        out.rows.resize(static_cast<size_t>(total) * dim);
    parallel_tasks(
        num_shards(),
        [&](int64_t s) {
            const ShardBatch& L = batches[s];
            const Shard& sh = shards_[s];
            for (size_t j = 0; j < L.keys.size(); ++j) {
                const int64_t g = rank[s][j];
                out.unique_ids[g] = L.keys[j];
                out.has_row[g] = L.has_row[j];
                if (!gather)
                    continue;
                float* dst = out.rows.data() + g * dim;
                if (L.has_row[j]) {
                    decode_row(cfg_.dtype, sh.rows.data(L.rows[j]), dst, dim);
                } else {
                    fill_missing(L.keys[j], dst);
                }
            }
        },
        parallel);
}

void HostTable::write_inverse(const std::vector<uint64_t>& hashes,
                              const std::vector<int64_t>& local_index,
                              const std::vector<std::vector<int64_t>>& rank,
                              PreparedBatch& out) const {
    const int64_t n = static_cast<int64_t>(hashes.size());
    out.inverse.resize(n);
    parallel_for(0, n, 1 << 15, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
            out.inverse[i] = rank[shard_of(hashes[i])][local_index[i]];
    });
}

void HostTable::lookup(const int64_t* ids, int64_t n, float* out) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    const int64_t dim = cfg_.dim;
    const RowDtype dtype = cfg_.dtype;
    const size_t row_bytes = dim * sizeof(float);
    const size_t stored_bytes = units_ * sizeof(float);
    // Plain stores: streaming (non-temporal) stores of the output measured slower on the
    // development host (bench_embcache.py A/B: 0.77-0.82x of index_select, against
    // 0.86-1.01x with plain stores).
    parallel_for(0, n, 1 << 12, [&](int64_t lo, int64_t hi) {
        // Three-stage software pipeline: hash and prefetch the index slot kAhead*2 positions
        // ahead, probe and prefetch the row kAhead ahead, copy now. Independent cache misses of
        // several ids then overlap instead of being paid one after another.
        constexpr int64_t kAhead = 8;
        constexpr int64_t kRing = 32;  // power of two > 2 * kAhead
        uint64_t ring_hash[kRing];
        const float* ring_row[kRing];
        auto stage_hash = [&](int64_t i) {
            const uint64_t h = id_hash(ids[i]);
            ring_hash[i & (kRing - 1)] = h;
            __builtin_prefetch(shards_[shard_of(h)].index.probe_address(h));
        };
        auto stage_probe = [&](int64_t i) {
            const uint64_t h = ring_hash[i & (kRing - 1)];
            const Shard& sh = shards_[shard_of(h)];
            const uint32_t* r = sh.index.find(ids[i], h);
            const float* row = r == nullptr ? nullptr : sh.rows.data(*r);
            ring_row[i & (kRing - 1)] = row;
            if (row != nullptr) {
                for (size_t off = 0; off < stored_bytes; off += 64) {
                    __builtin_prefetch(reinterpret_cast<const char*>(row) + off);
                }
            }
        };
        for (int64_t i = lo; i < std::min(hi, lo + 2 * kAhead); ++i)
            stage_hash(i);
        for (int64_t i = lo; i < std::min(hi, lo + kAhead); ++i)
            stage_probe(i);
        for (int64_t i = lo; i < hi; ++i) {
            if (i + 2 * kAhead < hi)
                stage_hash(i + 2 * kAhead);
            if (i + kAhead < hi)
                stage_probe(i + kAhead);
            const float* row = ring_row[i & (kRing - 1)];
            if (row == nullptr) {
                fill_missing(ids[i], out + i * dim);
            } else if (dtype == RowDtype::F32) {
                std::memcpy(out + i * dim, row, row_bytes);
            } else {
                decode_row(dtype, row, out + i * dim, dim);
            }
        }
    });
}

void HostTable::read_rows(const int64_t* ids, int64_t n, float* out) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    const int64_t w = row_width_;
    parallel_for(0, n, row_grain(w), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            const uint64_t h = id_hash(ids[i]);
            const Shard& sh = shards_[shard_of(h)];
            const uint32_t* r = sh.index.find(ids[i], h);
            if (r == nullptr) {
                throw StateError("internal error: id " + std::to_string(ids[i]) +
                                 " is to be swapped into the device cache but has no host row");
            }
            std::memcpy(out + i * w, sh.rows.data(*r), w * sizeof(float));
        }
    });
}

void HostTable::write_rows(const int64_t* ids, int64_t n, const float* rows) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const int64_t w = row_width_;
    parallel_for(0, n, row_grain(w), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            const uint64_t h = id_hash(ids[i]);
            Shard& sh = shards_[shard_of(h)];
            const uint32_t* r = sh.index.find(ids[i], h);
            if (r == nullptr)
                continue;
            std::memcpy(sh.rows.data(*r), rows + i * w, w * sizeof(float));
            sh.rows.set_modified_atomic(*r);
        }
    });
}

void HostTable::apply_gradients(const int64_t* ids, int64_t n, const float* grads,
                                const uint8_t* has_row) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const int64_t step = ++optimizer_step_;
    const StepConstants k = step_constants(cfg_.optim, step);
    const int64_t dim = cfg_.dim;
    parallel_for(0, n, row_grain(row_width_), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            if (has_row != nullptr && has_row[i] == 0)
                continue;
            const uint64_t h = id_hash(ids[i]);
            Shard& sh = shards_[shard_of(h)];
            const uint32_t* r = sh.index.find(ids[i], h);
            if (r == nullptr)
                continue;  // evicted by a plan computed ahead of this update
            update_stored(cfg_.optim, k, step, ids[i], sh.rows.data(*r), grads + i * dim);
            sh.rows.set_modified_atomic(*r);
        }
    });
}

void HostTable::apply_gradients_to(float* rows, int64_t stride, const int64_t* slots,
                                   const int64_t* ids, int64_t n, const float* grads,
                                   const uint8_t* mask) {
    if (ids == nullptr && cfg_.stochastic_rounding)
        throw std::invalid_argument("stochastic rounding needs the ids of the updated rows");
    StepConstants k;
    OptimConfig optim;
    int64_t step;
    {
        std::unique_lock<std::shared_mutex> lock(mu_);
        step = ++optimizer_step_;
        k = step_constants(cfg_.optim, step);
        optim = cfg_.optim;
    }
    const int64_t dim = cfg_.dim;
    parallel_for(0, n, row_grain(row_width_), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            if (mask != nullptr && mask[i] == 0)
                continue;
            update_stored(optim, k, step, ids == nullptr ? 0 : ids[i], rows + slots[i] * stride,
                          grads + i * dim);
        }
    });
}

int64_t HostTable::next_optimizer_step() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    return ++optimizer_step_;
}

std::vector<uint8_t> HostTable::contains(const int64_t* ids, int64_t n) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<uint8_t> out(n);
    parallel_for(0, n, 1 << 12, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            const uint64_t h = id_hash(ids[i]);
            out[i] = shards_[shard_of(h)].index.find(ids[i], h) != nullptr;
        }
    });
    return out;
}

int64_t HostTable::erase(const int64_t* ids, int64_t n) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    int64_t erased = 0;
    for (int64_t i = 0; i < n; ++i) {
        const uint64_t h = id_hash(ids[i]);
        Shard& sh = shards_[shard_of(h)];
        const uint32_t* r = sh.index.find(ids[i], h);
        if (r != nullptr) {
            delete_row(sh, ids[i], h, *r);
            ++erased;
        }
        sh.pending.erase(ids[i], h);
    }
    return erased;
}

std::vector<int64_t> HostTable::evict_now() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    TableConfig saved = cfg_;
    cfg_.evict_interval = 1;  // "now" ignores the interval
    std::vector<int64_t> out;
    try {
        out = evict_locked(step_);
    } catch (...) {
        cfg_ = saved;
        throw;
    }
    cfg_ = saved;
    return out;
}

// A row the capacity policy may evict, with what orders it among the others.
struct HostTable::EvictionCandidate {
    uint32_t count;
    uint32_t last_seen;
    int64_t key;
    int64_t shard;
    uint32_t row;
};

// A new row has the largest last_seen of its shard (training) or is placed by a rebuild.
void HostTable::order_added(Shard& s, uint32_t r) {
    const RowHeader& hdr = s.rows.header(r);
    const auto row = static_cast<int32_t>(r);
    if (track_recency()) {
        s.recency.ensure_rows(static_cast<int64_t>(r) + 1);
        s.recency.add_last(row, hdr.last_seen);
    }
    if (track_frequency()) {
        s.frequency.ensure_rows(static_cast<int64_t>(r) + 1);
        s.frequency.insert(row, hdr.count);
    }
}

void HostTable::order_seen(Shard& s, uint32_t r) {
    const RowHeader& hdr = s.rows.header(r);
    if (track_recency())
        s.recency.move_last(static_cast<int32_t>(r), hdr.last_seen);
    if (track_frequency())
        s.frequency.touch(static_cast<int32_t>(r), hdr.count);
}

// After rows were written wholesale (state_dict, checkpoint): sort each shard's rows once.
void HostTable::rebuild_orders() {
    if (!track_recency() && !track_frequency())
        return;
    parallel_tasks(num_shards(), [&](int64_t si) {
        Shard& s = shards_[si];
        std::vector<EvictionCandidate> rows;
        s.rows.for_each_live([&](uint32_t r) {
            const RowHeader& hdr = s.rows.header(r);
            rows.push_back({hdr.count, hdr.last_seen, hdr.key, si, r});
        });
        uint32_t high = 0;
        for (const EvictionCandidate& c : rows)
            high = std::max(high, c.row + 1);
        if (track_recency()) {
            std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
                return std::tie(a.last_seen, a.key) < std::tie(b.last_seen, b.key);
            });
            s.recency.clear();
            s.recency.ensure_rows(high);
            for (const EvictionCandidate& c : rows)
                s.recency.add_last(static_cast<int32_t>(c.row), c.last_seen);
        }
        if (track_frequency()) {
            std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
                return std::tie(a.count, a.last_seen, a.key) <
                       std::tie(b.count, b.last_seen, b.key);
            });
            s.frequency.clear();
            s.frequency.ensure_rows(high);
            for (const EvictionCandidate& c : rows)
                s.frequency.add_last(static_cast<int32_t>(c.row), c.count);
        }
    });
}

std::vector<int64_t> HostTable::evict_locked(int64_t step) {
    std::vector<int64_t> evicted;
    if (step % cfg_.evict_interval != 0)
        return evicted;
    const uint32_t now = step32(step);
    // Small tables: the work (the evicted rows, the TTL pass's scan of admission counters)
    // costs less than waking workers.
    const bool parallel = size_locked() >= (1 << 15);
    std::vector<std::vector<int64_t>> per_shard(num_shards());
    if (cfg_.ttl_steps > 0)
        evict_expired(now, parallel, per_shard);
    if (cfg_.capacity > 0)
        evict_least_used(now, parallel, per_shard);
    for (auto& v : per_shard)
        evicted.insert(evicted.end(), v.begin(), v.end());
    evicted_total_ += static_cast<int64_t>(evicted.size());
    return evicted;
}

// Rows and pending admission counters not seen for more than ttl_steps steps: the rows are
// the front of the shard's recency order.
void HostTable::evict_expired(uint32_t now, bool parallel,
                              std::vector<std::vector<int64_t>>& per_shard) {
    const int64_t ttl = cfg_.ttl_steps;
    auto expired = [&](uint32_t last_seen) {
        return static_cast<int64_t>(now) - static_cast<int64_t>(last_seen) > ttl;
    };
    using recsdk_ext::EvictionOrder;
    parallel_tasks(
        num_shards(),
        [&](int64_t s) {
            Shard& sh = shards_[s];
            std::vector<uint32_t> rows;
            for (int32_t b = sh.recency.first_bucket();
                 b != EvictionOrder::kNone && expired(sh.recency.bucket_key(b));
                 b = sh.recency.next_bucket(b)) {
                for (int32_t r = sh.recency.bucket_head(b); r != EvictionOrder::kNone;
                     r = sh.recency.next_row(r))
                    rows.push_back(static_cast<uint32_t>(r));
            }
            for (uint32_t r : rows) {
                const int64_t key = sh.rows.header(r).key;
                delete_row(sh, key, id_hash(key), r);
                per_shard[s].push_back(key);
            }
            std::vector<int64_t> stale;
            sh.pending.for_each([&](int64_t key, const PendingTraits::Value& v) {
                if (expired(v.last_seen))
                    stale.push_back(key);
            });
            for (int64_t key : stale)
                sh.pending.erase(key, id_hash(key));
        },
        parallel);
}

// Rows beyond `capacity`, least used first: fewest sightings, then longest unseen, then
// smallest id (LRU: longest unseen, then smallest id), over rows not seen at this step (the
// current batch must keep its rows).
void HostTable::evict_least_used(uint32_t now, bool parallel,
                                 std::vector<std::vector<int64_t>>& per_shard) {
    const int64_t rows = size_locked();  // after the TTL pass
    if (rows <= cfg_.capacity)
        return;
    const std::vector<EvictionCandidate> victims = least_used(now, rows - cfg_.capacity);
    const int64_t S = num_shards();
    std::vector<std::vector<EvictionCandidate>> by_shard(S);
    for (const EvictionCandidate& c : victims)
        by_shard[c.shard].push_back(c);
    parallel_tasks(
        S,
        [&](int64_t s) {
            for (const EvictionCandidate& c : by_shard[s]) {
                delete_row(shards_[s], c.key, id_hash(c.key), c.row);
                per_shard[s].push_back(c.key);
            }
        },
        parallel);
}

// The first `excess` rows of the merged shard orders, skipping rows seen at `now` (each
// bucket's tail, as a bucket is in last_seen order). A heap holds each shard's next row.
// LRU ranks by (last_seen, id) alone: a zero count stands in for every row.
std::vector<HostTable::EvictionCandidate> HostTable::least_used(uint32_t now,
                                                                int64_t excess) const {
    using recsdk_ext::EvictionOrder;
    struct Cursor {
        EvictionCandidate c;
        int32_t bucket;
    };
    const bool lru = cfg_.capacity_by_recency;
    auto order_of = [&](int64_t s) -> const EvictionOrder& {
        return lru ? shards_[s].recency : shards_[s].frequency;
    };
    auto settle = [&](int64_t s, int32_t b, int32_t r, Cursor& out) {
        const EvictionOrder& o = order_of(s);
        const RowStore& rows = shards_[s].rows;
        while (b != EvictionOrder::kNone) {
            if (r != EvictionOrder::kNone &&
                rows.header(static_cast<uint32_t>(r)).last_seen != now) {
                const RowHeader& hdr = rows.header(static_cast<uint32_t>(r));
                const uint32_t count = lru ? 0u : hdr.count;
                out = {{count, hdr.last_seen, hdr.key, s, static_cast<uint32_t>(r)}, b};
                return true;
            }
            b = o.next_bucket(b);
            r = b == EvictionOrder::kNone ? EvictionOrder::kNone : o.bucket_head(b);
        }
        return false;
    };
    auto later = [](const Cursor& a, const Cursor& b) {
        return std::tie(a.c.count, a.c.last_seen, a.c.key) >
               std::tie(b.c.count, b.c.last_seen, b.c.key);
    };
    std::vector<Cursor> heap;
    for (int64_t s = 0; s < num_shards(); ++s) {
        const EvictionOrder& o = order_of(s);
        const int32_t b = o.first_bucket();
        Cursor c;
        if (b != EvictionOrder::kNone && settle(s, b, o.bucket_head(b), c))
            heap.push_back(c);
    }
    std::make_heap(heap.begin(), heap.end(), later);
    std::vector<EvictionCandidate> victims;
    while (static_cast<int64_t>(victims.size()) < excess && !heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        Cursor cur = heap.back();
        heap.pop_back();
        victims.push_back(cur.c);
        const EvictionOrder& o = order_of(cur.c.shard);
        Cursor next;
        if (settle(cur.c.shard, cur.bucket, o.next_row(static_cast<int32_t>(cur.c.row)), next)) {
            heap.push_back(next);
            std::push_heap(heap.begin(), heap.end(), later);
        }
    }
    return victims;
}

void HostTable::clear() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const uint32_t log2 = block_rows_log2(row_width_);
    std::vector<Shard> fresh;
    fresh.reserve(shards_.size());
    for (size_t i = 0; i < shards_.size(); ++i)
        fresh.emplace_back(RowStore(row_width_, log2));
    shards_.swap(fresh);
    step_ = 0;
    optimizer_step_ = 0;
    evicted_total_ = 0;
    checkpoint_id_ = 0;
}

RowDump HostTable::dump(bool only_modified) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    const int64_t S = num_shards();
    std::vector<std::vector<std::pair<int64_t, uint32_t>>> sel(S);
    parallel_tasks(S, [&](int64_t s) {
        const RowStore& rows = shards_[s].rows;
        rows.for_each_live([&](uint32_t r) {
            if (!only_modified || rows.modified(r))
                sel[s].emplace_back(rows.header(r).key, r);
        });
    });
    // Sorted by id, so that a dump does not depend on hashing or insertion history.
    std::vector<std::tuple<int64_t, int64_t, uint32_t>> all;
    for (int64_t s = 0; s < S; ++s) {
        for (const auto& [key, r] : sel[s])
            all.emplace_back(key, s, r);
    }
    std::sort(all.begin(), all.end());
    RowDump d;
    const int64_t n = static_cast<int64_t>(all.size());
    d.keys.resize(n);
    d.last_seen.resize(n);
    d.count.resize(n);
    d.rows.resize(static_cast<size_t>(n) * row_width_);
    parallel_for(0, n, 1 << 12, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            const auto& [key, s, r] = all[i];
            const RowHeader& hdr = shards_[s].rows.header(r);
            d.keys[i] = key;
            d.last_seen[i] = hdr.last_seen;
            d.count[i] = hdr.count;
            std::memcpy(d.rows.data() + i * row_width_, shards_[s].rows.data(r),
                        row_width_ * sizeof(float));
        }
    });
    return d;
}

PendingDump HostTable::dump_pending() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<std::tuple<int64_t, uint32_t, uint32_t>> all;
    for (const auto& sh : shards_) {
        sh.pending.for_each([&](int64_t key, const PendingTraits::Value& v) {
            all.emplace_back(key, v.count, v.last_seen);
        });
    }
    std::sort(all.begin(), all.end());
    PendingDump d;
    for (const auto& [key, count, last_seen] : all) {
        d.keys.push_back(key);
        d.count.push_back(count);
        d.last_seen.push_back(last_seen);
    }
    return d;
}

void HostTable::upsert(const RowDump& d) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const int64_t n = static_cast<int64_t>(d.keys.size());
    for (int64_t i = 0; i < n; ++i) {
        const int64_t key = d.keys[i];
        const uint64_t h = id_hash(key);
        Shard& sh = shards_[shard_of(h)];
        const uint32_t* found = sh.index.find(key, h);
        uint32_t r;
        if (found != nullptr) {
            r = *found;
        } else {
            r = sh.rows.allocate();
            bool inserted = false;
            *sh.index.find_or_insert(key, h, r, &inserted) = r;
            sh.pending.erase(key, h);
        }
        RowHeader& hdr = sh.rows.header(r);
        hdr.key = key;
        hdr.last_seen = d.last_seen[i];
        hdr.count = d.count[i];
        std::memcpy(sh.rows.data(r), d.rows.data() + i * row_width_, row_width_ * sizeof(float));
        sh.rows.set_modified(r);
    }
    rebuild_orders();
}

void HostTable::upsert_pending(const PendingDump& d) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (size_t i = 0; i < d.keys.size(); ++i) {
        if (d.count[i] == 0)
            throw std::invalid_argument("admission counts must be >= 1");
        const int64_t key = d.keys[i];
        const uint64_t h = id_hash(key);
        Shard& sh = shards_[shard_of(h)];
        if (sh.index.find(key, h) != nullptr)
            continue;  // admitted meanwhile: the row wins
        const PendingTraits::Value v{d.count[i], d.last_seen[i]};
        bool inserted = false;
        *sh.pending.find_or_insert(key, h, v, &inserted) = v;
    }
}

void HostTable::restore_counters(int64_t step, int64_t optimizer_step) {
    if (step < 0 || optimizer_step < 0)
        throw std::invalid_argument("step counters must be >= 0");
    std::unique_lock<std::shared_mutex> lock(mu_);
    step_ = step;
    optimizer_step_ = optimizer_step;
}

}  // namespace embcache
