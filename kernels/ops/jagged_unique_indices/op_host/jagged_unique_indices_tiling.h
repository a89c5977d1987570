// Tiling of JaggedUniqueIndices (pure; shared by the CANN op_host and the sim launcher).
//
// Every phase splits its items evenly over the cores, which meet in SyncAll between phases:
// linearize ids (an even share of the N ids each), an LSD radix sort of the linearized ids as
// (key - smallest key) in 8-bit digits, each pass a per-core histogram, a SyncAll, a stable
// scatter from each core's bases (digit runs sorted in UB, one DMA each); then the heads of equal
// runs counted per share, the unique ids and (position, rank) pairs written from each share's
// prefix, the pairs radix-sorted by position into reverse_index, and the groups' lengths and
// offsets. The workspace holds the two key/position buffers, the histograms and per-core slots.
#ifndef JAGGED_UNIQUE_INDICES_TILING_H
#define JAGGED_UNIQUE_INDICES_TILING_H

#include "jagged_unique_indices_op_args.h"
#include "jagged_unique_indices_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<JaggedUniqueIndicesTilingData> JaggedUniqueIndicesTiling(
    const JaggedUniqueIndicesArgs& a, const PlatformInfo& p) {
    const int64_t t = a.hashSizeCumsum.dims[0] - 1;
    if (t < 1)
        return Reject("hash_size_cumsum must have T + 1 >= 2 entries, got " +
                      a.hashSizeCumsum.Shape());
    if (a.hashSizeOffsets.dims[0] < t + 1)
        return Reject("hash_size_offsets must have at least T + 1 = " + std::to_string(t + 1) +
                      " entries, got " + a.hashSizeOffsets.Shape());
    if (a.offsets.dims[0] < 1)
        return Reject("offsets must have at least one entry");
    const int64_t bags = a.offsets.dims[0] - 1;
    if (bags % t != 0)
        return Reject("offsets must hold T * B + 1 entries for T = " + std::to_string(t) +
                      " features, got " + a.offsets.Shape());
    const int64_t n = a.indices.dims[0];
    if (n > 0x7fffffffLL)
        return Reject("at most 2^31 - 1 ids, got " + std::to_string(n));
    auto expect = [](const TensorDesc& d, int64_t len, const char* name) {
        return d.ndim == 1 && d.dims[0] == len
                   ? std::string()
                   : std::string(name) + " must be [" + std::to_string(len) + "], got " + d.Shape();
    };
    for (const std::string& e :
         {expect(a.outputLengths, bags, "output_lengths"),
          expect(a.outputOffsets, bags + 1, "output_offsets"),
          expect(a.uniqueIndices, n, "unique_indices"), expect(a.reverseIndex, n, "reverse_index"),
          expect(a.numUnique, 1, "num_unique")}) {
        if (!e.empty())
            return Reject(e);
    }
    TilingPlan<JaggedUniqueIndicesTilingData> plan;
    JaggedUniqueIndicesTilingData& td = plan.data;
    td.features = t;
    td.groups = t + 1;
    td.batchSize = bags / t;
    td.bags = bags;
    td.numIndices = n;
    // A pass moves a key and a position in and out per id.
    SetCoreNum(plan, CoresForBytes(p, n * 24 + bags * 16));
    const int64_t keys = AlignedBytes(n, 8);
    const int64_t pos = AlignedBytes(n, 4);
    td.wsKeysB = keys;
    td.wsPosA = td.wsKeysB + keys;
    td.wsPosB = td.wsPosA + pos;
    td.wsHist = td.wsPosB + pos;
    td.wsSlots = td.wsHist + AlignedBytes(td.coreNum * JUI_RADIX, 4);
    td.wsGroups = td.wsSlots + PerCoreBlocks(td.coreNum);
    plan.workspace_bytes = static_cast<uint64_t>(td.wsGroups + AlignedBytes(t, 8));
    // Five windows (keys, positions, ids/offsets, histograms, group data) 1/32 each, three output
    // stagers 1/64 each, the digit counts; the rest is the scatter's (a core's share of the
    // bench's 212,842 ids in one chunk at 192 KB of UB, so that each digit's run of a pass
    // leaves with one DMA for the core, not one per chunk): per id a key and a
    // position in and out (24 bytes), plus up to 8 slots of padding per digit run out.
    td.windowBytes = static_cast<uint32_t>(UbShare(p, 32));
    const int64_t fixed = 5 * static_cast<int64_t>(td.windowBytes) + 3 * (td.windowBytes / 2) +
                          3 * JUI_RADIX * 4 + kBlockBytes;
    const int64_t sortBytes = Max64(kBlockBytes, AlignDown(UbBytes(p) - fixed, kBlockBytes));
    // Below 64 ids a chunk the scatter writes id by id (scalar) instead: the padding of 256
    // digit runs would take most of the buffer.
    const int64_t chunk = AlignDown((sortBytes - JUI_RADIX * 8 * 12) / 24, 8);
    td.sortChunk = chunk >= 64 ? chunk : 0;
    td.sortBytes = static_cast<uint32_t>(td.sortChunk > 0 ? sortBytes : kBlockBytes);
    return plan;
}

}  // namespace mxrec

#endif  // JAGGED_UNIQUE_INDICES_TILING_H
