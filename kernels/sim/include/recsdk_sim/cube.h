// The Cube unit of an AIC as the Matmul emulation (recsdk_sim/matmul.h) uses it: which AIC serves a
// call, whether the tile fits its L1/L0A/L0B/L0C/BiasTable, the arithmetic, and the counters.
//
// Semantics:
// - Matmul使用说明.md "实现原理": A and B move GM -> L1 (A1/B1, MTE2) in chunks of stepM x stepKa
//   (stepKb x stepN) base blocks, L1 -> L0A/L0B (MTE1) one base block at a time, the Cube (M)
//   multiplies baseM x baseK by baseK x baseN into L0C, accumulating over K in L0C, and the result
//   leaves L0C (FIX) for GM or the unified buffer.
// - Mmad.md / Cube指令理论性能汇总.md: half, bfloat16_t and float inputs accumulate in float; the
//   fractals are 16 x k0 with k0 = 32 bytes of the input type, so the Cube works on m and n padded
//   to 16 and k padded to k0; per cycle it does cube_m x cube_n x cube_k MACs (runtime.h SocTable).
// - Fixpipe (NPU架构版本2201.md "支持Fixpipe硬件化加速": FP322FP16, FP322BF16): the float result is
//   converted once on the way out; the emulation rounds to nearest even, as the vector Cast with
//   CAST_RINT does (types.h). enAtomic (IterateAll.md): 1 adds, 2 takes the max, 3 the min, element
//   by element in C's type.
//
// Pipe hazards (recsdk_sim/hazard.h): the Matmul API moves its operands through L1/L0 and
// synchronises MTE2/MTE1/M/FIX itself, and kernels never touch those buffers, so the emulation
// records no Cube-pipe accesses there (they could only ever be ordered). What a kernel does see is
// recorded: GetTensorC into a VECIN tensor is an MTE2 write of the AIV's unified buffer, and a
// Cube result in global memory is checked against the other cores' reads (mix.h, cross-core
// ordering). The low-level Cube API (cube_basic.h) records its L1/L0 accesses on MTE1/M/FIX.
//
// Not modelled: the order in which the hardware sums the products of one element (the emulation
// adds them in increasing k, each product rounded to float first: exact for half/bfloat16 inputs,
// one rounding per product for float); HF32; int8/int4 inputs; NZ operands in GM; the timing of the
// pipes. NZ operands in L1 (TSCM, matmul.h) are read in place.
#ifndef RECSDK_SIM_CUBE_H
#define RECSDK_SIM_CUBE_H

#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "matmul_tiling.h"  // kernels/common: CubeFootprint, shared with the host tiling
#include "recsdk_sim/mix.h"
#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"

namespace recsdk::sim {

template <typename T>
constexpr bool kCubeInput =
    std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;

template <typename T>
inline uint32_t CubeMacsPerCycle(const SocInfo& s) {
    if constexpr (std::is_same_v<T, float>) {
        return s.cube_macs_f32;
    } else if constexpr (sizeof(T) == 1) {
        return s.cube_macs_b8;
    } else {
        return s.cube_macs_b16;
    }
}

// The AIC that runs a Matmul call of the calling core, held for the call: an AIC serves its own
// calls (ASCENDC_CUBE_ONLY, AIC-only kernels) or, in MIX mode, those of the AIVs of its AI core,
// one at a time. Its counters go to CubeCore::served and reach the AIC's report entry when the
// launch ends.
struct CubeExec {
    CubeCore* cube;
    const SocInfo* soc;
    std::unique_lock<std::mutex> lock;
    RecsdkSimCoreStats& stats() { return cube->served; }
};

inline CubeExec AcquireCube(bool cubeOnly, const char* call, const SrcLoc& loc) {
    CoreState& c = Core();
    LaunchState& l = *c.launch;
    if (l.aic_per_block == 0) {
        Fail(call, loc,
             std::string("the Matmul API runs on the Cube unit, but the kernel was launched as ") +
                 KernelTypeName(l.kernel_type) +
                 " with no cube cores (KERNEL_TYPE_MIX_AIC_1_2 runs one AIC and two AIV per AI "
                 "core)");
    }
    if (c.core_type == kAiv && cubeOnly) {
        Fail(call, loc,
             "with ASCENDC_CUBE_ONLY the Matmul object runs on the AIC itself, and a vector core "
             "called it "
             "(Matmul使用说明.md: separate the Cube code with `if ASCEND_IS_AIC`)");
    }
    CubeCore& cube = l.cube->cubes[c.block];
    return CubeExec{&cube, l.soc, std::unique_lock<std::mutex>(cube.mu)};
}

// One computation: the tile of C a call produces and where its operands are.
template <typename A, typename B, typename Bias>
struct MmOperands {
    const A* a = nullptr;
    const B* b = nullptr;
    const Bias* bias = nullptr;   // nullptr: no bias
    int64_t m = 0, n = 0, k = 0;  // singleCoreM/N/K
    int64_t lda = 0;              // row stride of A as stored: Ka, or M when transposed ([K, M])
    int64_t ldb = 0;              // N, or Kb when transposed ([N, K])
    bool transA = false;
    bool transB = false;
    // In L1 (TSCM) as NZ: lda/ldb is then the stored matrix's row count padded to 16, the
    // distance between its 32-byte column groups in C0 rows.
    bool aNz = false;
    bool bNz = false;
};

// Element (r, c) of a stored matrix: ND with row stride ld, or NZ (column groups of C0 = 32 bytes,
// each ld rows of C0 elements).
template <typename T>
inline T MmStored(const T* p, int64_t ld, bool nz, int64_t r, int64_t c) {
    if (!nz)
        return p[r * ld + c];
    constexpr int64_t c0 = 32 / sizeof(T);
    return p[(c / c0) * ld * c0 + r * c0 + c % c0];
}

// The fp32 products of one base block [m0, m0 + bm) x [n0, n0 + bn) of the tile into acc (bm x bn,
// row-major), K in steps of baseK as the Mmad instructions go, counting what each step moves and
// issues. acc starts from the bias (or is accumulated into, enPartialSum).
template <typename A, typename B, typename Bias>
inline void MmBlock(const MmOperands<A, B, Bias>& x, const AscendC::tiling::TCubeTiling& t,
                    int64_t m0, int64_t n0, int64_t bm, int64_t bn, bool accumulate, float* acc,
                    RecsdkSimCoreStats& st, uint64_t* macs) {
    if (!accumulate) {
        for (int64_t i = 0; i < bm; ++i) {
            for (int64_t j = 0; j < bn; ++j)
                acc[i * bn + j] = x.bias ? static_cast<float>(x.bias[n0 + j]) : 0.0f;
        }
    }
    constexpr int64_t k0a = 32 / sizeof(A);
    constexpr int64_t k0b = 32 / sizeof(B);
    const int64_t kAlign = (!x.transA && x.transB) ? k0a : 16;
    const int64_t bk = mxrec::Min64(t.baseK, mxrec::AlignUp(x.k, kAlign));
    std::vector<float> aF(static_cast<size_t>(bm * bk));
    std::vector<float> bF(static_cast<size_t>(bk * bn));
    for (int64_t k0 = 0; k0 < x.k; k0 += bk) {
        const int64_t kk = mxrec::Min64(bk, x.k - k0);
        // L1 -> L0A / L0B: one base block each, in fractals.
        st.l1_to_l0_bytes += uint64_t(mxrec::AlignUp(bm, 16) * mxrec::AlignUp(kk, k0a) * sizeof(A) +
                                      mxrec::AlignUp(kk, k0b) * mxrec::AlignUp(bn, 16) * sizeof(B));
        const uint64_t issued =
            uint64_t(mxrec::AlignUp(bm, 16) * mxrec::AlignUp(bn, 16) * mxrec::AlignUp(kk, k0a));
        st.cube_macs += issued;
        *macs += issued;
        for (int64_t i = 0; i < bm; ++i) {
            for (int64_t p = 0; p < kk; ++p) {
                const int64_t row = m0 + i, col = k0 + p;
                aF[i * kk + p] =
                    static_cast<float>(x.transA ? MmStored(x.a, x.lda, x.aNz, col, row)
                                                : MmStored(x.a, x.lda, x.aNz, row, col));
            }
        }
        for (int64_t p = 0; p < kk; ++p) {
            for (int64_t j = 0; j < bn; ++j) {
                const int64_t row = k0 + p, col = n0 + j;
                bF[p * bn + j] =
                    static_cast<float>(x.transB ? MmStored(x.b, x.ldb, x.bNz, col, row)
                                                : MmStored(x.b, x.ldb, x.bNz, row, col));
            }
        }
        // Each element adds its products in increasing k, in float (L0C accumulates across steps).
        for (int64_t i = 0; i < bm; ++i) {
            float* out = acc + i * bn;
            for (int64_t p = 0; p < kk; ++p) {
                const float av = aF[i * kk + p];
                const float* brow = bF.data() + p * bn;
                for (int64_t j = 0; j < bn; ++j) {
                    const float prod = av * brow[j];
                    out[j] += prod;
                }
            }
        }
    }
    st.cube_useful_macs += uint64_t(bm * bn * x.k);
}

// GM -> L1 traffic of a whole tile under the tiling's L1 caching (Matmul使用说明.md "实现原理"):
// with iterateOrder 0 the M blocks run innermost, so A is loaded again for every N block unless all
// of A stays in L1 (stepM x baseM >= M and stepKa x baseK >= K), and a column block of B is loaded
// once if its whole K stays in L1 (stepKb x baseK >= K), else once per M block; iterateOrder 1
// swaps the roles. Counts the bytes (by operand: A or B may be workspace) and the loads as DMA
// transfers into `st`; returns the bytes.
template <typename A, typename B, typename Bias>
inline uint64_t MmGmToL1(const MmOperands<A, B, Bias>& x, const AscendC::tiling::TCubeTiling& t,
                         RecsdkSimCoreStats& st) {
    const int64_t kAlign = (!x.transA && x.transB) ? int64_t(32 / sizeof(A)) : 16;
    const int64_t bm = mxrec::Min64(t.baseM, mxrec::AlignUp(x.m, 16));
    const int64_t bn = mxrec::Min64(t.baseN, mxrec::AlignUp(x.n, 16));
    const int64_t bk = mxrec::Min64(t.baseK, mxrec::AlignUp(x.k, kAlign));
    const int64_t stepM = mxrec::Max64(t.stepM, 1), stepN = mxrec::Max64(t.stepN, 1);
    const int64_t stepKa = mxrec::Max64(t.stepKa, 1), stepKb = mxrec::Max64(t.stepKb, 1);
    const int64_t mBlocks = mxrec::CeilDiv(x.m, bm), nBlocks = mxrec::CeilDiv(x.n, bn);
    const bool aKFull = stepKa * bk >= x.k, bKFull = stepKb * bk >= x.k;
    const bool aAll = aKFull && stepM * bm >= x.m, bAll = bKFull && stepN * bn >= x.n;
    int64_t aTimes, bTimes;
    if (t.iterateOrder == 1) {
        bTimes = bAll ? 1 : mBlocks;
        aTimes = aKFull ? 1 : nBlocks;
    } else {
        aTimes = aAll ? 1 : nBlocks;
        bTimes = bKFull ? 1 : mBlocks;
    }
    // An operand already in L1 (TSCM) is not loaded at all.
    if (x.aNz)
        aTimes = 0;
    if (x.bNz)
        bTimes = 0;
    const int64_t aChunks = mxrec::CeilDiv(x.m, stepM * bm) * mxrec::CeilDiv(x.k, stepKa * bk);
    const int64_t bChunks = mxrec::CeilDiv(x.n, stepN * bn) * mxrec::CeilDiv(x.k, stepKb * bk);
    st.dma_transfers += uint64_t(aChunks * aTimes + bChunks * bTimes + (x.bias ? 1 : 0));
    const uint64_t aBytes = uint64_t(x.m * x.k * aTimes) * sizeof(A);
    const uint64_t bBytes = uint64_t(x.k * x.n * bTimes) * sizeof(B);
    const uint64_t biasBytes = x.bias ? uint64_t(x.n) * sizeof(Bias) : 0;
    if (aBytes != 0)
        CountGmRead(st, x.a, aBytes);
    if (bBytes != 0)
        CountGmRead(st, x.b, bBytes);
    if (x.bias)
        CountGmRead(st, x.bias, biasBytes);
    st.gm_to_l1_bytes += aBytes + bBytes + biasBytes;
    return aBytes + bBytes + biasBytes;
}

// enAtomic 1/2/3 on one element of C's type (real atomics: several cores may target one element).
template <typename T>
inline void AtomicCubeOut(T* dst, float v, uint8_t mode) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "C is float, half or bfloat16_t");
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    const T add = static_cast<T>(v);
    auto* word = reinterpret_cast<Bits*>(dst);
    Bits expected = __atomic_load_n(word, __ATOMIC_RELAXED);
    for (;;) {
        T cur;
        std::memcpy(&cur, &expected, sizeof(T));
        const float a = static_cast<float>(cur), b = static_cast<float>(add);
        T next;
        if (mode == 1) {
            next = static_cast<T>(a + b);
        } else if (mode == 2) {
            next = a < b ? add : cur;
        } else {
            next = b < a ? add : cur;
        }
        Bits desired;
        std::memcpy(&desired, &next, sizeof(T));
        if (__atomic_compare_exchange_n(word, &expected, desired, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return;
    }
}

// Rows [0, rows) of `cols` elements with stride `ld` from `p` must lie in the tensors passed to the
// kernel, and within `size` elements of the GlobalTensor (SetGlobalBuffer's bufferSize).
template <typename T>
inline void CheckGmMatrix(const T* p, uint64_t size, int64_t rows, int64_t cols, int64_t ld,
                          bool write, const char* what, const char* call, const SrcLoc& loc) {
    if (rows <= 0 || cols <= 0)
        return;
    const CubeGmScope cube;  // the Cube's own accesses: not the cross-core check's (mix.h)
    const uint64_t span = uint64_t(rows - 1) * uint64_t(ld) + uint64_t(cols);
    if (span > size) {
        Fail(call, loc,
             std::string(what) + " spans " + std::to_string(span) + " elements (" +
                 std::to_string(rows) + " rows of " + std::to_string(cols) + ", row stride " +
                 std::to_string(ld) + "), but its GlobalTensor holds " + std::to_string(size));
    }
    for (int64_t r = 0; r < rows; ++r)
        CheckGm(p + r * ld, uint64_t(cols) * sizeof(T), write, call, loc);
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_CUBE_H
