// Tiling struct of HstuDenseForward (filled by op_host/hstu_dense_forward_tiling.h).
#ifndef HSTU_DENSE_FORWARD_TILING_DATA_H
#define HSTU_DENSE_FORWARD_TILING_DATA_H

#include <cstdint>

#include "hstu_common.h"
#include "kernel_tiling/kernel_tiling.h"

struct HstuDenseForwardTilingData {
    AscendC::tiling::TCubeTiling qk;    // S = Q K^T: [blockQ, blockK] over D, C in q's dtype
    AscendC::tiling::TCubeTiling sv;    // O += P V: [blockQ, D] over blockK, C float32
    AscendC::tiling::TCubeTiling qkL1;  // causal diagonal tiles: S = Q K^T, Q and K in L1
    AscendC::tiling::TCubeTiling svL1;  // O += P V, V in L1
    int64_t batch;                      // B (jagged: len(seq_offset) - 1)
    int64_t seqLen;    // max_seq_len: S of the normal layout, row stride of mask and bias
    int64_t heads;     // N
    int64_t dim;       // D
    int64_t dimPad;    // D rounded up to 16: the row stride of the O accumulator
    int64_t rows;      // T = q.size(0) (jagged) or B * S (normal): rows of [T, N, D]
    int64_t jagged;    // 1: sequence b is rows offsets[b]:offsets[b + 1]; 0: b * S, S rows
    int64_t maskType;  // 0 causal, 2 none, 3 custom
    int64_t hasBias;
    int64_t squareBatch;  // leading size of mask and attn_bias (B, or the non-empty sequences)
    int64_t blockQ;       // query rows per block (a multiple of 16, at most 256)
    int64_t blockK;       // keys per call left of the diagonal: kHstuBlockK, tiled kHstuTiledBlockK
    int64_t tileRows;     // causal, L1 plan: rows of the diagonal tiles (32 or 64); 0: untiled
    int64_t chunkRows;    // score rows per vector pass (UB)
    int64_t outRows;      // O accumulator rows per pass when writing O (UB)
    int64_t workers;      // vector cores with work ranges = 2 * blockDim
    int64_t
        offsetSum;  // sum of (i + 1) * seq_offset[i], wrapping: the kernel compares offsets with it
    int64_t slotBytes;       // workspace per worker for S / P: blockQ * blockK elements
    int64_t accBytes;        // workspace per worker for the O accumulator: blockQ * dimPad float32
    uint32_t scoreInBytes;   // UB: one S chunk in q's dtype (also bias and mask chunks)
    uint32_t scoreOutBytes;  // UB: one P chunk in q's dtype
    uint32_t tempBytes;      // UB: each float32 work buffer of a chunk (two; 16-bit: three)
    uint32_t rampBytes;      // UB: -j for the causal mask's rows (float32, blockK)
    uint32_t accInBytes;     // UB: O accumulator rows (float32)
    uint32_t accOutBytes;    // UB: O rows in q's dtype
    uint32_t qL1Bytes;       // TSCM: a block's Q as NZ tiles of tileRows rows
    uint32_t kvL1Bytes;      // TSCM: one tile of K (and one of V) as NZ
    float scale;             // s: silu_scale, or 1 / max_seq_len
    uint32_t reserved;
    mxrec::HstuPos start[mxrec::kHstuMaxWorkers + 1];  // worker w: [start[w], start[w + 1])
};

#endif  // HSTU_DENSE_FORWARD_TILING_DATA_H
