// Tiling struct of SplitEmbeddingBackward.
#ifndef SPLIT_EMBEDDING_BACKWARD_TILING_DATA_H
#define SPLIT_EMBEDDING_BACKWARD_TILING_DATA_H

#include <cstdint>

struct SplitEmbeddingBackwardTilingData {
    int64_t tables;          // T
    int64_t batch;           // B = (offsets.size(0) - 1) / T (0 with VBE)
    int64_t bags;            // offsets.size(0) - 1: T * B, or total_B with VBE
    int64_t vbe;             // variable batch per feature: b_offsets and the vbe_ inputs given
    int64_t ranks;           // VBE: R (vbe_b_offsets_rank is [T, R + 1])
    int64_t gradLen;         // grad_output.numel()
    int64_t numIndices;      // N
    int64_t numWeights;      // W = weights.size(0) (also grad_weights in dense mode)
    int64_t numMomentum;     // momentum1.size(0) (0 without)
    int64_t numMomentum2;    // momentum2.size(0) (Adam, LAMB and the partial row-wise ones, else 0)
    int64_t numGradWeights;  // grad_weights.size(0) (dense and NONE, else 0)
    int64_t numPrevIter;     // prev_iter.size(0) (row-wise Adagrad with counter, else 0)
    int64_t numRowCounter;   // row_counter.size(0) (row-wise Adagrad with counter, else 0)
    int64_t gradRows;        // grad_output.size(0)
    int64_t gradStride;      // grad_output.size(1)
    int64_t maxD;
    // 0 sgd, 1 adagrad, 2 row-wise adagrad, 3 dense, 4 adam, 5 none, 6 lars-sgd,
    // 7 partial row-wise adam, 8 lamb, 9 partial row-wise lamb, 10 row-wise adagrad with counter
    int64_t optimizer;
    int64_t pooling;  // 0 sum, 1 mean, 2 none
    int64_t hasIndiceWeights;
    int64_t hasSortedBags;     // sorted_bags given: no search of offsets for a position's bag
    int64_t hasSortedIndices;  // sorted_indices given: entries' rows through a UB window
    int64_t weightDecayMode;
    int64_t clip;  // clamp grad_output to [-maxGradient, maxGradient]
    int64_t coreNum;
    // Split by cost (run_slots given and not NONE): an entry of sorted_positions costs posCost,
    // a run runCost more (its rows' DMAs); see the tiling header.
    int64_t hasRunRanks;
    int64_t posCost;
    int64_t runCost;
    // Row-wise Adagrad with counter (fbgemm's rowwise_adagrad_with_counter): what the host can
    // decide once per launch.
    int64_t counterHalflife;
    int64_t learningRateMode;
    int64_t regularizationMode;  // 3 counter-based, 4 CowClip
    int64_t adjustmentEnabled;   // adjustment_iter <= 0 || iter > adjustment_iter
    float iterValue;             // iter as the float prev_iter stores
    float counterLogRho;         // logf(2) / counter_halflife
    float adjustmentUb;
    float maxCounter;
    float tailIdThreshold;  // absolute: floor(ratio * max_counter) already applied
    float weightNormCoefficient;
    float lowerBound;
    float learningRate;
    float eps;
    float weightDecay;
    float maxGradient;
    // Adam and its kin: the moment decays, their complements, and 1 / (1 - beta^iter) (bias
    // correction as a factor, computed once on the host in double so the kernel needs no pow).
    float beta1;
    float beta2;
    float oneMinusBeta1;
    float oneMinusBeta2;
    float biasScale1;
    float biasScale2;
    float eta;             // LARS-SGD
    float momentum;        // LARS-SGD
    uint32_t rowBytes;     // one UB row buffer: maxD floats, 32-byte aligned
    uint32_t windowBytes;  // one UB window over sorted_positions (and one over sorted_bags)
};

// One kernel binary (no TILING_KEY_IS): CANN's operator compiler keys it 0.
#define SEB_KEY_DEFAULT 0

#endif  // SPLIT_EMBEDDING_BACKWARD_TILING_DATA_H
