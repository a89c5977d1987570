#include "id_mapper.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "common.h"

namespace hybrid {

namespace {

// About 8192 mapped ids per partition when the table is full: a partition's hash table then
// stays within the L2 cache while a batch's partition is processed.
int mapper_log2_parts(int64_t capacity) {
    const int lg = ceil_log2(static_cast<uint64_t>(capacity)) - 13;
    return std::min(std::max(lg, 0), 8);
}

uint32_t saturating_increment(uint32_t c) {
    return c == 0xffffffffu ? c : c + 1;
}

}  // namespace

const char* policy_name(Policy p) {
    static constexpr const char* kNames[] = {"none", "lru", "lfu"};  // by Policy's value
    const auto i = static_cast<unsigned>(p);
    return i < 3 ? kNames[i] : "?";
}

IdMapper::IdMapper(int64_t capacity, Policy policy, int64_t protect_batches, int64_t ttl_steps,
                   std::string name)
    : capacity_(capacity),
      policy_(policy),
      protect_batches_(protect_batches),
      ttl_steps_(ttl_steps),
      name_(std::move(name)),
      log2_parts_(mapper_log2_parts(capacity > 0 ? capacity : 1)) {
    if (capacity < 1 || capacity > kMaxCapacity) {
        throw std::invalid_argument("table '" + name_ +
                                    "': capacity must be in [1, 2^31 - 1], got " +
                                    std::to_string(capacity));
    }
    if (protect_batches < 1) {
        throw std::invalid_argument("table '" + name_ + "': protect_batches must be >= 1, got " +
                                    std::to_string(protect_batches));
    }
    if (ttl_steps < 0 || (ttl_steps > 0 && policy == Policy::kNone)) {
        throw std::invalid_argument("table '" + name_ +
                                    "': ttl_steps must be >= 0, and needs an eviction policy");
    }
    // An expired row must not be one a batch in flight still reads.
    if (ttl_steps > 0 && ttl_steps + 1 < protect_batches) {
        throw std::invalid_argument("table '" + name_ + "': ttl_steps " +
                                    std::to_string(ttl_steps) +
                                    " would expire rows that protect_batches " +
                                    std::to_string(protect_batches) + " protects");
    }
    t_.maps.resize(static_cast<size_t>(int64_t{1} << log2_parts_));
}

int64_t IdMapper::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return t_.size;
}

int64_t IdMapper::step() const {
    std::lock_guard<std::mutex> lock(mu_);
    return t_.step;
}

size_t IdMapper::memory_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t bytes = ws_.memory_bytes() + t_.order.memory_bytes() + t_.recency.memory_bytes();
    for (const FlatMap& m : t_.maps)
        bytes += m.memory_bytes();
    bytes += t_.id_of_row.capacity() * sizeof(int64_t) +
             t_.meta.capacity() * sizeof(Tables::RowMeta) + t_.free_rows.size() * sizeof(int64_t);
    return bytes;
}

void IdMapper::clear() {
    std::lock_guard<std::mutex> lock(mu_);
    Tables fresh;
    fresh.maps.resize(t_.maps.size());
    std::swap(t_, fresh);
}

// A mapped id's slot remembers the id's distinct index in the current batch, so an id the
// table knows costs one probe per occurrence, with no batch-local table and no second lookup.
// Between batches every scratch word is kNoBatch (the task that sets words puts kNoBatch back
// before it returns), so a set word was set by this batch and is trusted without reading the
// record it names. Ids the table does not know go through the batch-local table.
void IdMapper::dedup_partition(DedupWorkspace& w, int64_t p, bool first_of_task,
                               bool last_of_task) {
    FlatMap& map = t_.maps[static_cast<size_t>(p)];
    if (map.empty()) {
        // Every id is new: de-duplicating is all there is.
        dedup_partition_in_batch_table(w, p);
        missing_[static_cast<size_t>(p)] = w.distinct[static_cast<size_t>(p)];
        return;
    }
    const int64_t lo = w.begin[static_cast<size_t>(p)];
    const int64_t hi = w.begin[static_cast<size_t>(p + 1)];
    BatchTable& unmapped = BatchTable::of_this_thread();
    unmapped.reset(hi - lo);
    // A table with no more lines than its partition has ids is mostly visited anyway:
    // loading it in address order runs at memory bandwidth, where the probes would wait for
    // their misses a few at a time. The task's next table is loaded a line per id of this
    // partition, so that it is in cache when its turn comes.
    const bool whole = wholly_visited(w, p);
    if (first_of_task && whole)
        map.prefetch_all();
    const char* ahead = nullptr;
    const char* ahead_end = nullptr;
    if (!last_of_task && wholly_visited(w, p + 1))
        std::tie(ahead, ahead_end) = t_.maps[static_cast<size_t>(p + 1)].span();
    const FlatMap::Probe m(map);
    const int64_t* elems = w.elems.data();
    uint32_t* refs = w.refs.data();
    DedupWorkspace::Distinct* dist = w.dist.data();
    uint32_t* slot_of = w.global.data();  // the slot of each distinct id, until the reset below
    const auto start = [&](uint32_t h) { m.prefetch_for_update(h); };
    uint32_t found = 0;
    int64_t missing = 0;
    // The scratch words set by this partition are reset at the end: in a table visited
    // wholly, by a sweep over all of them (in cache by then); otherwise one by one, from the
    // slot of each distinct id, which the loop then records.
    const auto run = [&](auto record_slots) {
        HashesAhead<16> hashes(elems, lo, hi, start);
        for_each_run(w, p, [&](int64_t, int64_t run_lo, int64_t run_hi) {
            for (int64_t e = run_lo; e < run_hi; ++e) {
                if (ahead < ahead_end) {
                    __builtin_prefetch(ahead, 1);
                    ahead += 64;
                }
                const uint32_t h = hashes.next(e, start);
                const int64_t id = elems[e];
                const uint32_t next = static_cast<uint32_t>(lo) + found;
                const uint64_t s = m.locate(id, h);
                if (s != FlatMap::kAbsent) {
                    // Whether an occurrence is an id's first is unpredictable (a third of a
                    // Zipf batch's are), so the known-id path has no branch on it: the record
                    // of the next distinct id is always written and stays unclaimed unless
                    // this occurrence is new.
                    uint32_t& b = m.value(s).batch;
                    const uint32_t v = b;
                    const uint32_t fresh = 0u - static_cast<uint32_t>(v == kNoBatch);
                    const uint32_t d = (next & fresh) | (v & ~fresh);
                    b = d;
                    dist[next] = {id, m.value(s).row, 0};
                    if constexpr (decltype(record_slots)::value)
                        slot_of[next] = static_cast<uint32_t>(s);
                    ++dist[d].count;
                    refs[e] = d | (DedupWorkspace::kFirst & fresh);
                    found -= fresh;
                    continue;
                }
                const uint32_t d = unmapped.find_or_add(id, h, next);
                if (d != BatchTable::kAbsent) {
                    ++dist[d].count;
                    refs[e] = d;
                    continue;
                }
                dist[next] = {id, -1, 1};
                refs[e] = next | DedupWorkspace::kFirst;
                ++found;
                ++missing;
            }
            return found;
        });
        if constexpr (decltype(record_slots)::value) {
            for (int64_t d = lo; d < lo + found; ++d) {
                if (dist[d].value >= 0)
                    m.value(slot_of[d]).batch = kNoBatch;
            }
        } else {
            map.for_each_mut([](int64_t, RowSlot& v) { v.batch = kNoBatch; });
        }
    };
    if (whole)
        run(std::false_type{});
    else
        run(std::true_type{});
    w.distinct[static_cast<size_t>(p)] = found;
    missing_[static_cast<size_t>(p)] = missing;
}

void IdMapper::dedup_and_probe(const int64_t* ids, int64_t n) {
    DedupWorkspace& w = ws_;
    group(ids, n, log2_parts_, w);
    missing_.assign(static_cast<size_t>(w.num_parts), 0);
    // Up to 4 partitions per task, so that a task knows which table it visits next and loads
    // it ahead, but never so many that the pool gets fewer than 4 tasks a thread: a table of
    // 4-16 partitions would otherwise be de-duplicated by one or a few threads. Which
    // partitions share a task only decides prefetching, so outputs do not depend on it.
    const int64_t threads = ThreadPool::global().num_threads();
    const int64_t per_task = std::clamp<int64_t>(w.num_parts / (4 * threads), 1, 4);
    parallel_tasks((w.num_parts + per_task - 1) / per_task, [&](int64_t t) {
        const int64_t end = std::min(w.num_parts, (t + 1) * per_task);
        for (int64_t p = t * per_task; p < end; ++p)
            dedup_partition(w, p, p == t * per_task, p + 1 == end);
    });
    w.num_unique = std::accumulate(w.distinct.begin(), w.distinct.end(), int64_t{0});
}

bool IdMapper::wholly_visited(const DedupWorkspace& w, int64_t p) const {
    const int64_t ids = w.begin[static_cast<size_t>(p + 1)] - w.begin[static_cast<size_t>(p)];
    return t_.maps[static_cast<size_t>(p)].lines() <= static_cast<uint64_t>(ids);
}

int64_t IdMapper::take_free_row(Tables& t) {
    if (!t.free_rows.empty()) {
        const int64_t row = t.free_rows.top();
        t.free_rows.pop();
        return row;
    }
    if (t.high_water < capacity_)
        return t.high_water++;
    return -1;
}

// Walks the eviction order from the front. Rows of this batch carry last_used == step (the
// caller marked them) and are skipped; within a bucket last_used never decreases, so the
// first row that is protected by age ends the bucket.
void IdMapper::find_victims(int64_t needed, int64_t step, std::vector<int32_t>& victims) const {
    const EvictionOrder& order = t_.order;
    for (int32_t b = order.first_bucket();
         b != EvictionOrder::kNone && static_cast<int64_t>(victims.size()) < needed;
         b = order.next_bucket(b)) {
        for (int32_t r = order.bucket_head(b);
             r != EvictionOrder::kNone && static_cast<int64_t>(victims.size()) < needed;
             r = order.next_row(r)) {
            const int64_t used = t_.meta[static_cast<size_t>(r)].last_used;
            // Expired rows are given up anyway and already counted as available.
            if (used == step || expired(used, step))
                continue;
            if (used + protect_batches_ > step)
                break;
            victims.push_back(r);
        }
    }
}

// Walks the recency order from the front: rows of this batch carry last_used == step (the
// caller marked them) and are skipped; the first row seen recently enough ends the walk.
// Sorted by row, so that the result does not depend on how ties were ordered (a recency order
// rebuilt from a checkpoint orders rows of one step by the policy's order).
void IdMapper::find_expired(int64_t step, std::vector<int32_t>& rows) const {
    const EvictionOrder& order = recency_order();
    for (int32_t b = order.first_bucket(); b != EvictionOrder::kNone; b = order.next_bucket(b)) {
        for (int32_t r = order.bucket_head(b); r != EvictionOrder::kNone; r = order.next_row(r)) {
            const int64_t used = t_.meta[static_cast<size_t>(r)].last_used;
            if (used == step)
                continue;
            if (!expired(used, step)) {
                std::sort(rows.begin(), rows.end());
                return;
            }
            rows.push_back(r);
        }
    }
    std::sort(rows.begin(), rows.end());
}

void IdMapper::throw_full(int64_t new_ids, int64_t evictable) const {
    std::string msg = "table '" + name_ + "' is full: capacity " + std::to_string(capacity_) +
                      " rows, " + std::to_string(t_.size) + " mapped, and the batch has " +
                      std::to_string(new_ids) + " new ids; ";
    if (policy_ == Policy::kNone) {
        msg +=
            "the table has no eviction policy (set eviction=EvictionPolicy(\"lru\") or "
            "EvictionPolicy(\"lfu\") in its config, or raise num_embeddings)";
    } else {
        msg += "its " + std::string(policy_name(policy_)) + " policy may evict only " +
               std::to_string(evictable) + " rows (rows of the last " +
               std::to_string(protect_batches_) + " batches are protected)";
        if (ttl_steps_ > 0)
            msg +=
                ", rows unseen for more than " + std::to_string(ttl_steps_) + " batches included";
    }
    throw CapacityError(msg);
}

MapResult IdMapper::map(const int64_t* ids, int64_t n, bool insert) {
    std::lock_guard<std::mutex> lock(mu_);
    DedupWorkspace& w = ws_;
    dedup_and_probe(ids, n);

    MapResult out;
    const int64_t u = w.num_unique;
    out.unique_ids.allocate(u);
    out.rows.allocate(u);
    out.counts.allocate(u);
    out.inverse.allocate(n);
    number_distinct(w, out.unique_ids.data.get(), out.counts.data.get(), out.rows.data.get());
    write_inverse(w, out.inverse.data.get());
    int64_t* rows = out.rows.data.get();
    if (!insert)
        return out;

    if (u > capacity_) {
        throw CapacityError("table '" + name_ + "' holds at most " + std::to_string(capacity_) +
                            " rows but the batch has " + std::to_string(u) + " distinct ids");
    }
    const int64_t misses = std::accumulate(missing_.begin(), missing_.end(), int64_t{0});
    const int64_t step = t_.step + 1;
    int64_t available = static_cast<int64_t>(t_.free_rows.size()) + (capacity_ - t_.high_water);
    std::vector<int32_t> expired_rows, victims;
    if (misses > available || ttl_steps_ > 0) {
        if (policy_ == Policy::kNone)
            throw_full(misses, 0);
        // Mark this batch's rows so that the walks skip them; undone if the batch fails.
        std::vector<std::pair<int64_t, int64_t>> saved;
        for (int64_t g = 0; g < u; ++g) {
            if (rows[g] < 0)
                continue;
            int64_t& used = t_.meta[static_cast<size_t>(rows[g])].last_used;
            saved.emplace_back(rows[g], used);
            used = step;
        }
        if (ttl_steps_ > 0) {
            find_expired(step, expired_rows);
            available += static_cast<int64_t>(expired_rows.size());
        }
        if (misses > available)
            find_victims(misses - available, step, victims);
        if (static_cast<int64_t>(victims.size()) < misses - available) {
            for (const auto& [row, used] : saved)
                t_.meta[static_cast<size_t>(row)].last_used = used;
            throw_full(misses, static_cast<int64_t>(expired_rows.size() + victims.size()));
        }
    }

    // From here on nothing can fail.
    t_.step = step;
    if (policy_ != Policy::kNone) {
        // The eviction order is one list: touched in the batch's first-occurrence order.
        for (int64_t g = 0; g < u; ++g) {
            const int64_t row = rows[g];
            if (row < 0)
                continue;
            uint32_t& c = t_.meta[static_cast<size_t>(row)].count;
            c = saturating_increment(c);
            t_.meta[static_cast<size_t>(row)].last_used = step;
            t_.order.touch(static_cast<int32_t>(row), key_of(c));
            if (keeps_recency())
                t_.recency.touch(static_cast<int32_t>(row), 0);
        }
    }
    // Expired rows are freed first, so that the batch's new ids take them (smallest first).
    for (int32_t r : expired_rows) {
        t_.order.unlink(r);
        if (keeps_recency())
            t_.recency.unlink(r);
        out.evicted_ids.push_back(t_.id_of_row[static_cast<size_t>(r)]);
        out.evicted_rows.push_back(r);
        t_.meta[static_cast<size_t>(r)] = Tables::RowMeta{0, 0, 0};
        t_.free_rows.push(r);
    }
    for (int32_t v : victims) {
        t_.order.unlink(v);
        if (keeps_recency())
            t_.recency.unlink(v);
    }

    // A batch of known ids (the steady state) takes no rows and changes no hash table.
    if (misses == 0 && expired_rows.empty())
        return out;
    size_t next_victim = 0;
    const int64_t* unique = out.unique_ids.data.get();
    for (int64_t g = 0; g < u; ++g) {
        if (rows[g] >= 0)
            continue;
        int64_t row = take_free_row(t_);
        if (row < 0) {
            row = victims[next_victim++];
            out.evicted_ids.push_back(t_.id_of_row[static_cast<size_t>(row)]);
            out.evicted_rows.push_back(row);
        } else if (row >= static_cast<int64_t>(t_.id_of_row.size())) {
            const size_t grown = std::min<size_t>(static_cast<size_t>(capacity_),
                                                  std::max<size_t>(1024, t_.id_of_row.size() * 2));
            t_.id_of_row.resize(grown);
            t_.meta.resize(grown, Tables::RowMeta{0, 0, 0});
            if (policy_ != Policy::kNone)
                t_.order.ensure_rows(static_cast<int64_t>(grown));
            if (keeps_recency())
                t_.recency.ensure_rows(static_cast<int64_t>(grown));
        }
        rows[g] = row;
        t_.id_of_row[static_cast<size_t>(row)] = unique[g];
        t_.meta[static_cast<size_t>(row)].count = 1;
        t_.meta[static_cast<size_t>(row)].last_used = step;
        if (policy_ != Policy::kNone)
            t_.order.add_first(static_cast<int32_t>(row), key_of(1));
        if (keeps_recency())
            t_.recency.add_last(static_cast<int32_t>(row), 0);
    }
    out.num_new = misses;

    // The hash tables last: evicted ids out, new ids in, each partition by one task.
    std::vector<std::vector<int64_t>> evicted_by_part(t_.maps.size());
    for (int64_t id : out.evicted_ids) {
        evicted_by_part[static_cast<size_t>(partition_of(id_hash(id), log2_parts_))].push_back(id);
    }
    parallel_tasks(w.num_parts, [&](int64_t p) {
        FlatMap& m = t_.maps[static_cast<size_t>(p)];
        for (int64_t id : evicted_by_part[static_cast<size_t>(p)])
            m.erase(id, hash_for_slot(id));
        const int64_t new_ids = missing_[static_cast<size_t>(p)];
        if (new_ids == 0)
            return;
        m.reserve(m.size() + new_ids);  // at most one rehash per batch
        const int64_t lo = w.begin[static_cast<size_t>(p)];
        const int64_t end = lo + w.distinct[static_cast<size_t>(p)];
        for (int64_t d = lo; d < end; ++d) {
            const int64_t id = w.dist[d].id;
            if (w.dist[d].value < 0)
                m.insert_new(id, hash_for_slot(id),
                             RowSlot{static_cast<int32_t>(rows[w.global[d]]), kNoBatch});
        }
    });
    t_.size += misses - static_cast<int64_t>(out.evicted_ids.size());
    return out;
}

void IdMapper::lookup(const int64_t* ids, int64_t n, int64_t* rows) const {
    check_batch_size(n);
    std::lock_guard<std::mutex> lock(mu_);
    parallel_chunks(n, int64_t{1} << 14, [&](int64_t, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
            const uint64_t h = id_hash(ids[i]);
            const RowSlot* slot = t_.maps[static_cast<size_t>(partition_of(h, log2_parts_))].find(
                ids[i], static_cast<uint32_t>(h));
            rows[i] = slot != nullptr ? slot->row : -1;
        }
    });
}

void IdMapper::remove(const int64_t* ids, int64_t n, int64_t* rows) {
    std::lock_guard<std::mutex> lock(mu_);
    DedupWorkspace& w = ws_;
    dedup_and_probe(ids, n);
    write_values_per_position(w, rows);
    parallel_tasks(w.num_parts, [&](int64_t p) {
        FlatMap& m = t_.maps[static_cast<size_t>(p)];
        const int64_t lo = w.begin[static_cast<size_t>(p)];
        const int64_t end = lo + w.distinct[static_cast<size_t>(p)];
        for (int64_t d = lo; d < end; ++d) {
            if (w.dist[d].value >= 0)
                m.erase(w.dist[d].id, hash_for_slot(w.dist[d].id));
        }
    });
    // Freed rows in first-occurrence order, so the free list is independent of threads.
    std::vector<int64_t> freed(static_cast<size_t>(w.num_unique));
    number_distinct(w, nullptr, nullptr, freed.data());
    int64_t removed = 0;
    for (const int64_t row : freed) {
        if (row < 0)
            continue;
        ++removed;
        if (policy_ != Policy::kNone)
            t_.order.unlink(static_cast<int32_t>(row));
        if (keeps_recency())
            t_.recency.unlink(static_cast<int32_t>(row));
        t_.meta[static_cast<size_t>(row)].count = 0;
        t_.meta[static_cast<size_t>(row)].last_used = 0;
        t_.free_rows.push(row);
    }
    t_.size -= removed;
}

MappingState IdMapper::export_state() const {
    std::lock_guard<std::mutex> lock(mu_);
    MappingState s;
    s.step = t_.step;
    const size_t m = static_cast<size_t>(t_.size);
    s.ids.reserve(m);
    s.rows.reserve(m);
    s.counts.reserve(m);
    s.last_used.reserve(m);
    auto emit = [&](int64_t row) {
        const size_t r = static_cast<size_t>(row);
        s.ids.push_back(t_.id_of_row[r]);
        s.rows.push_back(row);
        s.counts.push_back(t_.meta[r].count);
        s.last_used.push_back(t_.meta[r].last_used);
    };
    if (policy_ == Policy::kNone) {
        for (int64_t row = 0; row < t_.high_water; ++row) {
            if (t_.meta[static_cast<size_t>(row)].count != 0)
                emit(row);
        }
    } else {
        const EvictionOrder& order = t_.order;
        for (int32_t b = order.first_bucket(); b != EvictionOrder::kNone;
             b = order.next_bucket(b)) {
            for (int32_t r = order.bucket_head(b); r != EvictionOrder::kNone;
                 r = order.next_row(r)) {
                emit(r);
            }
        }
    }
    return s;
}

void IdMapper::load_state(const MappingState& s) {
    const int64_t m = static_cast<int64_t>(s.ids.size());
    const std::string where = "mapping of table '" + name_ + "': ";
    if (static_cast<int64_t>(s.rows.size()) != m || static_cast<int64_t>(s.counts.size()) != m ||
        static_cast<int64_t>(s.last_used.size()) != m) {
        throw std::invalid_argument(where + "ids, rows, counts and last_used differ in length");
    }
    if (m > capacity_) {
        throw std::invalid_argument(where + std::to_string(m) + " ids do not fit the capacity of " +
                                    std::to_string(capacity_) + " rows");
    }
    if (s.step < 0)
        throw std::invalid_argument(where + "negative step");
    int64_t high_water = 0;
    for (int64_t i = 0; i < m; ++i) {
        if (s.rows[i] < 0 || s.rows[i] >= capacity_) {
            throw std::invalid_argument(where + "row " + std::to_string(s.rows[i]) + " of id " +
                                        std::to_string(s.ids[i]) + " is outside [0, " +
                                        std::to_string(capacity_) + ")");
        }
        if (s.counts[i] < 1 || s.counts[i] > 0xffffffffLL) {
            throw std::invalid_argument(where + "count of id " + std::to_string(s.ids[i]) +
                                        " must be in [1, 2^32 - 1]");
        }
        if (s.last_used[i] < 0 || s.last_used[i] > s.step) {
            throw std::invalid_argument(where + "last_used of id " + std::to_string(s.ids[i]) +
                                        " is not in [0, step]");
        }
        high_water = std::max(high_water, s.rows[i] + 1);
    }

    Tables t;
    t.maps.resize(t_.maps.size());
    t.step = s.step;
    t.size = m;
    t.high_water = high_water;
    const size_t rows_needed = static_cast<size_t>(high_water);
    t.id_of_row.resize(rows_needed);
    t.meta.assign(rows_needed, Tables::RowMeta{0, 0, 0});
    for (int64_t i = 0; i < m; ++i) {
        const size_t r = static_cast<size_t>(s.rows[i]);
        if (t.meta[r].count != 0) {
            throw std::invalid_argument(where + "row " + std::to_string(s.rows[i]) +
                                        " is given to two ids");
        }
        t.id_of_row[r] = s.ids[i];
        t.meta[r].count = static_cast<uint32_t>(s.counts[i]);
        t.meta[r].last_used = s.last_used[i];
    }
    std::vector<int64_t> per_part(t.maps.size(), 0);
    for (int64_t i = 0; i < m; ++i) {
        ++per_part[static_cast<size_t>(partition_of(id_hash(s.ids[i]), log2_parts_))];
    }
    for (size_t p = 0; p < t.maps.size(); ++p)
        t.maps[p].reserve(per_part[p]);
    for (int64_t i = 0; i < m; ++i) {
        const uint64_t h = id_hash(s.ids[i]);
        FlatMap& map = t.maps[static_cast<size_t>(partition_of(h, log2_parts_))];
        if (map.find(s.ids[i], static_cast<uint32_t>(h)) != nullptr) {
            throw std::invalid_argument(where + "id " + std::to_string(s.ids[i]) +
                                        " appears twice");
        }
        map.insert_new(s.ids[i], static_cast<uint32_t>(h),
                       RowSlot{static_cast<int32_t>(s.rows[i]), kNoBatch});
    }
    for (int64_t row = 0; row < high_water; ++row) {
        if (t.meta[static_cast<size_t>(row)].count == 0)
            t.free_rows.push(row);
    }
    if (policy_ != Policy::kNone) {
        // Rebuild the order from the policy's keys; the stable sort keeps the given order
        // among equal keys, so a state exported under the same policy comes back exactly.
        std::vector<int64_t> order(static_cast<size_t>(m));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            const uint32_t ka = key_of(static_cast<uint32_t>(s.counts[a]));
            const uint32_t kb = key_of(static_cast<uint32_t>(s.counts[b]));
            if (ka != kb)
                return ka < kb;
            return s.last_used[a] < s.last_used[b];
        });
        t.order.ensure_rows(high_water);
        for (int64_t i : order) {
            t.order.add_last(static_cast<int32_t>(s.rows[i]),
                             key_of(static_cast<uint32_t>(s.counts[i])));
        }
    }
    if (keeps_recency()) {
        std::vector<int64_t> order(static_cast<size_t>(m));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return s.last_used[a] < s.last_used[b]; });
        t.recency.ensure_rows(high_water);
        for (int64_t i : order)
            t.recency.add_last(static_cast<int32_t>(s.rows[i]), 0);
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(t_, t);
}

std::vector<MapResult> map_tables(const std::vector<IdMapper*>& mappers,
                                  const std::vector<const int64_t*>& ids,
                                  const std::vector<int64_t>& sizes, bool insert) {
    const int64_t k = static_cast<int64_t>(mappers.size());
    if (static_cast<int64_t>(ids.size()) != k || static_cast<int64_t>(sizes.size()) != k) {
        throw std::invalid_argument("map_tables: one id batch per mapper");
    }
    for (int64_t i = 0; i < k; ++i) {
        for (int64_t j = 0; j < i; ++j) {
            if (mappers[static_cast<size_t>(i)] == mappers[static_cast<size_t>(j)]) {
                throw std::invalid_argument("map_tables: the same mapper is given twice");
            }
        }
    }
    std::vector<MapResult> out(static_cast<size_t>(k));
    parallel_tasks(k, [&](int64_t i) {
        const size_t s = static_cast<size_t>(i);
        out[s] = mappers[s]->map(ids[s], sizes[s], insert);
    });
    return out;
}

}  // namespace hybrid
