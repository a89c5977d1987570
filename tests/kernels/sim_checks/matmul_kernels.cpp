// Kernels for the tests of the emulated Cube (tests/kernels/test_sim_matmul.py): multi-core matmuls
// through the Matmul API in MIX mode (the AIVs drive, their AIC computes) and with
// ASCENDC_CUBE_ONLY (the AIC drives), a mixed kernel whose AIC hands a product to its AIVs through
// the workspace and cross-core flags, and kernels that break one rule each.
//
// recsdk_sim_mm_tiling(case, tiling) runs the host tiling (kernels/common/matmul_tiling.h);
// recsdk_sim_mm_run(case, tiling, report) runs case->kernel on the given tensors with that tiling.
// recsdk_sim_mm_op(...) is a mixed operator through the op launcher (recsdk_sim/op_launcher.h), as
// a generated operator library would be: c = a * b, half in, float out.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "matmul_tiling.h"
#include "recsdk_sim/launch.h"
#include "recsdk_sim/op_launcher.h"

using namespace AscendC;
using recsdk::sim::GmRegion;

extern "C" {
// What Python passes (tests/kernels/test_sim_matmul.py mirrors it). dtypes are RecsdkSimDType.
struct MmCase {
    const char* kernel;
    const char* soc;
    int64_t a_dtype;
    int64_t c_dtype;
    int64_t trans_a;
    int64_t trans_b;
    int64_t m;
    int64_t n;
    int64_t k;
    int64_t has_bias;
    int64_t atomic;   // enAtomic of every IterateAll / GetTensorC
    int64_t repeat;   // computations per tile (atomic accumulation across calls)
    int64_t k_split;  // K slices spread over cores (atomic accumulation across cores)
    int64_t blocks;   // blockDim (AI cores)
    int64_t tiles;    // tiles of the tiling grid (the tiling's cores)
    int64_t extra;    // kernel-specific
    void* a;
    void* b;
    void* bias;
    void* c;
    void* ws;
    int64_t ws_bytes;
    void* out;  // int64 results of kernels that report what they saw
    int64_t out_len;
};
}

namespace {

const MmCase* g = nullptr;
GM_ADDR g_tiling = nullptr;

int64_t ElemBytes(int64_t dtype) {
    return dtype == RECSDK_DT_FLOAT32 ? 4 : 2;
}

// ---- the matmul kernels
// ----------------------------------------------------------------------------

// One worker's share: tile t of the grid (M tiles x N tiles x K slices), every tile in turn when
// fewer workers than tiles.
template <class MM, typename A, typename C>
void ComputeTiles(MM& mm, const TCubeTiling& t, int64_t worker, int64_t workers) {
    using BiasT = float;
    const int64_t M = g->m, N = g->n, K = g->k;
    const int64_t sM = t.singleCoreM, sN = t.singleCoreN;
    const int64_t mTiles = (M + sM - 1) / sM, nTiles = (N + sN - 1) / sN;
    const int64_t kSlices = g->k_split > 0 ? g->k_split : 1;
    const int64_t kSlice = (K + kSlices - 1) / kSlices;
    GlobalTensor<A> a, b;
    GlobalTensor<C> c;
    GlobalTensor<BiasT> bias;
    a.SetGlobalBuffer((__gm__ A*)g->a, M * K);
    b.SetGlobalBuffer((__gm__ A*)g->b, K * N);
    c.SetGlobalBuffer((__gm__ C*)g->c, M * N);
    if (g->has_bias)
        bias.SetGlobalBuffer((__gm__ BiasT*)g->bias, N);
    for (int64_t tile = worker; tile < mTiles * nTiles * kSlices; tile += workers) {
        const int64_t tm = tile / (nTiles * kSlices), tn = (tile / kSlices) % nTiles,
                      tk = tile % kSlices;
        const int64_t m0 = tm * sM, n0 = tn * sN, k0 = tk * kSlice;
        const int64_t m = std::min(sM, M - m0), n = std::min(sN, N - n0),
                      k = std::min(kSlice, K - k0);
        if (k <= 0)
            continue;
        mm.SetTail(m, n, k);
        mm.SetTensorA(a[g->trans_a ? k0 * M + m0 : m0 * K + k0], g->trans_a != 0);
        mm.SetTensorB(b[g->trans_b ? n0 * K + k0 : k0 * N + n0], g->trans_b != 0);
        if (g->has_bias)
            mm.SetBias(bias[n0]);
        for (int64_t r = 0; r < std::max<int64_t>(g->repeat, 1); ++r) {
            if (g->extra == 1) {  // Iterate / GetTensorC, synchronous
                while (mm.Iterate())
                    mm.GetTensorC(c[m0 * N + n0], static_cast<uint8_t>(g->atomic));
            } else if (g->extra == 2) {  // Iterate<false>, then every block with GetTensorC<false>
                mm.template Iterate<false>();
                const int64_t blocks =
                    ((m + t.baseM - 1) / t.baseM) * ((n + t.baseN - 1) / t.baseN);
                for (int64_t i = 0; i < blocks; ++i)
                    mm.template GetTensorC<false>(c[m0 * N + n0], static_cast<uint8_t>(g->atomic));
            } else if (g->extra == 3) {  // asynchronous IterateAll, waited for
                mm.template IterateAll<false>(c[m0 * N + n0], static_cast<uint8_t>(g->atomic),
                                              false, true);
                mm.WaitIterateAll();
            } else {
                mm.IterateAll(c[m0 * N + n0], static_cast<uint8_t>(g->atomic));
            }
        }
        mm.End();
    }
}

template <typename A, typename C, bool TA, bool TB>
void MmMix() {  // MIX mode: REGIST_MATMUL_OBJ sends the AIC back; the AIVs call the API
    using AT = MatmulType<TPosition::GM, CubeFormat::ND, A, TA>;
    using BT = MatmulType<TPosition::GM, CubeFormat::ND, A, TB>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, C>;
    using BiasT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<AT, BT, CT, BiasT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    ComputeTiles<decltype(mm), A, C>(mm, t, GetBlockIdx(), GetBlockNum() * GetTaskRation());
}

#define ASCENDC_CUBE_ONLY
template <typename A, typename C, bool TA, bool TB>
void MmCube() {  // ASCENDC_CUBE_ONLY, KERNEL_TYPE_AIC_ONLY: each AIC computes its tiles
    using AT = MatmulType<TPosition::GM, CubeFormat::ND, A, TA>;
    using BT = MatmulType<TPosition::GM, CubeFormat::ND, A, TB>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, C>;
    using BiasT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<AT, BT, CT, BiasT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    ComputeTiles<decltype(mm), A, C>(mm, t, GetBlockIdx(), GetBlockNum());
}

// The mixed kernel of the brief: per AI core, the AIC writes C_blk = A_blk * B to the workspace
// (fp32) and sets flag 3 (mode 2); each AIV waits for it and writes 2 * x + 1 for its half of the
// block's rows into C. extra = 1: the AIC forgets the flag (the AIVs would wait forever); 2: the
// AIC signals through a word in global memory that the AIVs poll, which does not order the Cube's
// write before their reads.
void MixPostprocess() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    constexpr uint16_t kReady = 3;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    const int64_t N = g->n, K = g->k;
    const int64_t rowsPerBlock = (g->m + GetBlockNum() - 1) / GetBlockNum();
    const int64_t block = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / GetTaskRation();
    const int64_t r0 = block * rowsPerBlock, rows = std::min(rowsPerBlock, g->m - r0);
    GlobalTensor<float> ws;
    ws.SetGlobalBuffer((__gm__ float*)g->ws, g->m * N);
    if ASCEND_IS_AIC {
        using AT = MatmulType<TPosition::GM, CubeFormat::ND, half>;
        using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
        TPipe pipe;
        Matmul<AT, AT, CT> mm;
        REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
        GlobalTensor<half> a, b;
        a.SetGlobalBuffer((__gm__ half*)g->a, g->m * K);
        b.SetGlobalBuffer((__gm__ half*)g->b, K * N);
        if (rows > 0) {
            mm.SetTail(rows, N, K);
            mm.SetTensorA(a[r0 * K]);
            mm.SetTensorB(b);
            mm.IterateAll(ws[r0 * N]);
            mm.End();
        }
        if (g->extra == 2) {  // a flag in GM instead of a cross-core flag (orders nothing)
            GlobalTensor<int64_t> done;
            done.SetGlobalBuffer((__gm__ int64_t*)g->out, g->out_len);
            done.SetValue(block, 1);
        } else if (g->extra != 1) {
            CrossCoreSetFlag<2, PIPE_FIX>(kReady);
        }
        return;
    }
    if (g->extra == 2) {
        GlobalTensor<int64_t> done;
        done.SetGlobalBuffer((__gm__ int64_t*)g->out, g->out_len);
        while (done.GetValue(block) == 0)
            std::this_thread::yield();
    } else {
        CrossCoreWaitFlag(kReady);
    }
    const int64_t half0 = (rows + 1) / 2;
    const int64_t mine0 = r0 + (GetSubBlockIdx() == 0 ? 0 : half0);
    const int64_t mine = GetSubBlockIdx() == 0 ? half0 : rows - half0;
    GlobalTensor<float> c;
    c.SetGlobalBuffer((__gm__ float*)g->c, g->m * N);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, N * sizeof(float));
    pipe.InitBuffer(outQ, 1, N * sizeof(float));
    for (int64_t r = mine0; r < mine0 + mine; ++r) {
        LocalTensor<float> x = inQ.AllocTensor<float>();
        DataCopy(x, ws[r * N], N);
        inQ.EnQue(x);
        LocalTensor<float> y = inQ.DeQue<float>();
        LocalTensor<float> z = outQ.AllocTensor<float>();
        Muls(z, y, 2.0f, N);
        Adds(z, z, 1.0f, N);
        inQ.FreeTensor(y);
        outQ.EnQue(z);
        LocalTensor<float> w = outQ.DeQue<float>();
        DataCopy(c[r * N], w, N);
        outQ.FreeTensor(w);
    }
}
#undef ASCENDC_CUBE_ONLY

// What each core of a mixed launch sees: out[slot * 6 + {type, GetBlockIdx, GetBlockNum,
// GetSubBlockIdx, GetSubBlockNum, GetTaskRation}], the slot AICs first then AIVs by block index.
void MixIds() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<int64_t> out;
    out.SetGlobalBuffer((__gm__ int64_t*)g->out, g->out_len);
    const int64_t slot = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockNum() + GetBlockIdx();
    const int64_t vals[6] = {ASCEND_IS_AIC ? AIC : AIV, GetBlockIdx(),    GetBlockNum(),
                             GetSubBlockIdx(),          GetSubBlockNum(), GetTaskRation()};
    for (int i = 0; i < 6; ++i)
        out.SetValue(slot * 6 + i, vals[i]);
}

// The AIVs of each AI core meet through mode 1, all AIVs through mode 0, and each AIC waits for its
// AIVs (mode 2): out[GetBlockIdx() of the AIV] counts the passes.
void MixFlagModes() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if ASCEND_IS_AIC {
        CrossCoreWaitFlag(5);
        return;
    }
    CrossCoreSetFlag<1, PIPE_MTE3>(1);
    CrossCoreWaitFlag(1);
    CrossCoreSetFlag<0, PIPE_MTE3>(2);
    CrossCoreWaitFlag(2);
    CrossCoreSetFlag<2, PIPE_MTE3>(5);
    GlobalTensor<int64_t> out;
    out.SetGlobalBuffer((__gm__ int64_t*)g->out, g->out_len);
    out.SetValue(GetBlockIdx(), 2);
}

// C through the unified buffer: each block of every AIV's tile comes out of GetTensorC into a
// VECIN tensor (enSequentialWrite: rows of the block's width), is doubled on the vector unit and
// copied to C row by row. extra 1: the block is also copied out before EnQue/DeQue (a hazard);
// 2: enSequentialWrite = false, which puts the block at its place in the tile (too big for the
// baseM x baseN tensor).
void MmToUb() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    using AT = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::VECIN, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<AT, AT, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    const int64_t M = g->m, N = g->n, K = g->k;
    const int64_t block = int64_t(t.baseM) * t.baseN;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, block * sizeof(float));
    pipe.InitBuffer(outQ, 1, block * sizeof(float));
    GlobalTensor<half> a, b;
    GlobalTensor<float> c;
    a.SetGlobalBuffer((__gm__ half*)g->a, M * K);
    b.SetGlobalBuffer((__gm__ half*)g->b, K * N);
    c.SetGlobalBuffer((__gm__ float*)g->c, M * N);
    const int64_t nTiles = (N + t.singleCoreN - 1) / t.singleCoreN;
    const int64_t tiles = ((M + t.singleCoreM - 1) / t.singleCoreM) * nTiles;
    for (int64_t tile = GetBlockIdx(); tile < tiles; tile += GetBlockNum() * GetTaskRation()) {
        const int64_t m0 = tile / nTiles * t.singleCoreM, n0 = tile % nTiles * t.singleCoreN;
        const int64_t m = std::min<int64_t>(t.singleCoreM, M - m0),
                      n = std::min<int64_t>(t.singleCoreN, N - n0);
        mm.SetTail(m, n, K);
        mm.SetTensorA(a[m0 * K]);
        mm.SetTensorB(b[n0]);
        // iterateOrder 0: blocks run along M first.
        const int64_t bm = std::min<int64_t>(t.baseM, (m + 15) / 16 * 16);
        const int64_t bn = std::min<int64_t>(t.baseN, (n + 15) / 16 * 16);
        const int64_t mBlocks = (m + bm - 1) / bm;
        for (int64_t i = 0; mm.Iterate(); ++i) {
            const int64_t r0 = m0 + (i % mBlocks) * bm, c0 = n0 + (i / mBlocks) * bn;
            const int64_t rows = std::min<int64_t>(bm, m0 + m - r0),
                          cols = std::min<int64_t>(bn, n0 + n - c0);
            DataCopyExtParams row{1, static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
            LocalTensor<float> x = inQ.AllocTensor<float>();
            // GetTensorC.md: enSequentialWrite = true packs the block as [rows, cols].
            mm.GetTensorC(x, 0, g->extra != 2);
            if (g->extra == 1) {  // straight out again: MTE3 after the API's MTE2, unordered
                for (int64_t r = 0; r < rows; ++r)
                    DataCopyPad(c[(r0 + r) * N + c0], x[r * cols], row);
            }
            inQ.EnQue(x);
            LocalTensor<float> y = inQ.DeQue<float>();
            LocalTensor<float> z = outQ.AllocTensor<float>();
            Muls(z, y, 2.0f, static_cast<int32_t>(block));
            inQ.FreeTensor(y);
            outQ.EnQue(z);
            LocalTensor<float> w = outQ.DeQue<float>();
            for (int64_t r = 0; r < rows; ++r)
                DataCopyPad(c[(r0 + r) * N + c0], w[r * cols], row);
            outQ.FreeTensor(w);
        }
        mm.End();
    }
}

// An asynchronous IterateAll with waitIterateAll: C (filled with 7 by the test) is read before
// (extra 0: a race the checker reports) and after WaitIterateAll; out[i] = 1 where it held 7.
void MmAsyncPeek() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    using AT = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<AT, AT, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    if (GetBlockIdx() != 0)
        return;
    GlobalTensor<half> a, b;
    GlobalTensor<float> c;
    GlobalTensor<int64_t> out;
    a.SetGlobalBuffer((__gm__ half*)g->a, g->m * g->k);
    b.SetGlobalBuffer((__gm__ half*)g->b, g->k * g->n);
    c.SetGlobalBuffer((__gm__ float*)g->c, g->m * g->n);
    out.SetGlobalBuffer((__gm__ int64_t*)g->out, g->out_len);
    mm.SetTail(g->m, g->n, g->k);
    mm.SetTensorA(a);
    mm.SetTensorB(b);
    mm.template IterateAll<false>(c, 0, false, true);
    if (g->extra == 0)
        out.SetValue(0, c.GetValue(0) == 7.0f ? 1 : 0);
    mm.WaitIterateAll();
    out.SetValue(1, c.GetValue(0) == 7.0f ? 1 : 0);
    mm.End();
}

// ---- operands in L1 (TSCM)
// -----------------------------------------------------------------------

// rows x cols of src (row stride ld) into a TSCM tensor as NZ: column groups CeilAlign(rows, 16)
// rows apart, as the Matmul API reads an operand in L1.
template <typename T>
void CopyNz(const LocalTensor<T>& dst, const GlobalTensor<T>& src, int64_t rows, int64_t cols,
            int64_t ld) {
    Nd2NzParams p;
    p.ndNum = 1;
    p.nValue = static_cast<uint16_t>(rows);
    p.dValue = static_cast<uint16_t>(cols);
    p.srcDValue = static_cast<uint16_t>(ld);
    p.dstNzC0Stride = static_cast<uint16_t>(mxrec::AlignUp(rows, 16));
    p.dstNzNStride = 1;
    DataCopy(dst, src, p);
}

// C = A B with A (and B when BL1) copied GM -> TSCM by the AIV and read there by the Cube; one AIV
// computes. extra: 1 no EnQue/DeQue between the copy and the Cube, 2 A given 512 elements into its
// buffer, 3 a vector instruction on A's L1 tensor, 4 every AIV asks for 300 KiB of TSCM, 5 TSCM
// leaves the API too little L1 for B's chunks, 6 A freed before the computation.
template <typename A, bool TB, bool BL1>
void MmTscm() {
    constexpr TPosition kBPos = BL1 ? TPosition::TSCM : TPosition::GM;
    constexpr CubeFormat kBFormat = BL1 ? CubeFormat::NZ : CubeFormat::ND;
    using AT = MatmulType<TPosition::TSCM, CubeFormat::NZ, A, false>;
    using BT = MatmulType<kBPos, kBFormat, A, TB>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<AT, BT, CT, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    const int64_t M = g->m, N = g->n, K = g->k;
    const bool tb = g->trans_b != 0;  // ISTRANS (TB) allows it; float needs them equal
    const int64_t bRows = tb ? N : K, bCols = tb ? K : N;
    const auto aBytes = static_cast<uint32_t>(mxrec::NzBytes(M, K, sizeof(A)));
    const auto bBytes = static_cast<uint32_t>(mxrec::NzBytes(bRows, bCols, sizeof(A)));
    TSCM<TPosition::GM, 1> aQ, bQ, padQ;
    if (g->extra == 4) {  // both hold their TSCM at once (SyncAll), as two long-lived kernels do
        pipe.InitBuffer(padQ, 1, 300 * 1024);
        SyncAll();
        return;
    }
    if (GetBlockIdx() != 0)
        return;
    pipe.InitBuffer(aQ, 1, aBytes);
    if constexpr (BL1)
        pipe.InitBuffer(bQ, 1, bBytes);
    if (g->extra == 5)
        pipe.InitBuffer(padQ, 1, 512 * 1024 - aBytes - 2048);
    GlobalTensor<A> a, b;
    GlobalTensor<float> c;
    a.SetGlobalBuffer((__gm__ A*)g->a, M * K);
    b.SetGlobalBuffer((__gm__ A*)g->b, K * N);
    c.SetGlobalBuffer((__gm__ float*)g->c, M * N);
    LocalTensor<A> aL = aQ.AllocTensor<A>();
    if (g->extra == 7)  // A is already NZ in GM: a contiguous copy
        DataCopy(aL, a, aBytes / static_cast<uint32_t>(sizeof(A)));
    else
        CopyNz(aL, a, M, K, K);
    if (g->extra == 3)
        Duplicate(aL, static_cast<A>(0.0f), 16);
    LocalTensor<A> bL;
    if constexpr (BL1) {
        bL = bQ.AllocTensor<A>();
        CopyNz(bL, b, bRows, bCols, bCols);
    }
    if (g->extra != 1) {
        aQ.EnQue(aL);
        aL = aQ.DeQue<A>();
        if constexpr (BL1) {
            bQ.EnQue(bL);
            bL = bQ.DeQue<A>();
        }
    }
    mm.SetTail(M, N, K);
    mm.SetTensorA(g->extra == 2 ? aL[512] : aL);
    if constexpr (BL1)
        mm.SetTensorB(bL, tb);
    else
        mm.SetTensorB(b, tb);
    if (g->extra == 6)
        aQ.FreeTensor(aL);
    mm.IterateAll(c);
    mm.End();
    aQ.FreeTensor(aL);
    if constexpr (BL1)
        bQ.FreeTensor(bL);
}

template <bool BL1>
std::function<void()> PickTscm() {
    switch (g->a_dtype) {  // half/bfloat16 take ISTRANS = true and choose per call
        case RECSDK_DT_FLOAT16:
            return MmTscm<half, true, BL1>;
        case RECSDK_DT_BFLOAT16:
            return MmTscm<bfloat16_t, true, BL1>;
        default:
            return g->trans_b ? MmTscm<float, true, BL1> : MmTscm<float, false, BL1>;
    }
}

// ---- kernels that break a rule
// --------------------------------------------------------------------

// A 5th Matmul object (the API allows 4).
void BadFiveObjects() {
    using T = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<T, T, CT> m1, m2, m3, m4, m5;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), m1, &t, m2, &t, m3, &t, m4, &t, m5, &t);
}

// REGIST_MATMUL_OBJ after TPipe::InitBuffer on the AIV (separated mode needs it first).
void BadRegistAfterInitBuffer() {
    using T = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    if ASCEND_IS_AIV {
        pipe.InitBuffer(buf, 256);
    }
    Matmul<T, T, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
}

// A transposed B with ISTRANS = false.
void BadTransWithoutIstrans() {
    using T = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<T, T, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    GlobalTensor<half> b;
    b.SetGlobalBuffer((__gm__ half*)g->b, g->k * g->n);
    mm.SetTensorB(b, true);
}

// WaitIterateAll with nothing asynchronous pending.
void BadWaitWithoutAsync() {
    using T = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<T, T, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    mm.WaitIterateAll();
}

// Two objects one after the other without End() between them.
void BadMissingEnd() {
    using T = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<T, T, CT> m1, m2;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), m1, &t, m2, &t);
    GlobalTensor<half> a, b;
    GlobalTensor<float> c;
    a.SetGlobalBuffer((__gm__ half*)g->a, g->m * g->k);
    b.SetGlobalBuffer((__gm__ half*)g->b, g->k * g->n);
    c.SetGlobalBuffer((__gm__ float*)g->c, g->m * g->n);
    for (auto* mm : {&m1, &m2}) {
        mm->SetTail(std::min<int64_t>(g->m, 16), std::min<int64_t>(g->n, 16), g->k);
        mm->SetTensorA(a);
        mm->SetTensorB(b);
        mm->IterateAll(c);
    }
}

// CrossCoreSetFlag on a flag id the Matmul API (MIX mode, 1 object: ids 0-1) uses.
void BadFlagCollision() {
    using T = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<T, T, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    CrossCoreSetFlag<2, PIPE_MTE3>(1);
}

// The Matmul API in a vector-only launch.
void BadMatmulAivOnly() {
    using T = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TCubeTiling t;
    recsdk::sim::LoadTiling(&t, g_tiling);
    TPipe pipe;
    Matmul<T, T, CT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
}

// The kernel declares another type than it was launched with.
void BadKernelType() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
}

// An AIV waits in SyncAll while its sibling waits for a flag nobody sets: a deadlock across two
// kinds of wait.
void BadSyncAllAndFlag() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if ASCEND_IS_AIC {
        return;
    }
    if (GetSubBlockIdx() == 0) {
        SyncAll();
    } else {
        CrossCoreWaitFlag(9);
    }
}

// ---- dispatch
// --------------------------------------------------------------------------------------

template <typename A, typename C>
std::function<void()> Pick(bool cube, int64_t ta, int64_t tb) {
    // float inputs need ISTRANS equal to the transpose flag; half/bfloat16 take ISTRANS = true and
    // choose per call.
    if constexpr (std::is_same_v<A, float>) {
        if (ta && tb)
            return cube ? MmCube<A, C, true, true> : MmMix<A, C, true, true>;
        if (ta)
            return cube ? MmCube<A, C, true, false> : MmMix<A, C, true, false>;
        if (tb)
            return cube ? MmCube<A, C, false, true> : MmMix<A, C, false, true>;
        return cube ? MmCube<A, C, false, false> : MmMix<A, C, false, false>;
    } else {
        return cube ? MmCube<A, C, true, true> : MmMix<A, C, true, true>;
    }
}

template <typename A>
std::function<void()> PickC(bool cube) {
    switch (g->c_dtype) {
        case RECSDK_DT_FLOAT16:
            return Pick<A, half>(cube, g->trans_a, g->trans_b);
        case RECSDK_DT_BFLOAT16:
            return Pick<A, bfloat16_t>(cube, g->trans_a, g->trans_b);
        default:
            return Pick<A, float>(cube, g->trans_a, g->trans_b);
    }
}

std::function<void()> PickMatmul(bool cube) {
    switch (g->a_dtype) {
        case RECSDK_DT_FLOAT16:
            return PickC<half>(cube);
        case RECSDK_DT_BFLOAT16:
            return PickC<bfloat16_t>(cube);
        default:
            return PickC<float>(cube);
    }
}

struct KernelEntry {
    int32_t type;
    std::function<void()> body;
};

bool Lookup(const std::string& name, KernelEntry* e) {
    static const std::map<std::string, KernelEntry> fixed = {
        {"mix_postprocess", {KERNEL_TYPE_MIX_AIC_1_2, MixPostprocess}},
        {"mix_ids", {KERNEL_TYPE_MIX_AIC_1_2, MixIds}},
        {"mix_flag_modes", {KERNEL_TYPE_MIX_AIC_1_2, MixFlagModes}},
        {"mm_to_ub", {KERNEL_TYPE_MIX_AIC_1_2, MmToUb}},
        {"mm_async_peek", {KERNEL_TYPE_MIX_AIC_1_2, MmAsyncPeek}},
        {"bad_five_objects", {KERNEL_TYPE_MIX_AIC_1_2, BadFiveObjects}},
        {"bad_regist_after_initbuffer", {KERNEL_TYPE_MIX_AIC_1_2, BadRegistAfterInitBuffer}},
        {"bad_trans_without_istrans", {KERNEL_TYPE_MIX_AIC_1_2, BadTransWithoutIstrans}},
        {"bad_wait_without_async", {KERNEL_TYPE_MIX_AIC_1_2, BadWaitWithoutAsync}},
        {"bad_missing_end", {KERNEL_TYPE_MIX_AIC_1_2, BadMissingEnd}},
        {"bad_flag_collision", {KERNEL_TYPE_MIX_AIC_1_2, BadFlagCollision}},
        {"bad_matmul_aiv_only", {KERNEL_TYPE_AIV_ONLY, BadMatmulAivOnly}},
        {"bad_kernel_type", {KERNEL_TYPE_MIX_AIC_1_2, BadKernelType}},
        {"bad_syncall_and_flag", {KERNEL_TYPE_MIX_AIC_1_2, BadSyncAllAndFlag}},
    };
    if (name == "mm_mix") {
        *e = KernelEntry{KERNEL_TYPE_MIX_AIC_1_2, PickMatmul(false)};
        return true;
    }
    if (name == "mm_tscm" || name == "mm_tscm_a") {
        *e = KernelEntry{KERNEL_TYPE_MIX_AIC_1_2,
                         name == "mm_tscm" ? PickTscm<true>() : PickTscm<false>()};
        return true;
    }
    if (name == "mm_cube") {
        *e = KernelEntry{KERNEL_TYPE_AIC_ONLY, PickMatmul(true)};
        return true;
    }
    auto it = fixed.find(name);
    if (it == fixed.end())
        return false;
    *e = it->second;
    return true;
}

mxrec::DType ToDType(int64_t d) {
    return static_cast<mxrec::DType>(d);
}

}  // namespace

#define RECSDK_MM_EXPORT extern "C" __attribute__((visibility("default")))

// The host tiling for the case: tiling[] receives the TCubeTiling fields; returns 0, or 1 with the
// error in err.
RECSDK_MM_EXPORT int32_t recsdk_sim_mm_tiling(const MmCase* c, int32_t* tiling, char* err,
                                              int32_t err_len) {
    const recsdk::sim::SocInfo* soc = recsdk::sim::FindSoc(c->soc);
    mxrec::PlatformInfo p;
    p.vector_cores = soc->vector_cores;
    p.ub_bytes = soc->ub_bytes;
    p.cube_cores = soc->cube_cores;
    p.l1_bytes = soc->l1_bytes;
    p.l0a_bytes = soc->l0a_bytes;
    p.l0b_bytes = soc->l0b_bytes;
    p.l0c_bytes = soc->l0c_bytes;
    p.bt_bytes = soc->bt_bytes;
    mxrec::MatmulTilingArgs a;
    a.a = a.b = ToDType(c->a_dtype);
    a.c = ToDType(c->c_dtype);
    a.bias = mxrec::DType::kFloat32;
    a.transA = c->trans_a != 0;
    a.transB = c->trans_b != 0;
    a.hasBias = c->has_bias != 0;
    a.m = c->m;
    a.n = c->n;
    a.k = c->k;
    a.cores = static_cast<uint32_t>(c->tiles);
    const mxrec::MatmulTiling r = mxrec::MatmulApiTiling(a, p);
    if (!r.ok()) {
        std::snprintf(err, static_cast<size_t>(err_len), "%s", r.error.c_str());
        return 1;
    }
    std::memcpy(tiling, static_cast<const void*>(&r.tiling), sizeof(TCubeTiling));
    return 0;
}

RECSDK_MM_EXPORT int32_t recsdk_sim_mm_tiling_size() {
    return static_cast<int32_t>(sizeof(TCubeTiling));
}

RECSDK_MM_EXPORT int32_t recsdk_sim_mm_run(const MmCase* c, const int32_t* tiling,
                                           RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    g = c;
    KernelEntry entry;
    if (!Lookup(c->kernel, &entry)) {
        std::snprintf(report->message, sizeof(report->message), "no case %s", c->kernel);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    TCubeTiling t;
    std::memcpy(static_cast<void*>(&t), tiling, sizeof(t));
    g_tiling = reinterpret_cast<GM_ADDR>(&t);
    const int64_t ab = ElemBytes(c->a_dtype), cb = ElemBytes(c->c_dtype);
    recsdk::sim::KernelRun run;
    run.kernel = c->kernel;
    run.soc = recsdk::sim::FindSoc(c->soc);
    run.block_dim = static_cast<uint32_t>(c->blocks);
    run.kernel_type = entry.type;
    run.regions.push_back(
        GmRegion{reinterpret_cast<const uint8_t*>(&t), sizeof(t), false, "tiling"});
    auto add = [&](void* p, int64_t bytes, bool writable, const char* name) {
        if (p != nullptr && bytes > 0)
            run.regions.push_back(
                GmRegion{static_cast<const uint8_t*>(p), uint64_t(bytes), writable, name});
    };
    add(c->a, c->m * c->k * ab, false, "input a");
    add(c->b, c->k * c->n * ab, false, "input b");
    add(c->bias, c->n * 4, false, "input bias");
    add(c->c, c->m * c->n * cb, true, "output c");
    add(c->ws, c->ws_bytes, true, "workspace");
    add(c->out, c->out_len * 8, true, "output out");
    // The system workspace in front of the user part is not backed (as the op launcher does).
    run.sys_workspace_ptr = static_cast<uint8_t*>(c->ws);
    return recsdk::sim::RunKernel(run, entry.body, report);
}

// ---- a mixed operator through the op launcher
// -------------------------------------------------------

namespace {

struct MmOpTilingData {
    TCubeTiling cube;
};

// The tiling an operator's op_host would have (Matmul-Tiling类/SetDim.md, MIX mode): the Matmul
// tiling over the platform's AIVs (SetDim(GetCoreNumAiv())), one tile per AIV, blockDim the AI
// cores holding them (two AIVs each).
mxrec::TilingPlan<MmOpTilingData> MmOpTiling(const mxrec::OpArgs& args,
                                             const mxrec::PlatformInfo& p) {
    const mxrec::TensorDesc& a = args.inputs[0];
    const mxrec::TensorDesc& b = args.inputs[1];
    const mxrec::TensorDesc& c = args.outputs[0];
    if (a.Dim(1) != b.Dim(0) || c.Dim(0) != a.Dim(0) || c.Dim(1) != b.Dim(1)) {
        return mxrec::Reject("c must be [M, N] for a [M, K] and b [K, N]");
    }
    mxrec::MatmulTilingArgs m;
    m.a = m.b = a.dtype;
    m.c = c.dtype;
    m.m = a.Dim(0);
    m.n = b.Dim(1);
    m.k = a.Dim(1);
    const mxrec::MatmulTiling t = mxrec::MatmulApiTiling(m, p);
    if (!t.ok())
        return mxrec::Reject(t.error);
    mxrec::TilingPlan<MmOpTilingData> plan;
    plan.data.cube = t.tiling;
    plan.block_dim = static_cast<uint32_t>((t.tiling.usedCoreNum + 1) / 2);
    return plan;
}

// Each AIV drives its tile (GetBlockIdx() in [0, 2 * blockDim)); an odd usedCoreNum leaves the
// last AIV idle.
void mm_op(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(MmOpTilingData, td, tiling);
    using AT = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using CT = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TPipe pipe;
    Matmul<AT, AT, CT> mm;
    if (GetSysWorkSpacePtr() == nullptr)
        Trap();
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &td.cube);
    const TCubeTiling& t = td.cube;
    const int64_t tile = GetBlockIdx();
    if (tile >= t.usedCoreNum)
        return;
    const int64_t nTiles = (t.N + t.singleCoreN - 1) / t.singleCoreN;
    const int64_t m0 = tile / nTiles * t.singleCoreM, n0 = tile % nTiles * t.singleCoreN;
    GlobalTensor<half> ga, gb;
    GlobalTensor<float> gc;
    ga.SetGlobalBuffer((__gm__ half*)a, int64_t(t.M) * t.Ka);
    gb.SetGlobalBuffer((__gm__ half*)b, int64_t(t.Kb) * t.N);
    gc.SetGlobalBuffer((__gm__ float*)c, int64_t(t.M) * t.N);
    mm.SetTail(std::min<int64_t>(t.singleCoreM, t.M - m0),
               std::min<int64_t>(t.singleCoreN, t.N - n0));
    mm.SetTensorA(ga[m0 * t.Ka]);
    mm.SetTensorB(gb[n0]);
    mm.IterateAll(gc[m0 * t.N + n0]);
    mm.End();
}

const recsdk::sim::OpSpec kMmOp = {
    "mm_op",
    "MmOp",
    {{"a", false, false, 2, 2, {RECSDK_DT_FLOAT16}},
     {"b", false, false, 2, 2, {RECSDK_DT_FLOAT16}}},
    {{"c", false, false, 2, 2, {RECSDK_DT_FLOAT32}}},
    {},
    KERNEL_TYPE_MIX_AIC_1_2,
};

}  // namespace

RECSDK_MM_EXPORT int32_t recsdk_sim_mm_op(const RecsdkSimTensor* tensors, int32_t num_tensors,
                                          const RecsdkSimAttr* attrs, int32_t num_attrs,
                                          const RecsdkSimOptions* options,
                                          RecsdkSimReport* report) {
    recsdk::sim::Variants variants{
        [](const RecsdkSimTensor*) { return 0; },
        [](int, GM_ADDR* p, GM_ADDR ws, GM_ADDR tiling) { mm_op(p[0], p[1], p[2], ws, tiling); }};
    return recsdk::sim::LaunchOp<MmOpTilingData>(kMmOp, tensors, num_tensors, attrs, num_attrs,
                                                 options, report, &MmOpTiling, variants);
}
