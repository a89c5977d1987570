// Tiling struct of SplitEmbeddingForward.
#ifndef SPLIT_EMBEDDING_FORWARD_TILING_DATA_H
#define SPLIT_EMBEDDING_FORWARD_TILING_DATA_H

#include <cstdint>

struct SplitEmbeddingForwardTilingData {
    int64_t tables;      // T
    int64_t batch;       // B = (offsets.size(0) - 1) / T (0 with VBE: each feature has its own)
    int64_t bags;        // offsets.size(0) - 1: T * B, or total_B with VBE
    int64_t ranks;       // VBE: R (vbe_b_offsets_rank is [T, R + 1]); 0 without VBE
    int64_t outLen;      // out.numel()
    int64_t numIndices;  // N
    int64_t weightsLen;  // W
    int64_t totalD;      // total_d attr (d_offsets[T])
    int64_t maxD;        // max_d attr (the row width in none mode)
    int64_t outWidth;    // elements per output row: total_d pooled, max_d none (unused by VBE)
    int64_t units;       // output units split over cores: bags pooled (VBE too), indices none
    int64_t mode;        // 0 sum, 1 mean, 2 none
    int64_t hasWeights;  // indice_weights given
    int64_t coreNum;
    int64_t slot;           // elements per UB row slot (a multiple of 16): also the column chunk
    int64_t groupRows;      // output rows accumulated in UB before one strided write (<= 4095)
    int64_t batchRows;      // distinct weight rows fetched per batch before the vector adds
    int64_t occRows;        // occurrences (adds) of a batch's rows, at most
    int64_t hashBits;       // the batch's hash table of row indices has 1 << hashBits entries
    int64_t idCost;         // pooled and VBE split over cores: the cost of one index and of one
    int64_t bagCost;        // bag, in bytes-equivalents (a bag's share is idCost * its length
                            // + bagCost); 0: an even split of the units by count
    uint32_t windowBytes;   // UB windows over offsets, indices and indice_weights
    uint32_t rowBufBytes;   // one of the two batch buffers (batchRows * slot weights elements)
    uint32_t castBufBytes;  // float32 copy of a 16-bit batch (0 for float32 weights)
    uint32_t accBufBytes;   // groupRows * slot float32 accumulators
    uint32_t metaBytes;     // per occurrence: accumulator row (int32), slot (int32), weight
    uint32_t keyBytes;      // per slot: the row index (int64)
    uint32_t hashBytes;     // the hash table (int32: slot + 1, 0 empty)
    uint32_t tmpBytes;      // one float32 row for weighted copies (0 without indice weights)
};

#define SEF_KEY_POOLED 1  // sum or mean
#define SEF_KEY_NOBAG 2   // none
#define SEF_KEY_VBE 3     // sum or mean, variable batch per feature (fbgemm's VBE layout)

#endif  // SPLIT_EMBEDDING_FORWARD_TILING_DATA_H
