// Tiling of SplitEmbeddingBackward (pure; shared by the CANN op_host and the sim launcher).
//
// The work unit is a run: consecutive entries of sorted_positions naming the same weight row.
// Cores take slices of sorted_positions; a core owns the runs that start inside its slice (it
// skips a run continued from the previous slice and finishes one running past its end), so
// every row is summed and updated by exactly one core and no inter-core sync is needed.
//
// Runs are not alike: a hot row's run is long and costs one gradient row per entry plus one
// update, a cold row's is one entry and one update, so slices of equal length can differ a lot
// in cost (Zipf ids: the tables' cold tails). When the caller passes run_slots (each entry's run
// rank: the number of runs before its own, which the adapter has from its sort) the slices are
// of equal cost instead, each core finding its own bounds by a binary search of run_slots: an
// entry costs posCost (its gradient row's bytes and DMA, its index and position), a run runCost
// (its weight and state rows' DMAs in and out). A DMA's fixed cost is taken as
// kSebDmaFixedBytes, as in split_embedding_forward's split of bags.
//
// A row is handled whole in UB: the accumulated gradient, one grad_output row, the weight row
// and, for Adagrad, the momentum row (Adam, LAMB: both moment rows; row-wise Adagrad with or
// without counter, the partial row-wise ones, LARS-SGD and LAMB need a whole row's sum of
// squares before they may update any column). The gradient rows take two buffers (one fetched
// ahead), and so do the weight rows and exact Adagrad's moment rows (the next run's arrive
// while this run's are updated and the previous run's leave). max_d therefore has to fit the
// unified buffer: larger values are rejected rather than chunked, which at 192 KiB with the
// three windows below still allows D up to 7672 (SGD, row-wise Adagrad with or without
// counter), 6576 (LARS-SGD, the partial row-wise ones), 5752 (Adagrad, Adam, LAMB), 15352
// (dense, NONE); the sorted_bags and sorted_indices windows take 4 KiB each of that.
#ifndef SPLIT_EMBEDDING_BACKWARD_TILING_H
#define SPLIT_EMBEDDING_BACKWARD_TILING_H

#include <cmath>

#include "split_embedding_backward_op_args.h"
#include "split_embedding_backward_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

// A DMA's fixed cost in bytes (split_embedding_forward's kSefDmaFixedBytes: the bytes a core's
// share of the HBM bandwidth moves in the cost model's per-DMA cycles; only ratios matter).
constexpr int64_t kSebDmaFixedBytes = 512;

inline TilingPlan<SplitEmbeddingBackwardTilingData> SplitEmbeddingBackwardTiling(
    const SplitEmbeddingBackwardArgs& a, const PlatformInfo& p) {
    const int64_t optimizer = a.optimizer;
    const int64_t pooling = a.poolingMode;
    const int64_t maxD = a.maxD;
    // The op.toml declares these optional only because of the argument order (see op.toml).
    const char* required[] = {"weights_offsets", "d_offsets", "indices", "offsets",
                              "sorted_positions"};
    const TensorDesc* requiredDesc[] = {&a.weightsOffsets, &a.dOffsets, &a.indices, &a.offsets,
                                        &a.sortedPositions};
    for (int i = 0; i < 5; ++i) {
        if (!requiredDesc[i]->present)
            return Reject(std::string(required[i]) + " is required");
    }
    if (optimizer < 0 || optimizer > 10) {
        return Reject(
            "optimizer must be 0 (sgd), 1 (adagrad), 2 (rowwise_adagrad), 3 (dense), 4 (adam), "
            "5 (none), 6 (lars_sgd), 7 (partial_rowwise_adam), 8 (lamb), 9 "
            "(partial_rowwise_lamb) or 10 (rowwise_adagrad_with_counter), got " +
            std::to_string(optimizer));
    }
    if (pooling < 0 || pooling > 2) {
        return Reject("pooling_mode must be 0 (sum), 1 (mean) or 2 (none), got " +
                      std::to_string(pooling));
    }
    TilingPlan<SplitEmbeddingBackwardTilingData> plan;
    SplitEmbeddingBackwardTilingData& td = plan.data;
    td.tables = a.weightsOffsets.dims[0];
    td.numIndices = a.indices.dims[0];
    td.numWeights = a.weights.dims[0];
    if (td.tables < 1)
        return Reject("weights_offsets must have T >= 1 entries");
    if (a.dOffsets.dims[0] != td.tables + 1) {
        return Reject("d_offsets must have T + 1 = " + std::to_string(td.tables + 1) +
                      " entries, got " + std::to_string(a.dOffsets.dims[0]));
    }
    const int64_t totalB = a.offsets.dims[0] - 1;
    if (totalB < 0)
        return Reject("offsets must have T * B + 1 >= 1 entries");
    const bool vbe = a.bOffsets.present;
    if (a.vbeOutputOffsets.present != vbe || a.vbeBOffsetsRank.present != vbe) {
        return Reject(
            "variable batch per feature needs b_offsets, vbe_output_offsets and "
            "vbe_b_offsets_rank together");
    }
    td.bags = totalB;
    td.vbe = vbe ? 1 : 0;
    td.gradLen = a.gradOutput.Numel();
    if (vbe) {
        if (pooling == 2)
            return Reject("variable batch per feature needs pooling_mode sum or mean, not none");
        if (a.bOffsets.dims[0] != td.tables + 1) {
            return Reject("b_offsets size " + std::to_string(a.bOffsets.dims[0]) +
                          " is not T + 1 = " + std::to_string(td.tables + 1));
        }
        td.ranks = a.vbeBOffsetsRank.dims[1] - 1;
        if (a.vbeBOffsetsRank.dims[0] != td.tables || td.ranks < 1) {
            return Reject(
                "vbe_b_offsets_rank must be [T, R + 1] with T = " + std::to_string(td.tables) +
                " and R >= 1, got " + a.vbeBOffsetsRank.Shape());
        }
        if (a.vbeOutputOffsets.dims[0] != td.ranks * td.tables + 1) {
            return Reject("vbe_output_offsets size " + std::to_string(a.vbeOutputOffsets.dims[0]) +
                          " is not R * T + 1 = " + std::to_string(td.ranks * td.tables + 1));
        }
        if (a.gradOutput.ndim != 1) {
            return Reject(
                "grad_output must be 1-D (the forward's VBE layout) with variable batch per "
                "feature, got " +
                a.gradOutput.Shape());
        }
    } else {
        td.batch = totalB / td.tables;
        if (td.batch * td.tables != totalB) {
            return Reject("offsets size " + std::to_string(totalB + 1) + " is not T (" +
                          std::to_string(td.tables) + ") * B + 1");
        }
        if (a.gradOutput.ndim != 2)
            return Reject("grad_output must be 2-D, got " + a.gradOutput.Shape());
    }
    if (a.sortedPositions.dims[0] != td.numIndices) {
        return Reject("sorted_positions must have N = " + std::to_string(td.numIndices) +
                      " entries, got " + std::to_string(a.sortedPositions.dims[0]));
    }
    td.hasSortedBags = a.sortedBags.present ? 1 : 0;
    if (a.sortedBags.present && a.sortedBags.dims[0] != td.numIndices) {
        return Reject("sorted_bags must have N = " + std::to_string(td.numIndices) +
                      " entries, got " + std::to_string(a.sortedBags.dims[0]));
    }
    td.hasSortedIndices = a.sortedIndices.present ? 1 : 0;
    if (a.sortedIndices.present && a.sortedIndices.dims[0] != td.numIndices) {
        return Reject("sorted_indices must have N = " + std::to_string(td.numIndices) +
                      " entries, got " + std::to_string(a.sortedIndices.dims[0]));
    }
    td.hasIndiceWeights = a.indiceWeights.present ? 1 : 0;
    if (a.indiceWeights.present && a.indiceWeights.dims[0] != td.numIndices) {
        return Reject("indice_weights must have N = " + std::to_string(td.numIndices) +
                      " entries, got " + std::to_string(a.indiceWeights.dims[0]));
    }
    td.gradRows = a.gradOutput.dims[0];
    td.gradStride = vbe ? 1 : a.gradOutput.dims[1];
    const int64_t wantRows = pooling == 2 ? td.numIndices : td.batch;
    if (!vbe && td.gradRows != wantRows) {
        return Reject("grad_output must have " + std::string(pooling == 2 ? "N" : "B") + " = " +
                      std::to_string(wantRows) + " rows, got " + a.gradOutput.Shape());
    }
    // Which optimizer state each mode reads: momentum1 (with momentum1_offsets), momentum2.
    const bool none = optimizer == 5;
    const bool counter = optimizer == 10;
    const bool adamLike = optimizer == 4 || (optimizer >= 7 && optimizer <= 9);
    const bool useM1 = optimizer == 1 || optimizer == 2 || optimizer == 4 || optimizer >= 6;
    const bool useM2 = adamLike;
    if (useM1 && (!a.momentum1.present || !a.momentum1Offsets.present)) {
        return Reject("momentum1 and momentum1_offsets are required by optimizer " +
                      std::to_string(optimizer));
    }
    if (useM2 && (!a.momentum2.present || !a.momentum2Offsets.present)) {
        return Reject("momentum2 and momentum2_offsets are required by optimizer " +
                      std::to_string(optimizer));
    }
    if (a.momentum1Offsets.present && a.momentum1Offsets.dims[0] != td.tables) {
        return Reject("momentum1_offsets must have T = " + std::to_string(td.tables) + " entries");
    }
    if (a.momentum2Offsets.present && a.momentum2Offsets.dims[0] != td.tables) {
        return Reject("momentum2_offsets must have T = " + std::to_string(td.tables) + " entries");
    }
    if (counter) {
        if (!a.prevIter.present || !a.prevIterOffsets.present)
            return Reject("prev_iter and prev_iter_offsets are required by optimizer 10");
        if (!a.rowCounter.present || !a.rowCounterOffsets.present)
            return Reject("row_counter and row_counter_offsets are required by optimizer 10");
        if (a.prevIterOffsets.dims[0] != td.tables || a.rowCounterOffsets.dims[0] != td.tables) {
            return Reject("prev_iter_offsets and row_counter_offsets must have T = " +
                          std::to_string(td.tables) + " entries");
        }
        td.numPrevIter = a.prevIter.dims[0];
        td.numRowCounter = a.rowCounter.dims[0];
        // fbgemm asserts it (max_counter divides the tail-id adjustment).
        if (a.maxCounter == 0.0)
            return Reject("max_counter must not be 0 for optimizer 10");
        if (a.weightDecayMode < 0 || a.weightDecayMode > 2) {
            return Reject("weight_decay_mode must be 0, 1 or 2 for optimizer 10, got " +
                          std::to_string(a.weightDecayMode));
        }
        const float maxCounter = static_cast<float>(a.maxCounter);
        const float tail = static_cast<float>(a.tailIdThreshold);
        td.counterHalflife = a.counterHalflife;
        td.learningRateMode = a.learningRateMode;
        td.regularizationMode = a.regularizationMode;
        td.adjustmentEnabled = a.adjustmentIter <= 0 || a.iter > a.adjustmentIter ? 1 : 0;
        td.iterValue = static_cast<float>(a.iter);
        td.counterLogRho =
            a.counterHalflife > 0 ? std::log(2.0f) / static_cast<float>(a.counterHalflife) : 0.0f;
        td.adjustmentUb = static_cast<float>(a.adjustmentUb);
        td.maxCounter = maxCounter;
        td.tailIdThreshold = a.isTailIdThreshRatio == 1 ? std::floor(tail * maxCounter) : tail;
        td.weightNormCoefficient = static_cast<float>(a.weightNormCoefficient);
        td.lowerBound = static_cast<float>(a.lowerBound);
    }
    td.numMomentum = useM1 ? a.momentum1.dims[0] : 0;
    td.numMomentum2 = useM2 ? a.momentum2.dims[0] : 0;
    if (optimizer == 3 || none) {
        if (!a.gradWeights.present) {
            return Reject("grad_weights is required by optimizer " + std::to_string(optimizer) +
                          " (dense or none)");
        }
        td.numGradWeights = a.gradWeights.dims[0];
        if (optimizer == 3 && td.numGradWeights != td.numWeights) {
            return Reject("grad_weights must have W = " + std::to_string(td.numWeights) +
                          " entries, got " + std::to_string(a.gradWeights.dims[0]));
        }
    }
    if (none && !a.runSlots.present)
        return Reject("run_slots is required by optimizer 5 (none)");
    if (a.runSlots.present && a.runSlots.dims[0] != td.numIndices) {
        return Reject("run_slots must have N = " + std::to_string(td.numIndices) +
                      " entries, got " + std::to_string(a.runSlots.dims[0]));
    }
    if (maxD < 0)
        return Reject("max_d must be >= 0, got " + std::to_string(maxD));
    td.optimizer = optimizer;
    td.pooling = pooling;
    td.learningRate = static_cast<float>(a.learningRate);
    td.eps = static_cast<float>(a.eps);
    td.weightDecay = static_cast<float>(a.weightDecay);
    td.weightDecayMode = a.weightDecayMode;
    td.clip = a.gradientClipping != 0 ? 1 : 0;
    td.maxGradient = static_cast<float>(a.maxGradient);
    td.maxD = maxD;
    td.eta = static_cast<float>(a.eta);
    td.momentum = static_cast<float>(a.momentum);
    if (adamLike) {
        // fbgemm divides by 1 - powf(beta, iter) (powf in float, the rest in double); iter 0
        // or beta 1 would divide by zero, so they are refused rather than turned into NaN.
        const int64_t iter = a.iter;
        if (iter < 1)
            return Reject("iter must be >= 1 for optimizer " + std::to_string(optimizer) +
                          " (bias correction), got " + std::to_string(iter));
        const float beta[2] = {static_cast<float>(a.beta1), static_cast<float>(a.beta2)};
        float scale[2];
        for (int k = 0; k < 2; ++k) {
            const double correction =
                1.0 - static_cast<double>(std::pow(beta[k], static_cast<float>(iter)));
            if (correction == 0.0 || !std::isfinite(correction)) {
                return Reject("beta" + std::to_string(k + 1) + " " + std::to_string(beta[k]) +
                              " gives a zero or non-finite bias correction 1 - beta^iter at iter " +
                              std::to_string(iter));
            }
            scale[k] = static_cast<float>(1.0 / correction);
        }
        td.beta1 = beta[0];
        td.beta2 = beta[1];
        td.oneMinusBeta1 = static_cast<float>(1.0 - static_cast<double>(beta[0]));
        td.oneMinusBeta2 = static_cast<float>(1.0 - static_cast<double>(beta[1]));
        td.biasScale1 = scale[0];
        td.biasScale2 = scale[1];
    }

    // UB: the sorted_positions window (and as large ones over sorted_bags and sorted_indices), a
    // 32-byte slot, and
    // the row buffers (accumulated gradient, two grad_output rows, a scratch row; weight row in
    // the optimizer modes; a first-moment row for Adagrad, LARS-SGD and the partial row-wise
    // ones, both moment rows for Adam and LAMB).
    td.windowBytes = static_cast<uint32_t>(Min64(UbShare(p, 24), 4096));
    const int64_t rowBytes = AlignedBytes(Max64(maxD, 1), 4);
    // The gradient rows and the weight rows take two buffers (one fetched ahead), and so do
    // Adagrad's moment rows; the others one each. Dense and NONE need no scratch or weight row.
    const int64_t rowsOf[11] = {6, 8, 6, 3, 8, 3, 7, 7, 8, 7, 6};
    const int64_t rows = rowsOf[optimizer];
    const int64_t windows = 1 + td.hasSortedBags + td.hasSortedIndices;
    // a 32-byte slot, and row-wise Adagrad's two one-float moments
    const int64_t slots = optimizer == 2 ? 3 : 1;
    const int64_t avail = UbBytes(p) - windows * td.windowBytes - slots * kBlockBytes;
    if (rows * rowBytes > avail) {
        return Reject("max_d " + std::to_string(maxD) + " needs " +
                      std::to_string(rows * rowBytes) + " bytes of unified buffer for its " +
                      std::to_string(rows) + " row buffers, more than the " +
                      std::to_string(avail) + " available");
    }
    td.rowBytes = static_cast<uint32_t>(rowBytes);
    // Work per index: its position and bag (searched, or read from sorted_bags), and one
    // grad_output row in, plus (at most) one weight/momentum row in and out.
    const int64_t work = td.numIndices * (32 + 4 * Max64(maxD, 1) * rows);
    SetCoreNum(plan, CoresForBytes(p, work));
    // Row DMAs per run (weights and full-width state in and out; dense and NONE write one) and
    // one-float state DMAs (row-wise state in and out).
    const int64_t runRowsOf[11] = {2, 4, 2, 1, 6, 1, 4, 4, 6, 4, 2};
    const int64_t runSmallOf[11] = {0, 0, 2, 0, 0, 0, 0, 2, 0, 2, 6};
    const int64_t rowCost = 4 * Max64(maxD, 1) + kSebDmaFixedBytes;
    td.hasRunRanks = a.runSlots.present && !none ? 1 : 0;
    td.posCost = rowCost + 16;  // the row, and its position and bag (8 bytes each)
    td.runCost = runRowsOf[optimizer] * rowCost + runSmallOf[optimizer] * kSebDmaFixedBytes;
    plan.tiling_key = SEB_KEY_DEFAULT;
    plan.workspace_bytes = 0;
    return plan;
}

}  // namespace mxrec

#endif  // SPLIT_EMBEDDING_BACKWARD_TILING_H
