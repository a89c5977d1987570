#include "bucketize.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common.h"

namespace hybrid {

namespace {

constexpr int64_t kBagChunk = 4096;

}  // namespace

void bucketize(const BucketizeInput& in, BucketizeOutput& out, bool want_permute) {
    check_batch_size(in.num_ids);
    const int64_t bags = in.num_bags;
    const int64_t w = in.num_buckets;
    const int64_t features = static_cast<int64_t>(in.feature_begin.size()) - 1;
    if (w < 1)
        throw std::invalid_argument("num_buckets must be >= 1");
    if (features < 0 || in.feature_begin.front() != 0 || in.feature_begin.back() != bags) {
        throw std::invalid_argument("the features' batch sizes do not add up to the lengths");
    }
    if (in.routing == Routing::kBlock) {
        for (int64_t f = 0; f < features; ++f) {
            if (in.block_sizes[f] < 1) {
                throw std::invalid_argument("block size of feature " + std::to_string(f) +
                                            " must be >= 1, got " +
                                            std::to_string(in.block_sizes[f]));
            }
        }
    }

    // Offsets of the input bags; lengths are checked here because everything after indexes
    // by them.
    std::vector<int64_t> offsets(static_cast<size_t>(bags + 1), 0);
    for (int64_t b = 0; b < bags; ++b) {
        if (in.lengths[b] < 0) {
            throw std::invalid_argument("negative length " + std::to_string(in.lengths[b]) +
                                        " at bag " + std::to_string(b));
        }
        offsets[static_cast<size_t>(b + 1)] = offsets[static_cast<size_t>(b)] + in.lengths[b];
    }
    if (offsets.back() != in.num_ids) {
        throw std::invalid_argument("lengths add up to " + std::to_string(offsets.back()) +
                                    " but there are " + std::to_string(in.num_ids) + " ids");
    }
    auto feature_of = [&](int64_t bag, int64_t hint) {
        while (in.feature_begin[static_cast<size_t>(hint + 1)] <= bag)
            ++hint;
        return hint;
    };

    std::vector<uint32_t> bucket(static_cast<size_t>(in.num_ids));
    out.ids.assign(static_cast<size_t>(in.num_ids), 0);
    out.lengths.assign(static_cast<size_t>(w * bags), 0);
    const uint64_t uw = static_cast<uint64_t>(w);
    const uint64_t id_mask = in.ids_are_32_bit ? 0xffffffffULL : ~uint64_t{0};

    // Calls fn(b, f, i) for every id i of bag b of feature f: chunks of bags in parallel, the
    // ids of a bag in order on one thread.
    auto for_each_id = [&](const auto& fn) {
        parallel_chunks(bags, kBagChunk, [&](int64_t, int64_t lo, int64_t hi) {
            int64_t f = lo < bags ? feature_of(lo, 0) : 0;
            for (int64_t b = lo; b < hi; ++b) {
                f = feature_of(b, f);
                const int64_t end = offsets[static_cast<size_t>(b + 1)];
                for (int64_t i = offsets[static_cast<size_t>(b)]; i < end; ++i)
                    fn(b, f, i);
            }
        });
    };
    // Block routing: whether a (masked) id falls inside the w blocks of its feature; ids past
    // them go round-robin. block * w cannot overflow: a block is below 2^63 and w below 2^31,
    // and a product past 2^64 means every id is inside the blocks.
    auto inside_blocks = [&](uint64_t id, uint64_t block) {
        return block > ~uint64_t{0} / uw || id < block * uw;
    };

    for_each_id([&](int64_t b, int64_t f, int64_t i) {
        uint64_t k;
        if (in.routing == Routing::kHash) {
            k = route_bucket(in.ids[i], uw);
        } else {
            const uint64_t id = static_cast<uint64_t>(in.ids[i]) & id_mask;
            const uint64_t block = static_cast<uint64_t>(in.block_sizes[f]);
            k = inside_blocks(id, block) ? id / block : id % uw;
        }
        bucket[static_cast<size_t>(i)] = static_cast<uint32_t>(k);
        ++out.lengths[static_cast<size_t>(static_cast<int64_t>(k) * bags + b)];
    });

    // Exclusive scan over [bucket][bag]: each (bucket, bag) cell's first output position.
    std::vector<int64_t> cursor(static_cast<size_t>(w * bags));
    int64_t next = 0;
    for (size_t c = 0; c < cursor.size(); ++c) {
        cursor[c] = next;
        next += out.lengths[c];
    }
    if (want_permute)
        out.permute.assign(static_cast<size_t>(in.num_ids), 0);

    for_each_id([&](int64_t b, int64_t f, int64_t i) {
        const uint64_t k = bucket[static_cast<size_t>(i)];
        const int64_t at = cursor[static_cast<size_t>(static_cast<int64_t>(k) * bags + b)]++;
        int64_t id = in.ids[i];
        if (in.routing == Routing::kBlock && !in.keep_ids) {
            const uint64_t u = static_cast<uint64_t>(id) & id_mask;
            const uint64_t block = static_cast<uint64_t>(in.block_sizes[f]);
            id = static_cast<int64_t>(inside_blocks(u, block) ? u % block : u / uw);
        }
        out.ids[static_cast<size_t>(at)] = id;
        if (want_permute)
            out.permute[static_cast<size_t>(i)] = at;
    });
}

}  // namespace hybrid
