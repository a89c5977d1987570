#include "dedup.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "common.h"

namespace hybrid {

namespace {

// Positions per chunk: large enough that a task's overhead is noise, small enough that a
// chunk's scratch (128 KiB) stays in L2 and 2^20 ids still give every thread work.
constexpr int64_t kChunk = int64_t{1} << 15;

// dedup_log2_parts and the mapper use at most 2^8 partitions.
constexpr int64_t kMaxParts = 256;

// Elements past the end that the grouped arrays keep allocated: the passes that prefetch
// along a run look this far ahead of it.
constexpr int64_t kAheadSlack = 64;

void group_partitions(const int64_t* ids, int64_t n, DedupWorkspace& w) {
    const int64_t parts = w.num_parts;
    const int lg = w.log2_parts;
    const int64_t chunks = w.num_chunks;
    w.begin.assign(static_cast<size_t>(parts + 1), 0);
    w.run_end.assign(static_cast<size_t>(chunks * parts), 0);
    uint8_t* part = w.part.data();
    if (parts == 1) {
        // One partition: grouping is the identity.
        parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
            std::fill(part + lo, part + hi, uint8_t{0});
            std::copy(ids + lo, ids + hi, w.elems.data() + lo);
            w.run_end[static_cast<size_t>(c)] = static_cast<uint32_t>(hi);
        });
        w.begin[1] = n;
        return;
    }
    const int shift = 64 - lg;
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        // Four histograms, for positions by their value mod 4: the ids of a Zipf batch often
        // repeat within a few positions, and with one histogram each increment of a hot
        // partition's counter would wait for the store of the previous one. (A byte store
        // may alias anything, so the pointers are locals and the stores come last.)
        uint8_t* const out = part;
        const int64_t* const in = ids;
        uint32_t hist[4][kMaxParts] = {};
        int64_t i = lo;
        for (; i + 4 <= hi; i += 4) {
            uint8_t q[4];
            for (int k = 0; k < 4; ++k)
                q[k] = static_cast<uint8_t>(id_hash(in[i + k]) >> shift);
            for (int k = 0; k < 4; ++k)
                ++hist[k][q[k]];
            for (int k = 0; k < 4; ++k)
                out[i + k] = q[k];
        }
        for (; i < hi; ++i) {
            const auto q = static_cast<uint8_t>(id_hash(in[i]) >> shift);
            ++hist[0][q];
            out[i] = q;
        }
        uint32_t* count = w.run_end.data() + c * parts;
        for (int64_t p = 0; p < parts; ++p)
            count[p] = hist[0][p] + hist[1][p] + hist[2][p] + hist[3][p];
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
    // Each cursor advances to the end of its run, which is what run_end keeps. The runs are
    // too many write streams for the hardware to fetch ahead of: each store starts loading
    // the line its run reaches two lines later.
    int64_t* elems = w.elems.data();
    parallel_chunks(n, kChunk, [&](int64_t c, int64_t lo, int64_t hi) {
        uint32_t* cursor = w.run_end.data() + c * parts;
        for (int64_t i = lo; i < hi; ++i) {
            const uint32_t at = cursor[part[i]]++;
            __builtin_prefetch(elems + at + 16, 1);
            elems[at] = ids[i];
        }
    });
}

// Where each partition's run of chunk c starts.
void chunk_cursors(const DedupWorkspace& w, int64_t c, uint32_t* cursor) {
    const int64_t parts = w.num_parts;
    for (int64_t p = 0; p < parts; ++p) {
        cursor[p] = c == 0 ? static_cast<uint32_t>(w.begin[static_cast<size_t>(p)])
                           : w.run_end[static_cast<size_t>((c - 1) * parts + p)];
    }
}

// Calls fn(i, e) for every position i of each chunk, in order, with e the grouped element
// at position i: a chunk per task, walking the positions and taking each position's element
// from the cursor of its partition (`part` says which).
template <class F>
void walk_positions(const DedupWorkspace& w, F&& fn) {
    const uint8_t* part = w.part.data();
    parallel_tasks(w.num_chunks, [&](int64_t c) {
        uint32_t cursor[kMaxParts];
        chunk_cursors(w, c, cursor);
        const int64_t lo = c * kChunk;
        const int64_t hi = std::min(w.n, lo + kChunk);
        for (int64_t i = lo; i < hi; ++i)
            fn(i, cursor[part[i]]++);
    });
}

}  // namespace

size_t DedupWorkspace::memory_bytes() const {
    return part.memory_bytes() + elems.memory_bytes() + refs.memory_bytes() + ord.memory_bytes() +
           dist.memory_bytes() + global.memory_bytes();
}

int dedup_log2_parts(int64_t n) {
    const int lg = ceil_log2(static_cast<uint64_t>(std::max<int64_t>(n, 1))) - 12;
    return std::min(std::max(lg, 0), 8);
}

BatchTable& BatchTable::of_this_thread() {
    thread_local BatchTable table;
    return table;
}

void BatchTable::reset(int64_t keys) {
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
}

void dedup_partition_in_batch_table(DedupWorkspace& w, int64_t p) {
    const int64_t lo = w.begin[static_cast<size_t>(p)];
    const int64_t hi = w.begin[static_cast<size_t>(p + 1)];
    BatchTable& table = BatchTable::of_this_thread();
    table.reset(hi - lo);
    const int64_t* elems = w.elems.data();
    uint32_t* refs = w.refs.data();
    DedupWorkspace::Distinct* dist = w.dist.data();
    const auto start = [&](uint32_t h) { table.prefetch(h); };
    HashesAhead<8> hashes(elems, lo, hi, start);
    uint32_t found = 0;
    for_each_run(w, p, [&](int64_t, int64_t run_lo, int64_t run_hi) {
        for (int64_t e = run_lo; e < run_hi; ++e) {
            const uint32_t h = hashes.next(e, start);
            const int64_t id = elems[e];
            const uint32_t next = static_cast<uint32_t>(lo) + found;
            const uint32_t d = table.find_or_add(id, h, next);
            if (d == BatchTable::kAbsent) {
                dist[next] = {id, -1, 1};
                refs[e] = next | DedupWorkspace::kFirst;
                ++found;
            } else {
                ++dist[d].count;
                refs[e] = d;
            }
        }
        return found;
    });
    w.distinct[static_cast<size_t>(p)] = found;
}

void group(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w) {
    check_batch_size(n);
    w.n = n;
    w.log2_parts = log2_parts;
    w.num_parts = int64_t{1} << log2_parts;
    w.num_chunks = (n + kChunk - 1) / kChunk;
    const int64_t cap = std::max<int64_t>(n, 1);
    w.part.ensure(cap);
    w.elems.ensure(cap + kAheadSlack);
    w.refs.ensure(cap + kAheadSlack);
    w.ord.ensure(cap);
    w.dist.ensure(cap);
    w.global.ensure(cap);
    w.distinct.assign(static_cast<size_t>(w.num_parts), 0);
    w.chunk_start.assign(static_cast<size_t>(w.num_parts * (w.num_chunks + 1)), 0);
    group_partitions(ids, n, w);
}

void dedup(const int64_t* ids, int64_t n, int log2_parts, DedupWorkspace& w) {
    group(ids, n, log2_parts, w);
    parallel_tasks(w.num_parts, [&](int64_t p) { dedup_partition_in_batch_table(w, p); });
    w.num_unique = std::accumulate(w.distinct.begin(), w.distinct.end(), int64_t{0});
}

void number_distinct(DedupWorkspace& w, int64_t* unique, int64_t* counts, int64_t* values) {
    const int64_t parts = w.num_parts;
    const int64_t chunks = w.num_chunks;
    w.chunk_base.assign(static_cast<size_t>(chunks + 1), 0);
    for (int64_t c = 0; c < chunks; ++c) {
        int64_t count = 0;
        for (int64_t p = 0; p < parts; ++p) {
            const int64_t* start = w.chunk_start.data() + p * (chunks + 1);
            count += start[c + 1] - start[c];
        }
        w.chunk_base[static_cast<size_t>(c + 1)] = w.chunk_base[static_cast<size_t>(c)] + count;
    }
    // Per chunk, the refs are gathered in position order (into `ord`, which the inverse reads
    // again), then the first occurrences among them are listed and numbered: the outputs of
    // a chunk are written sequentially. The list is made by a second pass over each block of
    // gathered refs, still in L1: a store whose address depended on the ref just gathered
    // would hold up the next position's loads until that ref had arrived. About a third of
    // the positions of a Zipf batch are first occurrences, in no pattern, so the list has no
    // branch either: every position writes the next entry and only a first occurrence
    // advances the end.
    const uint8_t* part = w.part.data();
    const uint32_t* refs = w.refs.data();
    uint32_t* ord = w.ord.data();
    uint32_t* global = w.global.data();
    const DedupWorkspace::Distinct* dist = w.dist.data();
    parallel_tasks(chunks, [&](int64_t c) {
        thread_local std::vector<uint32_t> firsts;
        firsts.resize(static_cast<size_t>(kChunk));
        uint32_t* list = firsts.data();
        uint32_t cursor[kMaxParts];
        chunk_cursors(w, c, cursor);
        const int64_t lo = c * kChunk;
        const int64_t hi = std::min(w.n, lo + kChunk);
        int64_t k = 0;
        constexpr int64_t kBlock = 1024;
        for (int64_t b = lo; b < hi; b += kBlock) {
            const int64_t end = std::min(hi, b + kBlock);
            for (int64_t i = b; i < end; ++i) {
                const uint32_t e = cursor[part[i]]++;
                // The runs of a chunk are too many streams for the hardware to follow.
                __builtin_prefetch(refs + e + 32);
                ord[i] = refs[e];
            }
            for (int64_t i = b; i < end; ++i) {
                const uint32_t r = ord[i];
                list[k] = r & ~DedupWorkspace::kFirst;
                k += (r & DedupWorkspace::kFirst) != 0;
            }
        }
        const int64_t base = w.chunk_base[static_cast<size_t>(c)];
        // The records are visited in position order, at random in memory: start the loads
        // some entries ahead so that their misses overlap.
        constexpr int64_t kAhead = 16;
        for (int64_t j = 0; j < k; ++j) {
            if (j + kAhead < k)
                __builtin_prefetch(dist + list[j + kAhead]);
            const uint32_t d = list[j];
            const int64_t g = base + j;
            global[d] = static_cast<uint32_t>(g);
            if (unique != nullptr)
                unique[g] = dist[d].id;
            if (counts != nullptr)
                counts[g] = dist[d].count;
            if (values != nullptr)
                values[g] = dist[d].value;
        }
    });
}

void write_inverse(const DedupWorkspace& w, int64_t* out) {
    const uint32_t* ord = w.ord.data();
    const uint32_t* global = w.global.data();
    parallel_chunks(w.n, kChunk, [&](int64_t, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
            out[i] = global[ord[i] & ~DedupWorkspace::kFirst];
    });
}

void write_values_per_position(const DedupWorkspace& w, int64_t* out) {
    const uint32_t* refs = w.refs.data();
    walk_positions(
        w, [&](int64_t i, int64_t e) { out[i] = w.dist[refs[e] & ~DedupWorkspace::kFirst].value; });
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
