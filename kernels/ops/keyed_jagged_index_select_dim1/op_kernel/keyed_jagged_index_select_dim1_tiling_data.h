// Tiling struct of KeyedJaggedIndexSelectDim1.
#ifndef KEYED_JAGGED_INDEX_SELECT_DIM1_TILING_DATA_H
#define KEYED_JAGGED_INDEX_SELECT_DIM1_TILING_DATA_H

#include <cstdint>

struct KeyedJaggedIndexSelectDim1TilingData {
    int64_t keys;        // T = lengths.size(0) / B
    int64_t batchSize;   // B
    int64_t selected;    // I = indices.size(0)
    int64_t bags;        // T * I output bags
    int64_t valueCount;  // N
    int64_t outValues;   // output.size(0)
    int64_t hasWeights;  // 1 when weights (and output_weights) are given
    int64_t coreNum;
    int64_t rowCached;  // 1: a key's B lengths and offsets fit the row buffers (UB gathers)
    int64_t bagBlock;   // output bags per UB block of the selection phase
    int64_t sumBlock;   // int64 entries per UB block of the scan
    // Copy phase: output elements gathered per chunk, output bags per block of bag starts and
    // offsets, bags at least this long copied by DMA, and what one DMA's fixed cost is worth in
    // bytes of a core's bandwidth (a window of values is staged only when it reads fewer bytes
    // than per-bag copies would cost).
    int64_t chunkElems;
    int64_t metaBags;
    int64_t longBag;
    int64_t dmaWorthBytes;
    // Workspace regions (byte offsets): where each output bag's values start in values, the
    // output bags' lengths turned into exclusive output offsets, per-core totals (32-byte slots).
    int64_t wsStarts;
    int64_t wsOutOffsets;
    int64_t wsTotals;
    // The arena holds the key rows of the selection phase, then the copy phase's staged window
    // of values (stageBytes at stageOffset), its gathered chunk, gather offsets and bag blocks.
    uint32_t arenaBytes;
    uint32_t rowBufBytes;
    uint32_t stageOffset;
    uint32_t stageBytes;
    uint32_t chunkOffset;
    uint32_t gatherOffset;
    uint32_t metaOffset;
    uint32_t blockBufBytes;
    uint32_t copyBufBytes;
    uint32_t fillBufBytes;
    uint32_t windowBytes;
};

#endif  // KEYED_JAGGED_INDEX_SELECT_DIM1_TILING_DATA_H
