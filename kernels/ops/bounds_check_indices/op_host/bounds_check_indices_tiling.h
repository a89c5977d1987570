// Tiling of BoundsCheckIndices (pure; shared by the CANN op_host and the sim launcher).
//
// fbgemm corrects bags one after the other, each start being the previous bag's corrected end,
// which looks sequential. It has a closed form: with o[total_B] replaced by N, the corrected
// offsets are o'[0] = clamp(o[0], 0, N) and o'[k] = max(o'[k-1], min(o[k], N)), a running
// maximum. So: (1) cores take slices of the offsets and publish each slice's maximum;
// (SyncAll) (2) each core finishes its slice's running maximum from the maxima before it,
// counts bag violations, writes corrected slices back and records o' at table boundaries;
// (SyncAll) (3) cores take equal slices of the indices, find their tables from the boundaries
// and check/zero out-of-range indices against rows_per_table; (SyncAll) (4) core 0 writes the
// violation count to warning. Offsets are read twice, indices once; slices without a change
// are not written back.
#ifndef BOUNDS_CHECK_INDICES_TILING_H
#define BOUNDS_CHECK_INDICES_TILING_H

#include "bounds_check_indices_op_args.h"
#include "bounds_check_indices_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<BoundsCheckIndicesTilingData> BoundsCheckIndicesTiling(
    const BoundsCheckIndicesArgs& a, const PlatformInfo& p) {
    const int64_t mode = a.boundsCheckMode;
    TilingPlan<BoundsCheckIndicesTilingData> plan;
    BoundsCheckIndicesTilingData& td = plan.data;
    td.tables = a.rowsPerTable.dims[0];
    td.numIndices = a.indices.dims[0];
    td.totalB = a.offsets.dims[0] - 1;
    if (td.tables < 1)
        return Reject("rows_per_table must not be empty");
    if (td.totalB < 0)
        return Reject("offsets must have total_B + 1 >= 1 entries");
    if (a.warning.Numel() < 1)
        return Reject("warning must have one element");
    if (a.weights.present && a.weights.dims[0] != td.numIndices) {
        return Reject("weights size " + std::to_string(a.weights.dims[0]) +
                      " is not equal to indices size " + std::to_string(td.numIndices));
    }
    td.vbe = a.bOffsets.present ? 1 : 0;
    if (td.vbe) {
        if (a.bOffsets.dims[0] != td.tables + 1)
            return Reject("b_offsets must have T + 1 entries");
        if (a.maxB < 0)
            return Reject("max_B must be >= 0 with b_offsets");
    } else {
        td.batch = td.totalB / td.tables;
        if (td.batch * td.tables != td.totalB) {
            return Reject("offsets size " + std::to_string(td.totalB + 1) + " is not equal to B (" +
                          std::to_string(td.batch) + ") * T (" + std::to_string(td.tables) +
                          ") + 1");
        }
    }
    td.mode = mode;
    td.writeOffsets = (mode == 1 || mode == 2) && a.offsets.dtype == a.indices.dtype ? 1 : 0;
    if (mode < 0 || mode > 2) {  // none (or a value fbgemm has no branch for): no checks
        plan.tiling_key = BCI_KEY_NONE;
        SetCoreNum(plan, 1);
        return plan;
    }
    plan.tiling_key = BCI_KEY_CHECK;
    td.pieceBytes = static_cast<uint32_t>(UbShare(p, 3));
    td.chunk = ElemsPerBlocks(td.pieceBytes, 8);  // holds int64 offsets or indices
    const int64_t work = (td.totalB + 1) * DTypeSize(a.offsets.dtype) * 2 +
                         td.numIndices * DTypeSize(a.indices.dtype);
    SetCoreNum(plan, CoresForBytes(p, work));
    td.wsMax = 0;
    td.wsCount = PerCoreBlocks(td.coreNum);
    td.wsTable = 2 * PerCoreBlocks(td.coreNum);
    plan.workspace_bytes = static_cast<uint64_t>(td.wsTable + AlignedBytes(td.tables + 1, 8));
    return plan;
}

}  // namespace mxrec

#endif  // BOUNDS_CHECK_INDICES_TILING_H
