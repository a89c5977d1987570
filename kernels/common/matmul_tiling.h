// Host-side tiling of the AscendC Matmul API: the TCubeTiling a kernel hands to REGIST_MATMUL_OBJ /
// Matmul::Init, as a pure function of the shapes, dtypes and the platform, like every tiling here
// (tiling_common.h). The emulation (kernels/sim/include/recsdk_sim/matmul.h) checks the tile each
// call actually uses with CubeFootprint below, so the two agree on what fits.
//
// What the fields mean and the constraints they obey: docs/api/SIMD-API/高阶API/矩阵计算/
// Matmul-Tiling类/TCubeTiling结构体.md (table 2, "TCubeTiling约束条件", and the recommended values:
// base (128, 256, 64), dbL0A = dbL0B = 2, depthA1 / (stepM * stepKa) = 2, stepKa/stepKb so that K
// is loaded whole first). The choices follow what MultiCoreMatmulTiling/GetTiling are documented to
// produce (singleCoreK = K, usedCoreNum = (M / singleCoreM) * (N / singleCoreN) <= the cores of
// SetDim: AIVs in MIX mode, AICs in pure Cube mode);
// the toolkit's own search is not public and is not reproduced, so on the cann target an operator
// may also take its TCubeTiling from matmul_tiling::MultiCoreMatmulTiling: the field names and
// layout are the toolkit's (kernel_tiling/kernel_tiling.h).
#ifndef MXREC_MATMUL_TILING_H
#define MXREC_MATMUL_TILING_H

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_tiling/kernel_tiling.h"
#include "tiling_common.h"

namespace mxrec {

// C0: the elements of one 32-byte fractal row (TCubeTiling结构体.md: float 8, half/bfloat16 16,
// int8 32); the Cube's k0 (Cube指令理论性能汇总.md) equals it for these types.
inline int64_t CubeC0(int64_t elemBytes) {
    return 32 / elemBytes;
}

// A rows x cols block in NZ fractals (16 x C0) in L1.
inline int64_t NzBytes(int64_t rows, int64_t cols, int64_t elemBytes) {
    return AlignUp(rows, 16) * AlignUp(cols, CubeC0(elemBytes)) * elemBytes;
}

struct CubeBuffers {
    uint64_t l1 = 0;
    uint64_t l0a = 0;
    uint64_t l0b = 0;
    uint64_t l0c = 0;
    uint64_t bt = 0;
};

inline CubeBuffers CubeBuffersOf(const PlatformInfo& p) {
    return CubeBuffers{p.l1_bytes, p.l0a_bytes, p.l0b_bytes, p.l0c_bytes, p.bt_bytes};
}

// One computation's shape and types.
struct CubeTile {
    int64_t m = 0;  // singleCoreM/N/K of the call (after SetTail)
    int64_t n = 0;
    int64_t k = 0;
    int64_t aBytes = 2;
    int64_t bBytes = 2;
    int64_t biasBytes = 4;
    bool transA = false;
    bool transB = false;
    bool bias = false;
    // Operands the kernel keeps in L1 itself (TPosition::TSCM, TSCM输入的矩阵乘.md: "Matmul直接
    // 使用传入的TSCM内存地址，不进行Global Memory到TSCM的数据搬入"): the API loads nothing for
    // them, so they take none of its L1 chunks (their bytes are the kernel's TSCM budget).
    bool aL1 = false;
    bool bL1 = false;
};

// What one on-chip buffer must hold for a computation, and how that was counted.
struct CubeBufferNeed {
    const char* name;
    uint64_t need;
    uint64_t capacity;
    std::string how;
};

// K granularity of a base block:
// "A矩阵非转置且B矩阵转置场景，baseK需要以C0_size对齐；其余场景…baseK以 16个元素对齐"
// (TCubeTiling结构体.md, table 2).
inline int64_t BaseKAlign(const CubeTile& t) {
    return (!t.transA && t.transB) ? CubeC0(t.aBytes) : 16;
}

// The buffers a computation with tiling `c` on tile `t` occupies. The base block is what one Mmad
// works on: baseM/N/K clipped to the tile (a 256-wide baseN on a 64-wide tile moves and multiplies
// 64 columns, padded to the fractal); L1 holds min(depth, blocks needed) chunks of stepM x stepKa
// (stepN x stepKb) base blocks. Table 2 writes the L1 sizes with CeilDiv(baseM, C0) factors; the
// fractal-padded bytes used here are what the data occupies.
inline std::vector<CubeBufferNeed> CubeFootprint(const AscendC::tiling::TCubeTiling& c,
                                                 const CubeTile& t, const CubeBuffers& cap) {
    const int64_t kAlign = BaseKAlign(t);
    const int64_t bm = Min64(c.baseM, AlignUp(t.m, 16));
    const int64_t bn = Min64(c.baseN, AlignUp(t.n, 16));
    const int64_t bk = Min64(c.baseK, AlignUp(t.k, kAlign));
    const int64_t k0a = CubeC0(t.aBytes);
    const int64_t k0b = CubeC0(t.bBytes);
    auto s = [](int64_t v) { return std::to_string(v); };
    std::vector<CubeBufferNeed> out;
    const uint64_t l0a = uint64_t(AlignUp(bm, 16) * AlignUp(bk, k0a) * t.aBytes * c.dbL0A);
    out.push_back({"L0A", l0a, cap.l0a,
                   "baseM " + s(bm) + " x baseK " + s(bk) + " (padded to 16 x " + s(k0a) +
                       " fractals) x " + s(t.aBytes) + " B x dbL0A " + s(c.dbL0A)});
    const uint64_t l0b = uint64_t(AlignUp(bk, k0b) * AlignUp(bn, 16) * t.bBytes * c.dbL0B);
    out.push_back({"L0B", l0b, cap.l0b,
                   "baseK " + s(bk) + " x baseN " + s(bn) + " (padded to " + s(k0b) +
                       " x 16 fractals) x " + s(t.bBytes) + " B x dbL0B " + s(c.dbL0B)});
    const uint64_t l0c = uint64_t(AlignUp(bm, 16) * AlignUp(bn, 16) * 4 * c.dbL0C);
    out.push_back({"L0C", l0c, cap.l0c,
                   "baseM " + s(bm) + " x baseN " + s(bn) + " x 4 B (fp32 accumulator) x dbL0C " +
                       s(c.dbL0C)});
    const uint64_t bt = t.bias ? uint64_t(bn * t.biasBytes) : 0;
    out.push_back({"BiasTable", bt, cap.bt, "baseN " + s(bn) + " x " + s(t.biasBytes) + " B"});
    // L1: A chunks of stepM x stepKa base blocks, B chunks of stepKb x stepN, double-buffered when
    // depth = 2 x step, never more chunks than the tile has.
    const int64_t aRows = Min64(Max64(c.stepM, 1) * bm, t.m);
    const int64_t aCols = Min64(Max64(c.stepKa, 1) * bk, t.k);
    const int64_t aBlock =
        t.transA ? NzBytes(aCols, aRows, t.aBytes) : NzBytes(aRows, aCols, t.aBytes);
    const int64_t aChunks =
        CeilDiv(t.m, Max64(c.stepM, 1) * bm) * CeilDiv(t.k, Max64(c.stepKa, 1) * bk);
    const int64_t aDepth =
        Min64(Max64(c.depthA1 / Max64(Max64(c.stepM, 1) * Max64(c.stepKa, 1), 1), 1), aChunks);
    const int64_t bRows = Min64(Max64(c.stepKb, 1) * bk, t.k);
    const int64_t bCols = Min64(Max64(c.stepN, 1) * bn, t.n);
    const int64_t bBlock =
        t.transB ? NzBytes(bCols, bRows, t.bBytes) : NzBytes(bRows, bCols, t.bBytes);
    const int64_t bChunks =
        CeilDiv(t.n, Max64(c.stepN, 1) * bn) * CeilDiv(t.k, Max64(c.stepKb, 1) * bk);
    const int64_t bDepth =
        Min64(Max64(c.depthB1 / Max64(Max64(c.stepN, 1) * Max64(c.stepKb, 1), 1), 1), bChunks);
    const int64_t biasL1 = t.bias ? AlignUp(bn * t.biasBytes, 32) : 0;
    const int64_t aL1 = t.aL1 ? 0 : aDepth * aBlock;
    const int64_t bL1 = t.bL1 ? 0 : bDepth * bBlock;
    const std::string aHow = t.aL1 ? std::string("A in TSCM")
                                   : "A " + s(aDepth) + " x " + s(aRows) + "x" + s(aCols) + " (" +
                                         s(aBlock) + " B, stepM " + s(c.stepM) + ", stepKa " +
                                         s(c.stepKa) + ", depthA1 " + s(c.depthA1) + ")";
    const std::string bHow = t.bL1 ? std::string("B in TSCM")
                                   : "B " + s(bDepth) + " x " + s(bRows) + "x" + s(bCols) + " (" +
                                         s(bBlock) + " B, stepKb " + s(c.stepKb) + ", stepN " +
                                         s(c.stepN) + ", depthB1 " + s(c.depthB1) + ")";
    out.push_back({"L1", uint64_t(aL1 + bL1 + biasL1), cap.l1,
                   aHow + " + " + bHow + (t.bias ? " + bias " + s(biasL1) + " B" : std::string())});
    return out;
}

// The first buffer that does not fit, as "L0C: needs 262144 bytes (...), capacity 131072"; empty if
// everything fits.
inline std::string CubeOverflow(const std::vector<CubeBufferNeed>& needs) {
    for (const auto& b : needs) {
        if (b.need > b.capacity) {
            return std::string(b.name) + " overflow: the tile needs " + std::to_string(b.need) +
                   " bytes (" + b.how + "), the buffer holds " + std::to_string(b.capacity);
        }
    }
    return std::string();
}

struct MatmulTilingArgs {
    DType a = DType::kFloat16;
    DType b = DType::kFloat16;
    DType c = DType::kFloat32;
    DType bias = DType::kFloat32;
    bool transA = false;
    bool transB = false;
    bool hasBias = false;
    bool aL1 = false;  // A / B in TSCM (CubeTile::aL1/bL1): p.l1_bytes is what the API has left
    bool bL1 = false;
    int64_t m = 0;  // A is [M, K] ([K, M] transposed), B [K, N] ([N, K]), C [M, N]
    int64_t n = 0;
    int64_t k = 0;
    // 0: chosen here; otherwise fixed, like SetFixSplit / GetMMConfig's MatmulShapeParams.
    int64_t singleM = 0;
    int64_t singleN = 0;
    int64_t baseM = 0;
    int64_t baseN = 0;
    int64_t baseK = 0;
    // SetDim (Matmul-Tiling类/SetDim.md): the cores the tiling may spread the tiles over, one tile
    // each. In MIX mode (the API driven from the AIVs, `mix`) they are AIVs - SetDim(
    // GetCoreNumAiv()), usedCoreNum the AIVs that call, blockDim CeilDiv(usedCoreNum, 2) AI cores
    // at AIC:AIV 1:2 -; in pure Cube mode (ASCENDC_CUBE_ONLY) AICs. 0: all of the platform's.
    uint32_t cores = 0;
    bool mix = true;
};

struct MatmulTiling {
    AscendC::tiling::TCubeTiling tiling{};
    std::string error;
    bool ok() const { return error.empty(); }
};

// Matmul使用说明.md table 2, the Atlas A2 rows without int8/int4: A and B the same of
// float/half/bfloat16, C float/half/bfloat16, bias float or half.
inline std::string MatmulTypesError(DType a, DType b, DType c, DType bias, bool hasBias) {
    auto fp = [](DType t) {
        return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
    };
    if (a != b || !fp(a))
        return "A and B must have the same dtype, float32, float16 or bfloat16";
    if (!fp(c))
        return "C must be float32, float16 or bfloat16";
    if (hasBias && bias != DType::kFloat32 && bias != DType::kFloat16)
        return "the bias must be float32 or float16";
    return std::string();
}

inline MatmulTiling MatmulApiTiling(const MatmulTilingArgs& a, const PlatformInfo& p) {
    MatmulTiling r;
    auto fail = [&r](const std::string& e) {
        r.error = "matmul tiling: " + e;
        return r;
    };
    const std::string types = MatmulTypesError(a.a, a.b, a.c, a.bias, a.hasBias);
    if (!types.empty())
        return fail(types);
    if (a.m <= 0 || a.n <= 0 || a.k <= 0)
        return fail("M, N and K must be positive");
    if (a.m > INT32_MAX || a.n > INT32_MAX || a.k > INT32_MAX)
        return fail("M, N and K must fit in int32");
    if (p.cube_cores == 0)
        return fail("the platform has no cube cores");
    const uint32_t platformCores = a.mix ? p.vector_cores : p.cube_cores;
    const uint32_t cores = a.cores != 0 ? a.cores : platformCores;
    CubeTile t;
    t.aBytes = DTypeSize(a.a);
    t.bBytes = DTypeSize(a.b);
    t.biasBytes = DTypeSize(a.bias);
    t.transA = a.transA;
    t.transB = a.transB;
    t.bias = a.hasBias;
    t.aL1 = a.aL1;
    t.bL1 = a.bL1;
    const CubeBuffers cap = CubeBuffersOf(p);

    // Split M and N over the cores (never K: singleCoreK = K): the grid with the least work on the
    // busiest core, then the least data it loads, then the fewest cores.
    int64_t sM = a.singleM, sN = a.singleN;
    if (sM <= 0 || sN <= 0) {
        int64_t best[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
        for (uint32_t mc = 1; mc <= cores; ++mc) {
            for (uint32_t nc = 1; mc * nc <= cores; ++nc) {
                const int64_t cm = Min64(AlignUp(CeilDiv(a.m, mc), 16), a.m);
                const int64_t cn = Min64(AlignUp(CeilDiv(a.n, nc), 16), a.n);
                const int64_t used = CeilDiv(a.m, cm) * CeilDiv(a.n, cn);
                const int64_t key[3] = {AlignUp(cm, 16) * AlignUp(cn, 16), (cm + cn) * a.k, used};
                if (key[0] < best[0] ||
                    (key[0] == best[0] &&
                     (key[1] < best[1] || (key[1] == best[1] && key[2] < best[2])))) {
                    best[0] = key[0];
                    best[1] = key[1];
                    best[2] = key[2];
                    sM = cm;
                    sN = cn;
                }
            }
        }
    }
    t.m = sM;
    t.n = sN;
    t.k = a.k;
    const int64_t used = CeilDiv(a.m, sM) * CeilDiv(a.n, sN);
    if (used > cores)
        return fail("singleCoreM/N " + std::to_string(sM) + "/" + std::to_string(sN) + " need " +
                    std::to_string(used) + " cores, SetDim allows " + std::to_string(cores));

    const int64_t kAlign = BaseKAlign(t);
    const bool f32 = a.a == DType::kFloat32;
    int64_t bm = a.baseM > 0 ? a.baseM : Min64(128, AlignUp(sM, 16));
    int64_t bn = a.baseN > 0 ? a.baseN : Min64(256, AlignUp(sN, 16));
    int64_t bk = a.baseK > 0 ? a.baseK : Min64(f32 ? 32 : 64, AlignUp(a.k, kAlign));
    if (bm % 16 != 0 || bn % 16 != 0)
        return fail("baseM and baseN must be multiples of 16");
    if (bk % kAlign != 0)
        return fail("baseK must be a multiple of " + std::to_string(kAlign));

    AscendC::tiling::TCubeTiling& c = r.tiling;
    c.usedCoreNum = static_cast<int32_t>(used);
    c.M = static_cast<int32_t>(a.m);
    c.N = static_cast<int32_t>(a.n);
    c.Ka = c.Kb = static_cast<int32_t>(a.k);
    c.singleCoreM = static_cast<int32_t>(sM);
    c.singleCoreN = static_cast<int32_t>(sN);
    c.singleCoreK = static_cast<int32_t>(a.k);
    c.baseM = static_cast<int32_t>(bm);
    c.baseN = static_cast<int32_t>(bn);
    c.baseK = static_cast<int32_t>(bk);
    c.isBias = a.hasBias ? 1 : 0;
    c.iterateOrder = 0;
    c.stepM = c.stepN = 1;
    c.dbL0C = 1;
    c.batchM = c.batchN = c.singleBatchM = c.singleBatchN = 1;
    // L0 double buffering where it fits.
    c.dbL0A = c.dbL0B = 2;
    auto needs = CubeFootprint(c, t, cap);
    if (needs[0].need > cap.l0a)
        c.dbL0A = 1;
    if (needs[1].need > cap.l0b)
        c.dbL0B = 1;
    // K loaded whole into L1 if it fits, double-buffered if that fits too; else fewer K steps.
    // K whole single-buffered comes before double-buffered parts of K: a chunk without all of K
    // is loaded again for every block of the other operand (cube.h MmGmToL1).
    const int64_t kIters = CeilDiv(a.k, Min64(bk, AlignUp(a.k, kAlign)));
    bool fits = false;
    for (int64_t step = kIters; step >= 1 && !fits; --step) {
        for (int64_t db = 2; db >= 1 && !fits; --db) {
            c.stepKa = c.stepKb = static_cast<int32_t>(step);
            c.depthA1 = c.depthB1 = static_cast<int32_t>(step * db);
            needs = CubeFootprint(c, t, cap);
            fits = CubeOverflow(needs).empty();
        }
    }
    if (!fits)
        return fail(CubeOverflow(needs));
    c.shareL1Size = static_cast<int32_t>(needs[4].need);
    c.shareL0CSize = static_cast<int32_t>(needs[2].need);
    return r;
}

}  // namespace mxrec

#endif  // MXREC_MATMUL_TILING_H
