// Tiling of BlockBucketizeSparseFeatures (pure; shared by the CANN op_host and the sim launcher).
//
// Cores take even slices of the bags; three phases, two SyncAll:
//   0. each core sums the lengths of its slice (and checks the batch sizes with VBE) and
//      publishes the sum; (SyncAll)
//   1. from the sums before it a core knows where its ids start; it walks its bags, counts the
//      ids of every (bucket, bag) in a UB tile with a row per bucket, writes the tile to
//      new_lengths (bucket-major: one strided DMA per bag chunk; two tiles, so that one leaves
//      while the next is counted) and publishes its per-bucket totals; (SyncAll)
//   2. a core's ids of bucket p land in one contiguous run of new_indices, starting after all
//      ids of buckets < p and the ids of bucket p of the cores before it. From the published
//      totals it sets a cursor per bucket, walks its bags again and appends every id (weight,
//      position) to its bucket's UB staging ring, whose halves are flushed by DMA as they fill
//      (the other half keeps filling meanwhile); unbucketize_permute follows the input order,
//      so it is written a piece at a time from two alternating buffers. A flush waits only for
//      the flush before it, so the writes overlap the reads of the next ids.
// indices are read twice, lengths and weights once (a core's lengths stay in UB for the three
// phases when they take at most a sixth of it; else they are read in each phase); every output
// is written once.
// UB limits the buckets: phase 1 needs two 32-byte tile rows per bucket, phase 2 sixteen staged
// ids per bucket (and three int64 cursors). When that does not fit, one bank of each (one tile
// row, eight staged ids, two cursors), each write waited for before the buffer is refilled. With
// 192 KiB that is about 1000 buckets with int64 ids, weights and positions, 3700 with int32 ids
// alone; larger my_size are rejected.
#ifndef BLOCK_BUCKETIZE_SPARSE_FEATURES_TILING_H
#define BLOCK_BUCKETIZE_SPARSE_FEATURES_TILING_H

#include "block_bucketize_sparse_features_op_args.h"
#include "block_bucketize_sparse_features_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<BlockBucketizeSparseFeaturesTilingData> BlockBucketizeSparseFeaturesTiling(
    const BlockBucketizeSparseFeaturesArgs& a, const PlatformInfo& p) {
    const bool bucketizePos = a.bucketizePos != 0;
    const bool sequence = a.sequence != 0;
    const int64_t mySize = a.mySize;
    TilingPlan<BlockBucketizeSparseFeaturesTilingData> plan;
    BlockBucketizeSparseFeaturesTilingData& td = plan.data;
    td.bags = a.lengths.dims[0];
    td.numIndices = a.indices.dims[0];
    td.tables = a.blockSizes.dims[0];
    const int64_t n = td.numIndices;
    const std::string nStr = std::to_string(n);
    if (td.tables < 1)
        return Reject("block_sizes must not be empty (it has one entry per table)");
    if (a.blockSizes.dtype != a.indices.dtype) {
        return Reject(std::string("block_sizes has dtype ") + DTypeName(a.blockSizes.dtype) +
                      " but must have the dtype of indices (" + DTypeName(a.indices.dtype) + ")");
    }
    if (mySize < 1 || mySize > 4095) {
        return Reject("my_size must be in [1, 4095], got " + std::to_string(mySize));
    }
    if (a.weights.present && a.weights.dims[0] != n) {
        return Reject("weights size " + std::to_string(a.weights.dims[0]) +
                      " is not equal to indices size " + nStr);
    }
    td.vbe = a.batchSizePerFeature.present ? 1 : 0;
    if (td.vbe) {
        if (a.batchSizePerFeature.dims[0] != td.tables) {
            return Reject("batch_size_per_feature must have T = " + std::to_string(td.tables) +
                          " entries, got " + std::to_string(a.batchSizePerFeature.dims[0]));
        }
    } else {
        td.batch = td.bags / td.tables;
        if (td.batch * td.tables != td.bags) {
            return Reject("lengths size " + std::to_string(td.bags) + " is not a multiple of T = " +
                          std::to_string(td.tables) + " (the size of block_sizes)");
        }
    }
    td.hasTnb = a.totalNumBlocks.present ? 1 : 0;
    if (td.hasTnb && a.totalNumBlocks.dims[0] != td.tables) {
        return Reject("total_num_blocks must have T = " + std::to_string(td.tables) +
                      " entries, got " + std::to_string(a.totalNumBlocks.dims[0]));
    }
    if (!a.newLengths.present || a.newLengths.ndim != 1 ||
        a.newLengths.dims[0] != mySize * td.bags) {
        return Reject("new_lengths must have shape [my_size * lengths size] = [" +
                      std::to_string(mySize * td.bags) + "], got " + a.newLengths.Shape());
    }
    auto sized = [&](const TensorDesc& t) { return t.present && t.ndim == 1 && t.dims[0] == n; };
    if (!sized(a.newIndices))
        return Reject("new_indices must have shape [" + nStr + "], got " + a.newIndices.Shape());
    if (a.weights.present != a.newWeights.present) {
        return Reject("new_weights must be given exactly when weights are");
    }
    if (a.weights.present && !sized(a.newWeights)) {
        return Reject("new_weights must have shape [" + nStr + "], got " + a.newWeights.Shape());
    }
    if (bucketizePos != a.newPos.present)
        return Reject("new_pos must be given exactly when bucketize_pos is set");
    if (bucketizePos && !sized(a.newPos))
        return Reject("new_pos must have shape [" + nStr + "], got " + a.newPos.Shape());
    if (sequence != a.unbucketizePermute.present) {
        return Reject("unbucketize_permute must be given exactly when sequence is set");
    }
    if (sequence && !sized(a.unbucketizePermute)) {
        return Reject("unbucketize_permute must have shape [" + nStr + "], got " +
                      a.unbucketizePermute.Shape());
    }
    td.mySize = mySize;
    td.hasWeights = a.weights.present ? 1 : 0;
    td.bucketizePos = bucketizePos ? 1 : 0;
    td.sequence = sequence ? 1 : 0;
    td.keepOrigIdx = a.keepOrigIdx != 0 ? 1 : 0;

    const int64_t perId =
        DTypeSize(a.indices.dtype) * (2 + td.bucketizePos + td.sequence) + td.hasWeights * 8;
    const int64_t work = td.bags * DTypeSize(a.lengths.dtype) * (3 + mySize) + n * perId;
    SetCoreNum(plan, CoresForBytes(p, work));

    // UB: four stream pieces (lengths, indices, weights, permute; the last two only when used),
    // three small windows, the per-core sums; the rest is the arena whose layout differs between
    // phase 1 (bucket totals + count tile) and phase 2 (cursors, flush marks, staging). Pieces
    // of ub/16 keep DMAs long; many buckets get smaller pieces to make room in the arena.
    const int64_t ub = UbBytes(p);
    const int64_t lenBytes = DTypeSize(a.lengths.dtype);
    const int64_t idxBytes = DTypeSize(a.indices.dtype);
    const int64_t perBucket = AlignedBytes(mySize, 8);  // one int64 per bucket
    const int64_t lenPerBlock = kBlockBytes / lenBytes;
    const int64_t stageElem = idxBytes + td.hasWeights * 4 + td.bucketizePos * idxBytes;
    td.windowBytes = 256;
    td.totalsBytes = static_cast<uint32_t>(PerCoreBlocks(td.coreNum));
    const int64_t spanBytes = AlignedBytes(CeilDiv(td.bags, td.coreNum), lenBytes);
    for (const int64_t share : {16, 64}) {
        // Two banks (tiles, halves of a staging ring, permute buffers) let writes overlap; with
        // many buckets one bank leaves room for them, and each write is waited for at once.
        td.banks = share == 16 ? 2 : 1;
        const int64_t stream = UbShare(p, share);
        const bool resident = share == 16 && spanBytes <= UbShare(p, 6);
        // Just the slice: a window loads all it holds, so a larger one would read past the slice.
        td.lenWinBytes = static_cast<uint32_t>(resident ? spanBytes : stream);
        const int64_t fixed = td.lenWinBytes + stream + (td.hasWeights ? stream : kBlockBytes) +
                              (td.sequence ? td.banks * stream : kBlockBytes) + 3 * td.windowBytes +
                              td.totalsBytes + kBlockBytes;
        const int64_t arena = Max64(AlignDown(ub - fixed, kBlockBytes), 0);
        td.streamBytes = static_cast<uint32_t>(stream);
        td.arenaBytes = static_cast<uint32_t>(arena);
        td.lenChunk = stream / lenBytes;
        td.piece = stream / idxBytes;
        td.countRow =
            Min64(AlignDown((arena - perBucket) / (td.banks * mySize * lenBytes), lenPerBlock),
                  td.lenChunk);
        // A ring's half stays a whole number of 32-byte blocks for 4-byte weights: 8 entries.
        const int64_t stageMin = 8 * td.banks;
        td.stageK = Min64(
            AlignDown((arena - (1 + td.banks) * perBucket) / (mySize * stageElem), stageMin), 2048);
        if (td.countRow >= lenPerBlock && td.stageK >= stageMin)
            break;
    }
    if (td.countRow < lenPerBlock || td.stageK < 8 * td.banks) {
        return Reject("my_size " + std::to_string(mySize) +
                      " is too large: the unified buffer cannot hold the per-bucket state for "
                      "that many buckets");
    }
    td.arenaTile = perBucket;
    td.arenaFlush = perBucket;
    td.arenaStart = 2 * perBucket;  // with two banks only
    td.arenaStageIdx = (1 + td.banks) * perBucket;
    td.arenaStageW = td.arenaStageIdx + mySize * td.stageK * idxBytes;
    td.arenaStagePos = td.arenaStageW + td.hasWeights * mySize * td.stageK * 4;
    td.bucketRow = perBucket / 8;
    td.wsBucket = PerCoreBlocks(td.coreNum);
    plan.workspace_bytes = static_cast<uint64_t>(td.wsBucket + td.coreNum * perBucket);
    return plan;
}

}  // namespace mxrec

#endif  // BLOCK_BUCKETIZE_SPARSE_FEATURES_TILING_H
