// Tiling struct of PermutePooledEmbs.
#ifndef PERMUTE_POOLED_EMBS_TILING_DATA_H
#define PERMUTE_POOLED_EMBS_TILING_DATA_H

#include <cstdint>

struct PermutePooledEmbsTilingData {
    int64_t rows;           // B
    int64_t inCols;         // D: dim 1 of pooled_embs
    int64_t outCols;        // dim 1 of the output
    int64_t inner;          // elements per column (the trailing dims' product)
    int64_t blocks;         // T = permute_list.size(0)
    int64_t coreNum;        // core c moves rows SplitEven(B, coreNum, c)
    uint32_t listBytes;     // one of the two int64 lists (offsets, permute) in UB
    uint32_t copyBufBytes;  // one of the two copy buffers
};

#endif  // PERMUTE_POOLED_EMBS_TILING_DATA_H
