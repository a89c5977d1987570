// Tiling struct of BlockBucketizeSparseFeatures.
#ifndef BLOCK_BUCKETIZE_SPARSE_FEATURES_TILING_DATA_H
#define BLOCK_BUCKETIZE_SPARSE_FEATURES_TILING_DATA_H

#include <cstdint>

struct BlockBucketizeSparseFeaturesTilingData {
    int64_t bags;        // L = lengths.numel() (T * B, or sum(batch_size_per_feature) with VBE)
    int64_t numIndices;  // N
    int64_t tables;      // T
    int64_t batch;       // B = L / T (without VBE)
    int64_t mySize;      // buckets
    int64_t vbe;         // batch_size_per_feature given
    int64_t hasTnb;      // total_num_blocks given
    int64_t hasWeights;
    int64_t bucketizePos;  // write new_pos
    int64_t sequence;      // write unbucketize_permute
    int64_t keepOrigIdx;
    int64_t coreNum;
    int64_t lenChunk;  // lengths per UB piece
    int64_t piece;     // indices (and weights, permute entries) per UB piece
    int64_t countRow;  // phase 1: bags per count tile row (a row per bucket)
    int64_t stageK;    // phase 2: staged outputs per bucket (a ring of `banks` parts)
    int64_t banks;     // 2: tiles, ring halves and permute buffers alternate; 1: one of each
    int64_t
        wsBucket;  // workspace byte offset of the per-core bucket totals (after the length sums)
    int64_t bucketRow;      // int64 elements per core row of bucket totals (32-byte multiple)
    int64_t arenaTile;      // arena byte offsets: phase 1 count tile (after the bucket totals),
    int64_t arenaFlush;     //   phase 2 flush marks (after the cursors),
    int64_t arenaStart;     //   each bucket's first position (its staging ring's origin),
    int64_t arenaStageIdx;  //   staged new_indices,
    int64_t arenaStageW;    //   staged new_weights,
    int64_t arenaStagePos;  //   staged new_pos
    uint32_t streamBytes;   // each of the lengths / indices / weights / permute pieces
    uint32_t lenWinBytes;   // the lengths window: a core's whole slice when it fits
    uint32_t windowBytes;   // block_sizes, batch sizes, total_num_blocks windows
    uint32_t arenaBytes;
    uint32_t totalsBytes;  // per-core length sums read back
};

#endif  // BLOCK_BUCKETIZE_SPARSE_FEATURES_TILING_DATA_H
