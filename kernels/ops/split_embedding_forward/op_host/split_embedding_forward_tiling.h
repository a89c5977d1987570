// Tiling of SplitEmbeddingForward (pure; shared by the CANN op_host and the sim launcher).
//
// Output units are split evenly over cores: bags k = t * B + b in pooled modes (with variable
// batch per feature, bags k = b_offsets[t] + b, written at their (rank, feature) place; a core's
// bags
// are consecutive, so it meets few tables and reads offsets and indices sequentially), indices
// in none mode (each output row is one index). The tiling cannot see bag lengths, so the split
// is by count, not by rows fetched. A core takes its units table by table, in groups of
// groupRows output rows accumulated in float32 in UB and written with one strided DMA; the
// weight rows of a group are fetched in batches of up to batchRows distinct rows (a row met again
// while its batch fills is fetched once: hot rows repeat within nearby bags) into a
// double-buffered queue, then (cast to float32 and scaled by their indice weight) added to their
// accumulator rows, one add per occurrence (up to occRows a batch) in the order of the indices.
// Rows wider than the UB slot are done in column chunks of `slot` elements. No workspace.
//
// Bags are not all alike: their lengths vary and a core's time goes mostly into its rows' DMAs,
// one per index. So in pooled modes (VBE too) each core finds its run of consecutive bags itself,
// from offsets, by cost: a bag costs idCost per index (the row's bytes, its index and weight,
// and the DMA's fixed cost, taken as what kSefDmaFixedBytes take at a core's bandwidth share) plus
// bagCost (its output row and offset). The split stays by bags: a bag is never divided, so every
// output row is summed in the same order whatever the core count.
#ifndef SPLIT_EMBEDDING_FORWARD_TILING_H
#define SPLIT_EMBEDDING_FORWARD_TILING_H

#include "split_embedding_forward_op_args.h"
#include "split_embedding_forward_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

// A DMA's fixed cost in bytes: about what a core's share of the HBM bandwidth (1.6 TB/s over 48
// vector cores, 18.5 bytes a cycle at 1.8 GHz) moves in the 28 cycles the cost model charges per
// DMA (kernels/bench/README.md: a proxy, the vendor publishes no figure). Only the ratio of a
// bag's cost to an index's matters.
constexpr int64_t kSefDmaFixedBytes = 512;
// UB bookkeeping per batch row slot: its index (8) and hash position (an int32 array as long as
// the occurrences': 8), up to four hash entries (4 each: the table has the power of two
// >= 2 * batchRows entries) and two occurrences (accumulator row, slot and weight, 4 each).
constexpr int64_t kSlotMetaBytes = 8 + 8 + 4 * 4 + 2 * 12;
// UB buffers besides the windows, each rounded up to whole blocks.
constexpr int64_t kSefBuffers = 12;

inline TilingPlan<SplitEmbeddingForwardTilingData> SplitEmbeddingForwardTiling(
    const SplitEmbeddingForwardArgs& a, const PlatformInfo& p) {
    const int64_t mode = a.poolingMode;
    const int64_t totalD = a.totalD;
    const int64_t maxD = a.maxD;
    const int64_t t = a.weightsOffsets.dims[0];
    const int64_t n = a.indices.dims[0];
    if (t < 1)
        return Reject("weights_offsets must have T >= 1 entries");
    if (a.dOffsets.dims[0] != t + 1) {
        return Reject("d_offsets size " + std::to_string(a.dOffsets.dims[0]) +
                      " is not T + 1 = " + std::to_string(t + 1));
    }
    if (a.offsets.dtype != a.indices.dtype)
        return Reject("offsets must have the dtype of indices");
    const bool vbe = a.bOffsets.present;
    if (a.vbeOutputOffsets.present != vbe || a.vbeBOffsetsRank.present != vbe) {
        return Reject(
            "variable batch per feature needs b_offsets, vbe_output_offsets and "
            "vbe_b_offsets_rank together");
    }
    if (a.offsets.dims[0] < 1 || (!vbe && (a.offsets.dims[0] - 1) % t != 0)) {
        return Reject("offsets size " + std::to_string(a.offsets.dims[0]) +
                      " is not B * T (T = " + std::to_string(t) + ") + 1");
    }
    if (mode < 0 || mode > 2) {
        return Reject("pooling_mode " + std::to_string(mode) +
                      " is not 0 (sum), 1 (mean) or 2 (none)");
    }
    int64_t ranks = 0;
    if (vbe) {
        // fbgemm's generate_vbe_metadata asserts the same: no VBE without bags.
        if (mode == 2)
            return Reject("variable batch per feature needs pooling_mode sum or mean, not none");
        if (a.bOffsets.dims[0] != t + 1) {
            return Reject("b_offsets size " + std::to_string(a.bOffsets.dims[0]) +
                          " is not T + 1 = " + std::to_string(t + 1));
        }
        ranks = a.vbeBOffsetsRank.dims[1] - 1;
        if (a.vbeBOffsetsRank.dims[0] != t || ranks < 1) {
            return Reject("vbe_b_offsets_rank must be [T, R + 1] with T = " + std::to_string(t) +
                          " and R >= 1, got " + a.vbeBOffsetsRank.Shape());
        }
        if (a.vbeOutputOffsets.dims[0] != ranks * t + 1) {
            return Reject("vbe_output_offsets size " + std::to_string(a.vbeOutputOffsets.dims[0]) +
                          " is not R * T + 1 = " + std::to_string(ranks * t + 1));
        }
        if (a.vbeOutputSize < 0 || a.out.ndim != 1 || a.out.dims[0] != a.vbeOutputSize) {
            return Reject("out must be [vbe_output_size] = [" + std::to_string(a.vbeOutputSize) +
                          "] with variable batch per feature, got " + a.out.Shape());
        }
    } else if (a.out.ndim != 2) {
        return Reject("out must be 2-D without variable batch per feature, got " + a.out.Shape());
    }
    if (totalD < 0 || maxD < 0)
        return Reject("total_d and max_d must be >= 0");
    if (a.indiceWeights.present) {
        if (mode == 2)
            return Reject("indice_weights need pooling_mode sum or mean, not none");
        if (a.indiceWeights.dims[0] != n) {
            return Reject("indice_weights size " + std::to_string(a.indiceWeights.dims[0]) +
                          " is not equal to indices size " + std::to_string(n));
        }
    }
    const int64_t bags = a.offsets.dims[0] - 1;
    const int64_t batch = vbe ? 0 : bags / t;
    TilingPlan<SplitEmbeddingForwardTilingData> plan;
    SplitEmbeddingForwardTilingData& td = plan.data;
    if (vbe) {
        td.outWidth = 0;
        td.units = bags;
        plan.tiling_key = SEF_KEY_VBE;
    } else if (mode == 2) {
        if (totalD != t * maxD) {
            return Reject("pooling_mode none needs every table's D equal to max_d: total_d " +
                          std::to_string(totalD) +
                          " is not T * max_d = " + std::to_string(t * maxD));
        }
        if (a.out.dims[0] != n || a.out.dims[1] != maxD) {
            return Reject("out must be [N, max_d] = [" + std::to_string(n) + ", " +
                          std::to_string(maxD) + "], got " + a.out.Shape());
        }
        td.outWidth = maxD;
        td.units = n;
        plan.tiling_key = SEF_KEY_NOBAG;
    } else {
        if (a.out.dims[0] != batch || a.out.dims[1] != totalD) {
            return Reject("out must be [B, total_d] = [" + std::to_string(batch) + ", " +
                          std::to_string(totalD) + "], got " + a.out.Shape());
        }
        td.outWidth = totalD;
        td.units = t * batch;
        plan.tiling_key = SEF_KEY_POOLED;
    }
    td.tables = t;
    td.batch = batch;
    td.bags = bags;
    td.ranks = ranks;
    td.outLen = a.out.Numel();
    td.numIndices = n;
    td.weightsLen = a.weights.dims[0];
    td.totalD = totalD;
    td.maxD = maxD;
    td.mode = mode;
    td.hasWeights = a.indiceWeights.present ? 1 : 0;

    // UB: three windows (offsets, indices, indice weights) of ub/96 each, and for weighted bags
    // one float32 row for a weighted copy; of the rest a quarter holds the accumulators and three
    // quarters the batches: per row slot two weights-dtype buffers, their float32 copy for 16-bit
    // weights and kSlotMetaBytes of bookkeeping (the row's index and hash position, up to four
    // hash entries, and two occurrences of accumulator row, slot and weight).
    const int64_t wElem = DTypeSize(a.weights.dtype);
    const int64_t castElem = wElem == 4 ? 0 : 4;
    td.windowBytes = static_cast<uint32_t>(Max64(UbShare(p, 96), kBlockBytes));
    const int64_t avail = UbBytes(p) - 3 * static_cast<int64_t>(td.windowBytes) -
                          kSefBuffers * kBlockBytes - kSlotMetaBytes;
    // One accumulator row, the weighted copy and a batch row fit: 4 + 4 + 12 bytes an element.
    const int64_t slotCap = StepElems(avail, 20, 16);
    td.slot = Min64(AlignUp(Max64(maxD, 1), 16), slotCap);
    const int64_t tmpBytes = td.hasWeights ? td.slot * 4 : 0;
    const int64_t rest = avail - tmpBytes;
    td.groupRows = Clamp64(rest / 4 / (td.slot * 4), 1, 4095);
    const int64_t accBytes = td.groupRows * td.slot * 4;
    const int64_t perRow = td.slot * (2 * wElem + castElem) + kSlotMetaBytes;
    td.batchRows = Clamp64((rest - accBytes) / perRow, 1, 1024);
    td.occRows = 2 * td.batchRows;
    td.hashBits = 1;
    while ((int64_t{1} << td.hashBits) < 2 * td.batchRows)
        ++td.hashBits;
    td.accBufBytes = static_cast<uint32_t>(accBytes);
    td.rowBufBytes = static_cast<uint32_t>(td.batchRows * td.slot * wElem);
    td.castBufBytes = static_cast<uint32_t>(td.batchRows * td.slot * castElem);
    td.metaBytes = static_cast<uint32_t>(AlignedBytes(td.occRows, 4));
    td.keyBytes = static_cast<uint32_t>(AlignedBytes(td.batchRows, 8));
    td.hashBytes = static_cast<uint32_t>(AlignedBytes(int64_t{1} << td.hashBits, 4));
    td.tmpBytes = static_cast<uint32_t>(tmpBytes);

    // Bytes moved, with every row taken as max_d wide (the tiling cannot see the mix of D).
    const int64_t iElem = DTypeSize(a.indices.dtype);
    if (mode != 2) {
        td.idCost = maxD * wElem + iElem + (td.hasWeights ? 4 : 0) + kSefDmaFixedBytes;
        td.bagCost = maxD * 4 + iElem;
    }
    const int64_t work = n * (iElem + (td.hasWeights ? 4 : 0) + maxD * wElem) +
                         (td.units + 1) * iElem + a.out.Numel() * 4;
    // A unit is never divided, so cores beyond the unit count would idle.
    SetCoreNum(plan, CoresFor(work, p.min_core_bytes, Min64(VectorCores(p), Max64(td.units, 1))));
    return plan;
}

}  // namespace mxrec

#endif  // SPLIT_EMBEDDING_FORWARD_TILING_H
