// Bucketization of a keyed jagged batch for row-wise sharding on the host: every id goes to
// one bucket (rank), and the output is laid out as torchrec's row-wise input distribution
// expects it from fbgemm's block_bucketize_sparse_features: lengths as
// [bucket][feature][sample], ids grouped by bucket, then feature, then sample, in their
// original order; and, on request, the permutation from input to output positions.
#pragma once

#include <cstdint>
#include <vector>

#include "common.h"

namespace hybrid {

enum class Routing : int {
    // fbgemm's rule: an id below block_size * buckets goes to bucket id / block_size (its
    // feature's block size), any other to id % buckets, ids read as unsigned 64-bit. The id
    // becomes id % block_size (or id / buckets), unless the original ids are kept.
    kBlock = 0,
    // By ranges of a 64-bit hash of the id: bucket r gets the hash range [r/W, (r+1)/W).
    // Balanced for arbitrary ids; ids are always kept.
    kHash = 1,
};

struct BucketizeInput {
    const int64_t* lengths = nullptr;  // bags in order [feature][sample]
    int64_t num_bags = 0;
    // Bags of each feature: feature f owns bags [feature_begin[f], feature_begin[f + 1]).
    std::vector<int64_t> feature_begin;
    const int64_t* ids = nullptr;
    int64_t num_ids = 0;
    int64_t num_buckets = 1;
    Routing routing = Routing::kHash;
    const int64_t* block_sizes = nullptr;  // per feature, for kBlock
    bool keep_ids = true;
    // Block routing reads ids as unsigned numbers of their own width, as fbgemm does: set for
    // ids that were int32 before widening.
    bool ids_are_32_bit = false;
};

struct BucketizeOutput {
    std::vector<int64_t> lengths;  // num_buckets * num_bags
    std::vector<int64_t> ids;
    std::vector<int64_t> permute;  // output position of each input id
};

void bucketize(const BucketizeInput& in, BucketizeOutput& out, bool want_permute);

}  // namespace hybrid
