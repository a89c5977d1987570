// Host tiling of the codecs (codec_data.h): the shape check, the HFP8 format check, and the plan
// of a stream of independent rows, which every codec sizes the same way. Rows are independent:
// cores take even shares of them, and a core moves its rows through UB in chunks of whole rows
// (a row-wise codec needs all of a row for its scale). What is left in an operator's tiling is
// the widths of its rows, what it keeps in UB besides them and its format's parameters.
#ifndef MXREC_CODEC_TILING_H
#define MXREC_CODEC_TILING_H

#include <cstdint>
#include <string>

#include "codec_data.h"
#include "mxrec_common.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

// DataCopyPad moves at most 4095 blocks (rows) in one DMA.
constexpr int64_t kMaxDmaBlocks = 4095;

// The product of the leading dims: the rows of the last one (rows of D = 0 count too).
inline int64_t LeadingRows(const TensorDesc& t) {
    int64_t rows = 1;
    for (int32_t d = 0; d + 1 < t.ndim; ++d)
        rows *= t.dims[d];
    return rows;
}

// Empty when `out` is a `dtype` tensor of `in`'s shape with the last dim `outLast`; otherwise
// the refusal, "output must be <dtype> <in's shape> <how>, got <out's shape and dtype>".
inline std::string CodecOutputProblem(const TensorDesc& in, const TensorDesc& out, DType dtype,
                                      int64_t outLast, const std::string& how) {
    bool same = out.ndim == in.ndim && in.ndim > 0 && out.dims[out.ndim - 1] == outLast &&
                out.dtype == dtype;
    for (int32_t d = 0; same && d + 1 < in.ndim; ++d)
        same = out.dims[d] == in.dims[d];
    if (same)
        return "";
    return std::string("output must be ") + DTypeName(dtype) + " " + in.Shape() +
           (how.empty() ? "" : " " + how) + ", got " + out.Shape() + " " + DTypeName(out.dtype);
}

// fbgemm's HFP8 bit arithmetic describes a format only for these (hfp8_encode.h, hfp8_decode.h);
// empty when it does.
inline std::string Hfp8FormatProblem(int64_t ebits, int64_t bias) {
    if (ebits < 1 || ebits > 7)
        return "ebits must be in [1, 7] (a sign bit, ebits exponent bits and 7 - ebits mantissa "
               "bits), got " +
               std::to_string(ebits);
    if (bias < 1 || bias > 127)
        return "exponent_bias must be in [1, 127], got " + std::to_string(bias);
    return "";
}

// fbgemm's row-wise FP8 formats: e4m3 with bias 15 and max_pos 0.9375 forward, e5m2 with bias
// 31 and max_pos 0.875 backward.
inline Hfp8Format Fp8RowwiseFormat(bool forward) {
    return forward ? Hfp8Format{4, 15, 0.9375f, 0} : Hfp8Format{5, 31, 0.875f, 0};
}

// What one row of a codec moves and keeps in UB.
struct CodecRowCost {
    int64_t rows = 0;
    int64_t inWidth = 0;  // elements of an input row
    int64_t inBytes = 4;  // bytes of an input element
    int64_t outWidth = 0;
    int64_t outBytes = 1;
    int64_t scratchBytes = 0;  // UB per input element (of the row's stride) besides both rows
    int64_t reservedUb = kBlockBytes;  // UB outside the chunk buffers (a decode table, slack)
    // Rows of one element (the element-wise codecs): packed in UB, moved in one DMA per chunk,
    // chunks of whole 32-element groups so that every buffer holds whole blocks.
    bool packed = false;
};

// A row-wise codec: rows of the input's last dim in, of the output's out (a checked output).
inline CodecRowCost RowwiseCost(const TensorDesc& in, const TensorDesc& out) {
    CodecRowCost c;
    c.rows = LeadingRows(in);
    c.inWidth = in.dims[in.ndim - 1];
    c.inBytes = DTypeSize(in.dtype);
    c.outWidth = out.dims[out.ndim - 1];
    c.outBytes = DTypeSize(out.dtype);
    return c;
}

// An element-wise codec: rows of one element.
inline CodecRowCost ElementwiseCost(const TensorDesc& in, const TensorDesc& out) {
    CodecRowCost c;
    c.rows = in.Numel();
    c.inWidth = 1;
    c.inBytes = DTypeSize(in.dtype);
    c.outWidth = 1;
    c.outBytes = DTypeSize(out.dtype);
    c.packed = true;
    return c;
}

// The plan of a codec whose tiling struct TD holds its CodecRows as `stream`, or the refusal
// when a row does not fit in UB. Cores: one per min_core_bytes of traffic, at most one per row.
template <typename TD>
inline TilingPlan<TD> PlanCodecRows(const CodecRowCost& c, const PlatformInfo& p) {
    TilingPlan<TD> plan;
    CodecRows& rows = plan.data.stream;
    rows.rows = c.rows;
    rows.inWidth = c.inWidth;
    rows.outWidth = c.outWidth;
    rows.inStride = c.packed ? c.inWidth : AlignedBytes(c.inWidth, c.inBytes) / c.inBytes;
    rows.outStride = c.packed ? c.outWidth : AlignedBytes(c.outWidth, c.outBytes) / c.outBytes;
    const int64_t perRow =
        rows.inStride * (c.inBytes + c.scratchBytes) + rows.outStride * c.outBytes;
    const int64_t free = UbBytes(p) - c.reservedUb;
    const int64_t multiple = c.packed ? kBlockBytes : 1;
    const int64_t fit = AlignDown(free / Max64(1, perRow), multiple);
    if (fit < 1) {
        return Reject("a row of " + std::to_string(c.inWidth) + " input and " +
                      std::to_string(c.outWidth) + " output elements takes " +
                      std::to_string(perRow * multiple) + " bytes of UB, more than the " +
                      std::to_string(free) + " there are");
    }
    const int64_t traffic = c.rows * (c.inWidth * c.inBytes + c.outWidth * c.outBytes);
    rows.coreNum = Max64(1, Min64(CoresForBytes(p, traffic), c.rows));
    plan.block_dim = static_cast<uint32_t>(rows.coreNum);  // the kernels split over coreNum
    rows.chunkRows = Max64(multiple, Min64(c.packed ? fit : Min64(fit, kMaxDmaBlocks),
                                           AlignUp(CeilDiv(c.rows, rows.coreNum), multiple)));
    return plan;
}

}  // namespace mxrec

#endif  // MXREC_CODEC_TILING_H
