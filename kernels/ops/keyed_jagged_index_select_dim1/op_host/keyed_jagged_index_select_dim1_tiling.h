// Tiling of KeyedJaggedIndexSelectDim1 (pure; shared by the CANN op_host and the sim launcher).
//
// Three phases, two SyncAll:
//   A. cores split the T * I output bags: bag (t, j) reads lengths and offsets of input bag
//      t * B + indices[j] (from the key's rows staged in UB when they fit, else by scalar reads),
//      writes output_lengths, and keeps the bag's start in values and its length in workspace;
//   (SyncAll) B. each core turns its slice of the lengths into exclusive output offsets with the
//      totals the other cores published;
//   (SyncAll) C. cores split the output values evenly; a core finds its first bag by binary
//      search and, for values and then weights, stages a window of the source (a key's values)
//      in UB with one DMA, picks its bags' elements out with the vector Gather and writes them
//      as blocks; long bags, and keys where few columns are selected, are copied by DMA (runs
//      of bags adjacent in both input and output merged); past the selected total it zero-fills.
// Lengths and offsets are read once per key a core touches, values and weights once per key a
// core's output touches (or once, where copied by DMA).
#ifndef KEYED_JAGGED_INDEX_SELECT_DIM1_TILING_H
#define KEYED_JAGGED_INDEX_SELECT_DIM1_TILING_H

#include <string>

#include "keyed_jagged_index_select_dim1_op_args.h"
#include "keyed_jagged_index_select_dim1_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<KeyedJaggedIndexSelectDim1TilingData> KeyedJaggedIndexSelectDim1Tiling(
    const KeyedJaggedIndexSelectDim1Args& a, const PlatformInfo& p) {
    const int64_t b = a.batchSize;
    if (b <= 0)
        return Reject("batch_size must be >= 1, got " + std::to_string(b));
    const int64_t lens = a.lengths.dims[0];
    if (lens % b != 0)
        return Reject("lengths has " + std::to_string(lens) +
                      " entries, not a multiple of batch_size " + std::to_string(b));
    if (a.offsets.dims[0] != lens + 1)
        return Reject("offsets must have lengths.size(0) + 1 = " + std::to_string(lens + 1) +
                      " entries, got " + a.offsets.Shape());
    const int64_t t = lens / b;
    const int64_t sel = a.indices.dims[0];
    const int64_t n = a.values.dims[0];
    if (a.outputLengths.ndim != 1 || a.outputLengths.dims[0] != t * sel)
        return Reject("output_lengths must be [T * I] = [" + std::to_string(t * sel) + "], got " +
                      a.outputLengths.Shape());
    const int64_t outValues = a.output.dims[0];
    if (a.selectedLengthsSum >= 0 && a.selectedLengthsSum != outValues)
        return Reject("output has " + std::to_string(outValues) +
                      " elements but selected_lengths_sum is " +
                      std::to_string(a.selectedLengthsSum));
    if (a.weights.present) {
        if (a.weights.dims[0] != n)
            return Reject("weights must have as many entries as values (" + std::to_string(n) +
                          "), got " + a.weights.Shape());
        if (!a.outputWeights.present || a.outputWeights.dtype != a.weights.dtype ||
            a.outputWeights.dims[0] != outValues)
            return Reject("output_weights must have the dtype of weights and shape [" +
                          std::to_string(outValues) + "]");
    } else if (a.outputWeights.present) {
        return Reject("output_weights is given without weights");
    }
    TilingPlan<KeyedJaggedIndexSelectDim1TilingData> plan;
    KeyedJaggedIndexSelectDim1TilingData& td = plan.data;
    td.keys = t;
    td.batchSize = b;
    td.selected = sel;
    td.bags = t * sel;
    td.valueCount = n;
    td.outValues = outValues;
    td.hasWeights = a.weights.present ? 1 : 0;
    // UB: three bag blocks (output lengths, starts, int64 lengths) 1/48 each, two double-
    // buffered copiers (bags too long to gather) 1/48 per buffer, two fill buffers and the
    // indices window 1/96 each, the per-core totals; the rest is the arena.
    td.blockBufBytes = static_cast<uint32_t>(UbShare(p, 48));
    td.copyBufBytes = static_cast<uint32_t>(UbShare(p, 48));
    td.fillBufBytes = static_cast<uint32_t>(UbShare(p, 96));
    td.windowBytes = static_cast<uint32_t>(UbShare(p, 96));
    const int64_t fixed = 3 * static_cast<int64_t>(td.blockBufBytes) + 4 * td.copyBufBytes +
                          2 * static_cast<int64_t>(td.fillBufBytes) + td.windowBytes +
                          PerCoreBlocks(VectorCores(p)) + kBlockBytes;
    const int64_t arena = AlignDown(UbBytes(p) - fixed, kBlockBytes);
    td.arenaBytes = static_cast<uint32_t>(arena);
    // Selection phase: a key's lengths and offsets rows, half the arena each.
    td.rowBufBytes = static_cast<uint32_t>(AlignDown(arena / 2, kBlockBytes));
    // Copy phase: a chunk of up to M output elements (8 bytes each at most) and its gather
    // offsets (two 32-bit words an element for 8-byte values: Gather moves 16 and 32 bits), an
    // eighth of the arena; bag blocks of starts and output offsets a sixteenth; the staged
    // window of values the rest, so that a key's values (all its bags, selected or not) fit.
    td.chunkElems = Max64(8, AlignDown(arena / 128, 8));
    td.metaBags = Max64(4, AlignDown(arena / 256, 4));
    td.longBag = td.chunkElems / 2;
    // 28 cycles of DMA head at a core's share of HBM (1.6 TB/s / 48 cores / 1.8 GHz = 18.5
    // bytes a cycle): kernels/bench/README.md's constants.
    td.dmaWorthBytes = 512;
    td.chunkOffset = 0;
    td.gatherOffset = static_cast<uint32_t>(td.chunkOffset + td.chunkElems * 8);
    td.metaOffset = static_cast<uint32_t>(td.gatherOffset + td.chunkElems * 8);
    td.stageOffset = static_cast<uint32_t>(td.metaOffset + AlignedBytes(td.metaBags + 1, 8) * 2);
    if (static_cast<int64_t>(td.stageOffset) + kBlockBytes > arena)
        return Reject("the unified buffer is too small for keyed_jagged_index_select_dim1");
    td.stageBytes = static_cast<uint32_t>(arena - td.stageOffset);
    const int64_t lenElem = DTypeSize(a.lengths.dtype);
    td.rowCached = b * lenElem <= static_cast<int64_t>(td.rowBufBytes) ? 1 : 0;
    td.bagBlock = Min64(td.blockBufBytes / 8, 4095);
    td.sumBlock = td.blockBufBytes / 8;
    const int64_t valueBytes = outValues * (DTypeSize(a.values.dtype) +
                                            (a.weights.present ? DTypeSize(a.weights.dtype) : 0));
    const int64_t bytes = 2 * valueBytes + td.bags * (2 * lenElem + 16) + sel * lenElem;
    SetCoreNum(plan, CoresForBytes(p, bytes));
    td.wsStarts = 0;
    td.wsOutOffsets = AlignedBytes(td.bags, 8);
    td.wsTotals = td.wsOutOffsets + AlignedBytes(td.bags, 8);
    plan.workspace_bytes = static_cast<uint64_t>(td.wsTotals + PerCoreBlocks(td.coreNum));
    return plan;
}

}  // namespace mxrec

#endif  // KEYED_JAGGED_INDEX_SELECT_DIM1_TILING_H
