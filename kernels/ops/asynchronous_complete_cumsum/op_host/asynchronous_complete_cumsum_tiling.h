// Tiling of AsynchronousCompleteCumsum, a pure function of shapes shared by the CANN op_host and
// the sim launcher.
//
// Two strategies. Few long rows (always the case for 1-D): all cores scan each row together in
// steps of coreNum x chunk elements; after a step every core publishes its slice total in the
// workspace, meets the others in SyncAll and adds the totals of the cores before it (one read and
// one write of every element). Many rows: rows are split evenly over cores, each scanned in chunks
// by one core (no synchronisation).
#ifndef ASYNCHRONOUS_COMPLETE_CUMSUM_TILING_H
#define ASYNCHRONOUS_COMPLETE_CUMSUM_TILING_H

#include "asynchronous_complete_cumsum_op_args.h"
#include "asynchronous_complete_cumsum_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<AsynchronousCompleteCumsumTilingData> AsynchronousCompleteCumsumTiling(
    const AsynchronousCompleteCumsumArgs& a, const PlatformInfo& p) {
    const int64_t rows = a.x.ndim == 2 ? a.x.dims[0] : 1;
    const int64_t cols = a.x.ndim == 2 ? a.x.dims[1] : a.x.dims[0];
    if (a.y.dtype != a.x.dtype)
        return Reject("y must have the dtype of x");
    const bool shape_ok = a.x.ndim == 2
                              ? (a.y.ndim == 2 && a.y.dims[0] == rows && a.y.dims[1] == cols + 1)
                              : (a.y.ndim == 1 && a.y.dims[0] == cols + 1);
    if (!shape_ok)
        return Reject("y must have shape " + std::string(a.x.ndim == 2 ? "[R, N + 1]" : "[N + 1]") +
                      " for x " + a.x.Shape() + ", got " + a.y.Shape());
    const int64_t elem = DTypeSize(a.x.dtype);
    TilingPlan<AsynchronousCompleteCumsumTilingData> plan;
    plan.data.rows = rows;
    plan.data.cols = cols;
    // One element of left padding (the leading zero) is loaded with the chunk.
    // Half of UB for the scan buffer; the rest holds the step totals (one 32-byte slot per core).
    plan.data.chunk = UbShare(p, 2) / elem - kBlockBytes / elem;
    const int64_t cores = VectorCores(p);
    const int64_t minPerCore = Max64(1, p.min_core_bytes / (2 * elem));  // read + write per element
    if (rows == 0) {
        plan.tiling_key = CUMSUM_KEY_ROWS;
        SetCoreNum(plan, 1);
    } else if (cols < minPerCore || rows >= 8 * cores) {
        // Short rows (one core per row is enough) or so many rows that whole rows balance well.
        plan.tiling_key = CUMSUM_KEY_ROWS;
        SetCoreNum(plan, Min64(rows, cores));
    } else {
        plan.tiling_key = CUMSUM_KEY_SCAN;
        SetCoreNum(plan, CoresFor(cols, minPerCore, cores));
        // Two parities of one slot per core: a fast core may publish the next step's total
        // while a slow one still reads this step's.
        plan.workspace_bytes = static_cast<uint64_t>(2 * PerCoreBlocks(plan.data.coreNum));
    }
    return plan;
}

}  // namespace mxrec

#endif  // ASYNCHRONOUS_COMPLETE_CUMSUM_TILING_H
