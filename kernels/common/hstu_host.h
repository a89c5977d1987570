// Host side of the HSTU attention tilings shared by hstu_dense_forward and hstu_dense_backward:
// argument validation (every limit of shared/research/hstu.md §4, D relaxed to multiples of 8
// from 8 as the user's example needs, each message naming the argument and the limit), the
// platform as the Cube tilings need it, the Matmul tilings and the number of AI cores.
#ifndef MXREC_HSTU_HOST_H
#define MXREC_HSTU_HOST_H

#include <cmath>
#include <string>
#include <vector>

#include "hstu_common.h"
#include "hstu_split.h"
#include "matmul_tiling.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

constexpr int64_t kHstuMaxBatch = 2048;
constexpr int64_t kHstuMaxSeqLen = 20480;
constexpr int64_t kHstuMaxHeads = 16;
constexpr int64_t kHstuMinDim = 8;
constexpr int64_t kHstuMaxDim = 512;
constexpr int64_t kHstuDimStep = 8;

// The problem every HSTU tiling validates the same way (forward and backward).
struct HstuShape {
    DType dtype = DType::kFloat32;
    bool jagged = false;
    int64_t batch = 0;
    int64_t seqLen = 0;  // max_seq_len
    int64_t heads = 0;
    int64_t dim = 0;
    int64_t rows = 0;  // T, or B * S
    int64_t maskType = 0;
    bool hasBias = false;
    bool hasMask = false;     // read (mask_type 3)
    int64_t squareBatch = 0;  // the smallest leading size of mask and attn_bias
    double scale = 0.0;
    std::vector<int64_t> lengths;
    int64_t offsetSum = 0;
    std::string error;
};

inline std::string HstuStr(int64_t v) {
    return std::to_string(v);
}

// A [B, N, S, S] tensor of q's dtype (mask or attn_bias). In the jagged layout B may also be the
// number of sequences before trailing repeated offsets (RecSDK takes B so).
inline std::string HstuCheckSquare(const TensorDesc& t, const char* name, const HstuShape& s,
                                   int64_t effBatch) {
    if (t.dtype != s.dtype) {
        return std::string(name) + " must have q's dtype " + DTypeName(s.dtype) + ", got " +
               DTypeName(t.dtype);
    }
    const bool batchOk = t.dims[0] == s.batch || (s.jagged && t.dims[0] == effBatch);
    if (t.ndim != 4 || !batchOk || t.dims[1] != s.heads || t.dims[2] != s.seqLen ||
        t.dims[3] != s.seqLen) {
        return std::string(name) + " must be [B, N, S, S] = [" + HstuStr(s.batch) + ", " +
               HstuStr(s.heads) + ", " + HstuStr(s.seqLen) + ", " + HstuStr(s.seqLen) +
               "] (S = max_seq_len), got " + t.Shape();
    }
    return std::string();
}

// Either operator's generated Args (<op>_op_args.h): both name the tensors q, k, v, mask,
// attnBias, offsets and the attributes maskType, maxSeqLen, siluScale, layout, seqOffset as their
// op.toml does, so one validation reads them by name whatever their positions.
template <class Args>
inline HstuShape HstuValidate(const Args& a) {
    const TensorDesc& q = a.q;
    const TensorDesc& k = a.k;
    const TensorDesc& v = a.v;
    const TensorDesc& mask = a.mask;
    const TensorDesc& bias = a.attnBias;
    const TensorDesc& offsets = a.offsets;
    HstuShape s;
    auto fail = [&s](const std::string& e) {
        s.error = e;
        return s;
    };
    s.maskType = a.maskType;
    s.seqLen = a.maxSeqLen;
    const double siluScale = a.siluScale;
    const int64_t layout = a.layout;
    const std::vector<int64_t>& off = a.seqOffset;
    s.dtype = q.dtype;
    if (q.dtype != DType::kFloat32 && q.dtype != DType::kFloat16 && q.dtype != DType::kBFloat16) {
        return fail(std::string("q must be float32, float16 or bfloat16, got ") +
                    DTypeName(q.dtype));
    }
    if (k.dtype != q.dtype || v.dtype != q.dtype) {
        return fail(std::string("k and v must have q's dtype ") + DTypeName(q.dtype) + ", got " +
                    DTypeName(k.dtype) + " and " + DTypeName(v.dtype));
    }
    if (layout != 0 && layout != 1) {
        return fail("layout must be 0 (\"normal\") or 1 (\"jagged\"), got " + HstuStr(layout));
    }
    s.jagged = layout == 1;
    if (s.maskType == 1)
        return fail("mask_type 1 (upper triangular) is not supported; use 0 (causal), 2 or 3");
    if (s.maskType != 0 && s.maskType != 2 && s.maskType != 3) {
        return fail("mask_type must be 0 (causal), 2 (none) or 3 (custom), got " +
                    HstuStr(s.maskType));
    }
    if (s.seqLen < 1 || s.seqLen > kHstuMaxSeqLen) {
        return fail("max_seq_len must be in [1, " + HstuStr(kHstuMaxSeqLen) + "], got " +
                    HstuStr(s.seqLen));
    }
    const int32_t rank = s.jagged ? 3 : 4;
    if (q.ndim != rank) {
        return fail(
            std::string("q must be ") +
            (s.jagged ? "[T, N, D] in the jagged layout" : "[B, S, N, D] in the normal layout") +
            ", got " + q.Shape());
    }
    if (k.ndim != q.ndim || v.ndim != q.ndim)
        return fail("k and v must have q's shape " + q.Shape());
    for (int32_t i = 0; i < q.ndim; ++i) {
        if (k.dims[i] != q.dims[i] || v.dims[i] != q.dims[i]) {
            return fail("k and v must have q's shape " + q.Shape() + ", got " + k.Shape() +
                        " and " + v.Shape());
        }
    }
    if (q.Numel() == 0)
        return fail("q must not be empty, got " + q.Shape());
    s.heads = q.dims[rank - 2];
    s.dim = q.dims[rank - 1];
    if (s.heads < 1 || s.heads > kHstuMaxHeads) {
        return fail("the head count N (q.size(" + HstuStr(rank - 2) + ")) must be in [1, " +
                    HstuStr(kHstuMaxHeads) + "], got " + HstuStr(s.heads));
    }
    if (s.dim < kHstuMinDim || s.dim > kHstuMaxDim || s.dim % kHstuDimStep != 0) {
        return fail("the head dimension D (q.size(" + HstuStr(rank - 1) +
                    ")) must be a multiple of " + HstuStr(kHstuDimStep) + " in [" +
                    HstuStr(kHstuMinDim) + ", " + HstuStr(kHstuMaxDim) + "], got " +
                    HstuStr(s.dim));
    }
    int64_t effBatch = 0;
    if (s.jagged) {
        s.rows = q.dims[0];
        if (off.size() < 2)
            return fail("seq_offset must have at least 2 entries (B + 1), got " +
                        HstuStr(off.size()));
        s.batch = static_cast<int64_t>(off.size()) - 1;
        if (off[0] != 0)
            return fail("seq_offset must start at 0, got " + HstuStr(off[0]));
        for (int64_t b = 0; b < s.batch; ++b) {
            const int64_t len = off[b + 1] - off[b];
            if (len < 0) {
                return fail("seq_offset must be non-decreasing: seq_offset[" + HstuStr(b + 1) +
                            "] = " + HstuStr(off[b + 1]) + " < seq_offset[" + HstuStr(b) +
                            "] = " + HstuStr(off[b]));
            }
            if (len > s.seqLen) {
                return fail("sequence " + HstuStr(b) + " has length " + HstuStr(len) +
                            " > max_seq_len " + HstuStr(s.seqLen));
            }
            s.lengths.push_back(len);
            if (len > 0)
                effBatch = b + 1;
        }
        if (off.back() != s.rows) {
            return fail("seq_offset must end at T = q.size(0) = " + HstuStr(s.rows) + ", got " +
                        HstuStr(off.back()));
        }
        if (!offsets.present)
            return fail("offsets (the device copy of seq_offset) is required in the jagged layout");
        if (offsets.ndim != 1 || offsets.dims[0] != static_cast<int64_t>(off.size())) {
            return fail("offsets must be [B + 1] = [" + HstuStr(off.size()) +
                        "] like seq_offset, got " + offsets.Shape());
        }
        uint64_t sum = 0;
        for (size_t i = 0; i < off.size(); ++i)
            sum += static_cast<uint64_t>(off[i]) * static_cast<uint64_t>(i + 1);
        s.offsetSum = static_cast<int64_t>(sum);
    } else {
        s.batch = q.dims[0];
        if (q.dims[1] != s.seqLen) {
            return fail("the normal layout needs max_seq_len == S = q.size(1) = " +
                        HstuStr(q.dims[1]) + ", got " + HstuStr(s.seqLen));
        }
        s.rows = s.batch * s.seqLen;
        s.lengths.assign(static_cast<size_t>(s.batch), s.seqLen);
        effBatch = s.batch;
    }
    if (s.batch < 1 || s.batch > kHstuMaxBatch) {
        return fail("the batch size B must be in [1, " + HstuStr(kHstuMaxBatch) + "], got " +
                    HstuStr(s.batch));
    }
    s.hasMask = s.maskType == 3;
    s.squareBatch = s.batch;
    if (s.hasMask) {
        if (!mask.present)
            return fail("mask_type 3 (custom) needs mask [B, N, S, S]");
        const std::string e = HstuCheckSquare(mask, "mask", s, effBatch);
        if (!e.empty())
            return fail(e);
    }
    s.hasBias = bias.present;
    if (s.hasBias) {
        const std::string e = HstuCheckSquare(bias, "attn_bias", s, effBatch);
        if (!e.empty())
            return fail(e);
    }
    if (!std::isfinite(siluScale))
        return fail("silu_scale must be finite");
    s.scale = siluScale != 0.0 ? siluScale : 1.0 / static_cast<double>(s.seqLen);
    return s;
}

// PlatformInfo as the Cube tilings need it. Both targets fill the cube fields (the sim launcher
// from its SoC table, the CANN glue from PlatformAscendC for kernel_type mix_*); a platform
// that reports none still gets a usable plan: 0 AI cores means vector_cores / 2 (Atlas A2/A3:
// two AIV per AIC) and zero buffer sizes mean the A2/A3 L1/L0 sizes.
inline PlatformInfo HstuCubePlatform(const PlatformInfo& p) {
    PlatformInfo c = p;
    if (c.cube_cores == 0)
        c.cube_cores = c.vector_cores / 2 > 0 ? c.vector_cores / 2 : 1;
    if (c.l1_bytes == 0)
        c.l1_bytes = 512 * 1024;
    if (c.l0a_bytes == 0)
        c.l0a_bytes = 64 * 1024;
    if (c.l0b_bytes == 0)
        c.l0b_bytes = 64 * 1024;
    if (c.l0c_bytes == 0)
        c.l0c_bytes = 128 * 1024;
    return c;
}

// One Matmul's static tiling for its largest call (each call sets its own tail).
// Operands in L1 (TSCM) and a fixed baseM / baseN (0: the tiling's choice) where a call needs them.
struct HstuMatmulOptions {
    bool aL1 = false;
    bool bL1 = false;
    int64_t baseM = 0;
    int64_t baseN = 0;
};

inline std::string HstuMatmul(AscendC::tiling::TCubeTiling* out, DType in, DType c, bool transA,
                              bool transB, int64_t m, int64_t n, int64_t k, const PlatformInfo& p,
                              const HstuMatmulOptions& o = {}) {
    MatmulTilingArgs a;
    a.aL1 = o.aL1;
    a.bL1 = o.bL1;
    a.baseM = o.baseM;
    a.baseN = o.baseN;
    a.a = a.b = in;
    a.c = c;
    a.bias = DType::kFloat32;
    a.transA = transA;
    a.transB = transB;
    a.m = m;
    a.n = n;
    a.k = k;
    a.singleM = m;
    a.singleN = n;
    a.cores = 1;
    const MatmulTiling t = MatmulApiTiling(a, p);
    if (!t.ok())
        return t.error;
    *out = t.tiling;
    return std::string();
}

// AI cores for the work: those the bytes moved pay for (PlatformInfo::min_core_bytes), at most
// the platform's (and what kHstuMaxWorkers can describe), at most one per two row groups.
inline int64_t HstuAiCores(const PlatformInfo& p, int64_t bytes, int64_t groups) {
    const int64_t maxAic = Min64(static_cast<int64_t>(p.cube_cores), kHstuMaxWorkers / 2);
    return Clamp64(Min64(CoresFor(bytes, p.min_core_bytes, maxAic), CeilDiv(groups, 2)), 1, maxAic);
}

// The work of an HSTU launch: its sequences by heads, in blocks of query rows (forward) or of
// key rows (backward, keyMajor), the block height chosen for it.
inline HstuWork HstuWorkOf(const HstuShape& s, bool keyMajor) {
    HstuWork work;
    work.lengths = s.lengths;
    work.heads = s.heads;
    work.causal = s.maskType == 0;
    work.keyMajor = keyMajor;
    work.block = HstuChooseBlock(work);
    return work;
}

// A plan whose tiling struct holds the shape fields both HSTU tiling structs carry.
template <typename TD>
inline TilingPlan<TD> HstuNewPlan(const HstuShape& s) {
    TilingPlan<TD> plan;
    TD& td = plan.data;
    td.batch = s.batch;
    td.seqLen = s.seqLen;
    td.heads = s.heads;
    td.dim = s.dim;
    td.dimPad = AlignUp(s.dim, 16);
    td.rows = s.rows;
    td.jagged = s.jagged ? 1 : 0;
    td.maskType = s.maskType;
    td.hasBias = s.hasBias ? 1 : 0;
    td.squareBatch = s.squareBatch;
    td.offsetSum = s.offsetSum;
    td.scale = static_cast<float>(s.scale);
    return plan;
}

// Cuts `work` over the AI cores that `bytes` moved pay for (HstuAiCores): blockDim, two workers
// (AIVs) per AI core and each worker's start in the work order; unused entries repeat the end.
template <typename TD>
inline void HstuAssignWorkers(TilingPlan<TD>& plan, const HstuWork& work, const PlatformInfo& p,
                              int64_t bytes, int64_t groups) {
    TD& td = plan.data;
    const int64_t aic = HstuAiCores(p, bytes, groups);
    plan.block_dim = static_cast<uint32_t>(aic);
    td.workers = 2 * aic;
    const std::vector<HstuPos> start = HstuSplit(work, td.workers);
    for (int64_t i = 0; i <= td.workers; ++i)
        td.start[i] = start[i];
    for (int64_t i = td.workers + 1; i <= kHstuMaxWorkers; ++i)
        td.start[i] = start[td.workers];
}

}  // namespace mxrec

#endif  // MXREC_HSTU_HOST_H
