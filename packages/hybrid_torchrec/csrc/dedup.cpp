#include "dedup.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "thread_pool.h"

namespace hybrid {

namespace {

// Elements per chunk of the passes over the whole batch: large enough that a task's
// overhead is noise, small enough that 2^20 ids still give every thread work.
constexpr int64_t kChunk = int64_t{1} << 15;

// Batch-local table of one partition; one per thread, reused across partitions and batches.
struct LocalSlot {
    int64_t key;
    uint32_t index;  // kEmpty: free
};
constexpr uint32_t kEmpty = 0xffffffffu;

std::vector<LocalSlot>& local_table(int64_t elements, uint64_t* mask) {
    thread_local std::vector<LocalSlot> table;
    uint64_t cap = 16;
    while (cap < static_cast<uint64_t>(elements) * 2)
        cap <<= 1;
    if (table.size() < cap)
        table.resize(cap);
    std::fill_n(table.begin(), cap, LocalSlot{0, kEmpty});
    *mask = cap - 1;
    return table;
}

void group_by_partition(const int64_t* ids, int64_t n, DedupWorkspace& w) {
    const int64_t parts = w.num_parts;
    const int lg = w.log2_parts;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    w.histogram.assign(static_cast<size_t>(chunks * parts), 0);
    w.begin.assign(static_cast<size_t>(parts + 1), 0);
    if (parts == 1) {
        // One partition: grouping is the identity, no hashing needed.
        parallel_chunks(n, kChunk, [&](int64_t, int64_t lo, int64_t hi) {
            std::memcpy(w.ids.data() + lo, ids + lo, static_cast<size_t>(hi - lo) * 8);
            for (int64_t i = lo; i < hi; ++i)
                w.pos[i] = static_cast<uint32_t>(i);
        });
        w.begin[1] = n;
        return;
    }
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        uint32_t* hist = w.histogram.data() + c * parts;
        for (int64_t i = lo; i < hi; ++i)
            ++hist[partition_of(hash_for_map(ids[i]), lg)];
    });
    // Turn the counts into each (chunk, partition)'s first output index: partitions in
    // order, and chunks in order within a partition, which keeps positional order.
    int64_t next = 0;
    for (int64_t p = 0; p < parts; ++p) {
        w.begin[static_cast<size_t>(p)] = next;
        for (int64_t c = 0; c < chunks; ++c) {
            uint32_t& h = w.histogram[static_cast<size_t>(c * parts + p)];
            const uint32_t count = h;
            h = static_cast<uint32_t>(next);
            next += count;
        }
    }
    w.begin[static_cast<size_t>(parts)] = next;
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        uint32_t* cursor = w.histogram.data() + c * parts;
        for (int64_t i = lo; i < hi; ++i) {
            const int64_t id = ids[i];
            const uint32_t at = cursor[partition_of(hash_for_map(id), lg)]++;
            w.ids[at] = id;
            w.pos[at] = static_cast<uint32_t>(i);
        }
    });
}

void dedup_partition(DedupWorkspace& w, int64_t p) {
    const int64_t lo = w.begin[static_cast<size_t>(p)];
    const int64_t hi = w.begin[static_cast<size_t>(p + 1)];
    uint64_t mask = 0;
    std::vector<LocalSlot>& table = local_table(hi - lo, &mask);
    uint32_t found = 0;
    for (int64_t e = lo; e < hi; ++e) {
        const int64_t id = w.ids[e];
        uint64_t i = hash_for_map(id) & mask;
        for (;; i = (i + 1) & mask) {
            LocalSlot& s = table[i];
            if (s.index == kEmpty) {
                const uint32_t d = static_cast<uint32_t>(lo) + found++;
                s.key = id;
                s.index = d;
                w.d_id[d] = id;
                w.d_first[d] = w.pos[e];
                w.d_count[d] = 1;
                w.slot[e] = d;
                break;
            }
            if (s.key == id) {
                ++w.d_count[s.index];
                w.slot[e] = s.index;
                break;
            }
        }
    }
    w.distinct[static_cast<size_t>(p)] = found;
}

// Numbers the distinct ids of the whole batch in order of first occurrence.
void number_globally(DedupWorkspace& w) {
    const int64_t n = w.n;
    const int64_t parts = w.num_parts;
    parallel_chunks(n, kChunk, [&](int64_t, int64_t lo, int64_t hi) {
        std::memset(w.first_flag.data() + lo, 0, static_cast<size_t>(hi - lo));
    });
    parallel_tasks(parts, [&](int64_t p) {
        const int64_t lo = w.begin[static_cast<size_t>(p)];
        const int64_t end = lo + w.distinct[static_cast<size_t>(p)];
        for (int64_t d = lo; d < end; ++d)
            w.first_flag[w.d_first[d]] = 1;
    });
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    w.chunk_base.assign(static_cast<size_t>(chunks + 1), 0);
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        int64_t count = 0;
        for (int64_t i = lo; i < hi; ++i)
            count += w.first_flag[i];
        w.chunk_base[static_cast<size_t>(c + 1)] = count;
    });
    std::partial_sum(w.chunk_base.begin(), w.chunk_base.end(), w.chunk_base.begin());
    w.num_unique = w.chunk_base[static_cast<size_t>(chunks)];
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        uint32_t g = static_cast<uint32_t>(w.chunk_base[static_cast<size_t>(c)]);
        for (int64_t i = lo; i < hi; ++i) {
            if (w.first_flag[i])
                w.global_at[i] = g++;
        }
    });
    parallel_tasks(parts, [&](int64_t p) {
        const int64_t lo = w.begin[static_cast<size_t>(p)];
        const int64_t end = lo + w.distinct[static_cast<size_t>(p)];
        for (int64_t d = lo; d < end; ++d)
            w.d_global[d] = w.global_at[w.d_first[d]];
    });
}

}  // namespace

size_t DedupWorkspace::memory_bytes() const {
    return ids.memory_bytes() + pos.memory_bytes() + slot.memory_bytes() + d_id.memory_bytes() +
           d_first.memory_bytes() + d_count.memory_bytes() + d_global.memory_bytes() +
           d_value.memory_bytes() + first_flag.memory_bytes() + global_at.memory_bytes();
}

int dedup_log2_parts(int64_t n) {
    const int lg = ceil_log2(static_cast<uint64_t>(std::max<int64_t>(n, 1))) - 11;
    return std::min(std::max(lg, 0), 8);
}

void dedup(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w) {
    check_batch_size(n);
    w.n = n;
    w.log2_parts = log2_parts;
    w.num_parts = int64_t{1} << log2_parts;
    const int64_t cap = std::max<int64_t>(n, 1);
    w.ids.ensure(cap);
    w.pos.ensure(cap);
    w.slot.ensure(cap);
    w.d_id.ensure(cap);
    w.d_first.ensure(cap);
    w.d_count.ensure(cap);
    w.d_global.ensure(cap);
    w.d_value.ensure(cap);
    w.first_flag.ensure(cap);
    w.global_at.ensure(cap);
    w.distinct.assign(static_cast<size_t>(w.num_parts), 0);
    group_by_partition(ids, n, w);
    parallel_tasks(w.num_parts, [&](int64_t p) { dedup_partition(w, p); });
    number_globally(w);
}

void write_dedup(const DedupWorkspace& w, int64_t* unique, int64_t* counts, int64_t* inverse) {
    parallel_tasks(w.num_parts, [&](int64_t p) {
        const int64_t lo = w.begin[static_cast<size_t>(p)];
        const int64_t hi = w.begin[static_cast<size_t>(p + 1)];
        const int64_t end = lo + w.distinct[static_cast<size_t>(p)];
        for (int64_t d = lo; d < end; ++d) {
            unique[w.d_global[d]] = w.d_id[d];
            if (counts != nullptr)
                counts[w.d_global[d]] = w.d_count[d];
        }
        for (int64_t e = lo; e < hi; ++e)
            inverse[w.pos[e]] = w.d_global[w.slot[e]];
    });
}

void sort_unique(int64_t num_unique, int64_t* unique, int64_t* counts, int64_t n,
                 int64_t* inverse) {
    std::vector<std::pair<int64_t, int64_t>> order(static_cast<size_t>(num_unique));
    for (int64_t g = 0; g < num_unique; ++g)
        order[static_cast<size_t>(g)] = {unique[g], g};
    std::sort(order.begin(), order.end());  // ids are distinct: the pairs never tie
    std::vector<int64_t> rank(static_cast<size_t>(num_unique));
    std::vector<int64_t> sorted_counts;
    if (counts != nullptr)
        sorted_counts.resize(static_cast<size_t>(num_unique));
    for (int64_t r = 0; r < num_unique; ++r) {
        const auto& [id, g] = order[static_cast<size_t>(r)];
        rank[static_cast<size_t>(g)] = r;
        unique[r] = id;
        if (counts != nullptr)
            sorted_counts[static_cast<size_t>(r)] = counts[g];
    }
    if (counts != nullptr)
        std::copy(sorted_counts.begin(), sorted_counts.end(), counts);
    parallel_chunks(n, kChunk, [&](int64_t, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
            inverse[i] = rank[static_cast<size_t>(inverse[i])];
    });
}

}  // namespace hybrid
