#include "dedup.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "common.h"

namespace hybrid {

namespace {

// Positions per chunk: large enough that a task's overhead is noise, small enough that a
// chunk's window of an int64 output (256 KiB) stays in L2 and 2^20 ids still give every
// thread work.
constexpr int64_t kChunk = int64_t{1} << 15;

void group_partitions(const int64_t* ids, int64_t n, DedupWorkspace& w) {
    const int64_t parts = w.num_parts;
    const int lg = w.log2_parts;
    const int64_t chunks = w.num_chunks;
    w.begin.assign(static_cast<size_t>(parts + 1), 0);
    w.run_end.assign(static_cast<size_t>(chunks * parts), 0);
    if (parts == 1) {
        // One partition: grouping is the identity.
        parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) {
                w.elems[i] = {ids[i], static_cast<uint32_t>(hash_for_map(ids[i])),
                              static_cast<uint32_t>(i)};
            }
            w.run_end[static_cast<size_t>(c)] = static_cast<uint32_t>(hi);
        });
        w.begin[1] = n;
        return;
    }
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        uint32_t* count = w.run_end.data() + c * parts;
        for (int64_t i = lo; i < hi; ++i)
            ++count[partition_of(hash_for_map(ids[i]), lg)];
    });
    // Counts -> where each (chunk, partition) run starts: partitions in order, chunks in
    // order within a partition, which keeps positional order inside a partition.
    int64_t next = 0;
    for (int64_t p = 0; p < parts; ++p) {
        w.begin[static_cast<size_t>(p)] = next;
        for (int64_t c = 0; c < chunks; ++c) {
            uint32_t& r = w.run_end[static_cast<size_t>(c * parts + p)];
            const uint32_t count = r;
            r = static_cast<uint32_t>(next);
            next += count;
        }
    }
    w.begin[static_cast<size_t>(parts)] = next;
    // Each cursor advances to the end of its run, which is what run_end keeps.
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        uint32_t* cursor = w.run_end.data() + c * parts;
        for (int64_t i = lo; i < hi; ++i) {
            const int64_t id = ids[i];
            const uint64_t h = hash_for_map(id);
            const uint32_t at = cursor[partition_of(h, lg)]++;
            w.elems[at] = {id, static_cast<uint32_t>(h), static_cast<uint32_t>(i)};
        }
    });
}

void dedup_partition(DedupWorkspace& w, int64_t p) {
    const int64_t lo = w.begin[static_cast<size_t>(p)];
    const int64_t hi = w.begin[static_cast<size_t>(p + 1)];
    BatchTable& table = BatchTable::of_this_thread();
    table.reset(hi - lo);
    uint32_t found = 0;
    // Probes depend on loads the hardware cannot predict: start the ones a few elements
    // ahead so that their cache misses overlap.
    constexpr int64_t kAhead = 8;
    for (int64_t e = lo; e < hi; ++e) {
        if (e + kAhead < hi)
            table.prefetch(w.elems[e + kAhead].hash);
        const DedupWorkspace::Element& x = w.elems[e];
        const uint32_t next = static_cast<uint32_t>(lo) + found;
        const uint32_t d = table.find_or_add(x.id, x.hash, next);
        if (d == BatchTable::kAbsent) {
            w.dist[next] = {x.id, -1, x.hash, x.pos, 1, 0};
            w.slot[e] = next;
            ++found;
        } else {
            ++w.dist[d].count;
            w.slot[e] = d;
        }
    }
    w.distinct[static_cast<size_t>(p)] = found;
}

// Calls fn(c, e) for the grouped elements e of each chunk c of positions, a chunk per task:
// every position of chunk c is visited by exactly one call of that task.
template <class F>
void for_each_chunk_element(const DedupWorkspace& w, F&& fn) {
    const int64_t parts = w.num_parts;
    parallel_tasks(w.num_chunks, [&](int64_t c) {
        for (int64_t p = 0; p < parts; ++p) {
            const int64_t start = c == 0 ? w.begin[static_cast<size_t>(p)]
                                         : w.run_end[static_cast<size_t>((c - 1) * parts + p)];
            const int64_t end = w.run_end[static_cast<size_t>(c * parts + p)];
            for (int64_t e = start; e < end; ++e)
                fn(e);
        }
    });
}

}  // namespace

size_t DedupWorkspace::memory_bytes() const {
    return elems.memory_bytes() + slot.memory_bytes() + dist.memory_bytes();
}

int dedup_log2_parts(int64_t n) {
    const int lg = ceil_log2(static_cast<uint64_t>(std::max<int64_t>(n, 1))) - 12;
    return std::min(std::max(lg, 0), 8);
}

BatchTable& BatchTable::of_this_thread() {
    thread_local BatchTable table;
    return table;
}

uint64_t BatchTable::reset(int64_t keys) {
    uint64_t cap = 16;
    while (cap < static_cast<uint64_t>(keys) * 2)
        cap <<= 1;  // load <= 1/2
    if (slots_.size() < cap) {
        slots_.assign(cap, Slot{0, 0, 0});
        epoch_ = 0;
    }
    if (++epoch_ == 0) {  // wrapped: stale slots could look current
        std::fill(slots_.begin(), slots_.end(), Slot{0, 0, 0});
        epoch_ = 1;
    }
    mask_ = cap - 1;
    return mask_;
}

void group(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w) {
    check_batch_size(n);
    w.n = n;
    w.log2_parts = log2_parts;
    w.num_parts = int64_t{1} << log2_parts;
    w.num_chunks = (n + kChunk - 1) / kChunk;
    const int64_t cap = std::max<int64_t>(n, 1);
    w.elems.ensure(cap);
    w.slot.ensure(cap);
    w.dist.ensure(cap);
    w.distinct.assign(static_cast<size_t>(w.num_parts), 0);
    group_partitions(ids, n, w);
}

void dedup(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w) {
    group(ids, n, log2_parts, w);
    parallel_tasks(w.num_parts, [&](int64_t p) { dedup_partition(w, p); });
    w.num_unique = std::accumulate(w.distinct.begin(), w.distinct.end(), int64_t{0});
}

void number_distinct(DedupWorkspace& w, int64_t* unique, int64_t* counts, int64_t* values) {
    const int64_t parts = w.num_parts;
    const int64_t chunks = w.num_chunks;
    // Each partition's distinct ids are sorted by first occurrence, so the ones first seen in
    // chunk c form one sub-range of the partition's list: find where each starts.
    w.chunk_start.assign(static_cast<size_t>(parts * (chunks + 1)), 0);
    parallel_tasks(parts, [&](int64_t p) {
        const int64_t lo = w.begin[static_cast<size_t>(p)];
        const int64_t end = lo + w.distinct[static_cast<size_t>(p)];
        int64_t* start = w.chunk_start.data() + p * (chunks + 1);
        int64_t d = lo;
        for (int64_t c = 0; c <= chunks; ++c) {
            while (d < end && static_cast<int64_t>(w.dist[d].first) < c * kChunk)
                ++d;
            start[c] = d;
        }
    });
    w.chunk_base.assign(static_cast<size_t>(chunks + 1), 0);
    for (int64_t c = 0; c < chunks; ++c) {
        int64_t count = 0;
        for (int64_t p = 0; p < parts; ++p) {
            const int64_t* start = w.chunk_start.data() + p * (chunks + 1);
            count += start[c + 1] - start[c];
        }
        w.chunk_base[static_cast<size_t>(c + 1)] = w.chunk_base[static_cast<size_t>(c)] + count;
    }
    // Per chunk, the distinct ids first seen there are marked at their position in a window
    // of the chunk's size (in L2), then numbered in position order: the outputs of a chunk are
    // written sequentially.
    parallel_tasks(chunks, [&](int64_t c) {
        thread_local std::vector<uint32_t> mark;
        mark.assign(static_cast<size_t>(kChunk), 0);
        const int64_t lo = c * kChunk;
        const int64_t hi = std::min(w.n, lo + kChunk);
        for (int64_t p = 0; p < parts; ++p) {
            const int64_t* start = w.chunk_start.data() + p * (chunks + 1);
            for (int64_t d = start[c]; d < start[c + 1]; ++d) {
                mark[static_cast<size_t>(w.dist[d].first - lo)] = static_cast<uint32_t>(d) + 1;
            }
        }
        int64_t g = w.chunk_base[static_cast<size_t>(c)];
        for (int64_t i = lo; i < hi; ++i) {
            const uint32_t f = mark[static_cast<size_t>(i - lo)];
            if (f == 0)
                continue;
            DedupWorkspace::Distinct& x = w.dist[f - 1];
            x.global = static_cast<uint32_t>(g);
            if (unique != nullptr)
                unique[g] = x.id;
            if (counts != nullptr)
                counts[g] = x.count;
            if (values != nullptr)
                values[g] = x.value;
            ++g;
        }
    });
}

void write_inverse(DedupWorkspace& w, int64_t* out) {
    // Element -> distinct number, partition by partition: the partition's records are then in
    // cache, where the chunk-major pass below would visit them in no useful order.
    parallel_tasks(w.num_parts, [&](int64_t p) {
        const int64_t lo = w.begin[static_cast<size_t>(p)];
        const int64_t hi = w.begin[static_cast<size_t>(p + 1)];
        for (int64_t e = lo; e < hi; ++e)
            w.slot[e] = w.dist[w.slot[e]].global;
    });
    for_each_chunk_element(w, [&](int64_t e) { out[w.elems[e].pos] = w.slot[e]; });
}

void write_values_per_position(const DedupWorkspace& w, int64_t* out) {
    for_each_chunk_element(w, [&](int64_t e) { out[w.elems[e].pos] = w.dist[w.slot[e]].value; });
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
