// CANN's matrix samples, written for this project from what the samples are documented to do
// (asc-devkit examples/ and docs/api: Matmul使用说明.md, GetTensorC.md, Matmul-Tiling类/SetDim.md,
// CrossCoreSetFlag_ISASI.md), in their idiom, run on the emulation and checked against float64 by
// tests/kernels/samples/test_cann_samples.py:
// - matmul_custom: the Matmul high-level API in MIX mode, `using namespace matmul;`, one tile of C
//   per vector core (the host tiling SetDim(GetCoreNumAiv()), blockDim the AI cores holding
//   usedCoreNum AIVs), C = A * B + bias by IterateAll;
// - matmul_leakyrelu_custom: the same with C through the unified buffer, block by block
//   (GetTensorC<true>(ub, false, true)), LeakyReLU on the vector unit, in the kernel-launch form
//   (`__global__ __mix__(1, 2)`, `__kfc_workspace__`, the TCubeTiling by value);
// - cube_vector_custom: a mixed kernel - each AIC computes its rows of A * B into the workspace
//   with the Matmul object on the Cube (ASCENDC_CUBE_ONLY), sets a cross-core flag, and its two
//   AIVs wait for it and post-process (relu(x) * scale) their halves (or, extra 6, the first AIV
//   waits and a SyncAll<true> orders the write for the second);
// - mmad_custom: the low-level Cube API (cube_basic.h), if present: LoadData L1 -> L0A/L0B, Mmad,
//   Fixpipe L0C -> GM.
//
// recsdk_sim_sample_run(case, report) runs the host tiling and the launch the sample's main()
// would, on tensors the test passes.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "matmul_tiling.h"
#include "recsdk_sim/launch.h"

using namespace matmul;

extern "C" {
// What Python passes (test_cann_samples.py mirrors it): A [M, K] and B [K, N] half, bias [N] and
// C [M, N] float.
struct SampleCase {
    const char* kernel;
    const char* soc;
    int64_t m;
    int64_t n;
    int64_t k;
    int64_t dim;  // SetDim: 0 = GetCoreNumAiv()
    float scale;  // cube_vector_custom's post-processing scale
    void* a;
    void* b;
    void* bias;
    void* c;
    void* ws;
    int64_t ws_bytes;
    int64_t extra;  // mmad_custom: 1 no ordering of LoadData before Mmad, 2 SetFlag/WaitFlag,
                    // 3 A given as Zz fractals in GM and loaded GM -> L0A
};
}

namespace {

// The offsets of a vector core's tile (the samples' CalcGMOffset): tiles are numbered along M
// first, singleCoreM x singleCoreN each, and the last tile of each axis is a tail.
struct TileOffsets {
    int64_t a = 0, b = 0, c = 0, bias = 0;
    int32_t tailM = 0, tailN = 0;
};

TileOffsets CalcGMOffset(int64_t blockIdx, const TCubeTiling& tiling) {
    const int64_t mBlocks = (tiling.M + tiling.singleCoreM - 1) / tiling.singleCoreM;
    const int64_t mIdx = blockIdx % mBlocks;
    const int64_t nIdx = blockIdx / mBlocks;
    TileOffsets o;
    o.a = mIdx * tiling.Ka * tiling.singleCoreM;
    o.b = nIdx * tiling.singleCoreN;
    o.c = mIdx * tiling.N * tiling.singleCoreM + nIdx * tiling.singleCoreN;
    o.bias = nIdx * tiling.singleCoreN;
    o.tailM = static_cast<int32_t>(
        std::min<int64_t>(tiling.singleCoreM, tiling.M - mIdx * tiling.singleCoreM));
    o.tailN = static_cast<int32_t>(
        std::min<int64_t>(tiling.singleCoreN, tiling.N - nIdx * tiling.singleCoreN));
    return o;
}

using AType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
using BType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
using CType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
using BiasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;

}  // namespace

// ---- the kernels --------------------------------------------------------------------------------

extern "C" __global__ __aicore__ void matmul_custom(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                    GM_ADDR workspace, GM_ADDR tilingGm) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(TCubeTiling, tiling, tilingGm);
    TPipe pipe;
    Matmul<AType, BType, CType, BiasType> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
    if (GetBlockIdx() >= tiling.usedCoreNum)
        return;
    GlobalTensor<half> aGlobal, bGlobal;
    GlobalTensor<float> cGlobal, biasGlobal;
    aGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    cGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    biasGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    const TileOffsets o = CalcGMOffset(GetBlockIdx(), tiling);
    mm.SetTail(o.tailM, o.tailN);
    mm.SetTensorA(aGlobal[o.a]);
    mm.SetTensorB(bGlobal[o.b]);
    mm.SetBias(biasGlobal[o.bias]);
    mm.IterateAll(cGlobal[o.c]);
    mm.End();
}

// The official sample with the asynchronous IterateAll<false> and waitIterateAll = false, after
// which the caller must wait by its own means (IterateAll.md). It reads C at once (a race the
// emulation reports), or with waitBySync it first waits by a synchronous IterateAll of the same
// object into the same tile (the client's messages are served in order).
extern "C" __global__ __aicore__ void matmul_async_custom(GM_ADDR a, GM_ADDR b, GM_ADDR bias,
                                                          GM_ADDR c, GM_ADDR workspace,
                                                          GM_ADDR tilingGm, int32_t waitBySync) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(TCubeTiling, tiling, tilingGm);
    TPipe pipe;
    Matmul<AType, BType, CType, BiasType> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
    if (GetBlockIdx() >= tiling.usedCoreNum)
        return;
    GlobalTensor<half> aGlobal, bGlobal;
    GlobalTensor<float> cGlobal, biasGlobal;
    aGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    cGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    biasGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    const TileOffsets o = CalcGMOffset(GetBlockIdx(), tiling);
    mm.SetTail(o.tailM, o.tailN);
    mm.SetTensorA(aGlobal[o.a]);
    mm.SetTensorB(bGlobal[o.b]);
    mm.SetBias(biasGlobal[o.bias]);
    mm.template IterateAll<false>(cGlobal[o.c], 0, false, false);
    if (waitBySync != 0)
        mm.IterateAll(cGlobal[o.c]);
    const float first = cGlobal.GetValue(o.c);
    cGlobal.SetValue(o.c, first);
    mm.End();
}

// C through VECIN: each baseM x baseN block packed by GetTensorC (enSequentialWrite = true),
// LeakyRelu on the vector unit, copied to its place in C row by row.
// In the kernel-launch form of the official sample: `__mix__(1, 2)`, the workspace marked
// `__kfc_workspace__`, the tiling passed by value.
__global__ __mix__(1, 2) void matmul_leakyrelu_custom(__gm__ uint8_t* a, __gm__ uint8_t* b,
                                                      __gm__ uint8_t* bias, __gm__ uint8_t* c,
                                                      __kfc_workspace__ __gm__ uint8_t* workspace,
                                                      AscendC::tiling::TCubeTiling tiling) {
    constexpr float alpha = 0.001f;
    TPipe pipe;
    Matmul<AType, BType, MatmulType<TPosition::VECIN, CubeFormat::ND, float>, BiasType> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
    if (GetBlockIdx() >= tiling.usedCoreNum)
        return;
    GlobalTensor<half> aGlobal, bGlobal;
    GlobalTensor<float> cGlobal, biasGlobal;
    aGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    cGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    biasGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    const TileOffsets o = CalcGMOffset(GetBlockIdx(), tiling);
    mm.SetTail(o.tailM, o.tailN);
    mm.SetTensorA(aGlobal[o.a]);
    mm.SetTensorB(bGlobal[o.b]);
    mm.SetBias(biasGlobal[o.bias]);
    const int32_t blockElems = tiling.baseM * tiling.baseN;
    TQue<TPosition::VECIN, 1> mmOutQueue;
    TQue<TPosition::VECOUT, 1> reluOutQueue;
    pipe.InitBuffer(mmOutQueue, 1, blockElems * sizeof(float));
    pipe.InitBuffer(reluOutQueue, 1, blockElems * sizeof(float));
    const int32_t bm = std::min<int32_t>(tiling.baseM, (o.tailM + 15) / 16 * 16);
    const int32_t bn = std::min<int32_t>(tiling.baseN, (o.tailN + 15) / 16 * 16);
    const int32_t mIters = (o.tailM + bm - 1) / bm;
    for (int32_t round = 0; mm.template Iterate<true>(); ++round) {
        // iterateOrder 0: blocks run along M first.
        const int32_t r0 = (round % mIters) * bm, c0 = (round / mIters) * bn;
        const int32_t rows = std::min(bm, o.tailM - r0), cols = std::min(bn, o.tailN - c0);
        LocalTensor<float> mmOut = mmOutQueue.AllocTensor<float>();
        mm.template GetTensorC<true>(mmOut, false, true);
        mmOutQueue.EnQue(mmOut);
        mmOut = mmOutQueue.DeQue<float>();
        LocalTensor<float> reluOut = reluOutQueue.AllocTensor<float>();
        LeakyRelu(reluOut, mmOut, alpha, blockElems);
        mmOutQueue.FreeTensor(mmOut);
        reluOutQueue.EnQue(reluOut);
        reluOut = reluOutQueue.DeQue<float>();
        DataCopyExtParams row{1, static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
        for (int32_t r = 0; r < rows; ++r)
            DataCopyPad(cGlobal[o.c + int64_t(r0 + r) * tiling.N + c0], reluOut[r * cols], row);
        reluOutQueue.FreeTensor(reluOut);
    }
    mm.End();
}

// The Cube part runs the Matmul object on the AIC itself (Matmul使用说明.md: ASCENDC_CUBE_ONLY,
// the Cube code separated by `if ASCEND_IS_AIC`).
#define ASCENDC_CUBE_ONLY
extern "C" __global__ __aicore__ void cube_vector_custom(GM_ADDR a, GM_ADDR b, GM_ADDR c,
                                                         GM_ADDR workspace, GM_ADDR tilingGm,
                                                         float scale, int32_t viaSyncAll) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    constexpr uint16_t kCubeDone = 8;  // clear of the ids the Matmul API and SyncAll use
    GET_TILING_DATA_WITH_STRUCT(TCubeTiling, tiling, tilingGm);
    const int64_t M = tiling.M, N = tiling.N;
    const int64_t rowsPerCore = (M + GetBlockNum() - 1) / GetBlockNum();
    const int64_t block = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / GetTaskRation();
    const int64_t r0 = block * rowsPerCore;
    const int64_t rows = std::max<int64_t>(0, std::min(rowsPerCore, M - r0));
    GlobalTensor<float> ws;
    ws.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(GetUserWorkspace(workspace)), M * N);
    if ASCEND_IS_AIC {
        TPipe pipe;
        Matmul<AType, BType, CType> mm;
        REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
        GlobalTensor<half> aGlobal, bGlobal;
        aGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), M * tiling.Ka);
        bGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * N);
        if (rows > 0) {
            mm.SetTail(static_cast<int32_t>(rows), static_cast<int32_t>(N));
            mm.SetTensorA(aGlobal[r0 * tiling.Ka]);
            mm.SetTensorB(bGlobal);
            mm.IterateAll(ws[r0 * N]);
            mm.End();
        }
        // Mode 2: each AIV of this AI core may pass one wait, once FIX has written the result.
        CrossCoreSetFlag<2, PIPE_FIX>(kCubeDone);
        return;
    }
    if (viaSyncAll == 0) {
        CrossCoreWaitFlag(kCubeDone);
    } else {  // only the first AIV of each AI core waits; SyncAll<true> passes what it knows on
        if (GetSubBlockIdx() == 0)
            CrossCoreWaitFlag(kCubeDone);
        SyncAll<true>();
    }
    const int64_t half0 = (rows + 1) / 2;
    const int64_t mine0 = r0 + (GetSubBlockIdx() == 0 ? 0 : half0);
    const int64_t mine = GetSubBlockIdx() == 0 ? half0 : rows - half0;
    GlobalTensor<float> cGlobal;
    cGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), M * N);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQueue;
    TQue<TPosition::VECOUT, 1> outQueue;
    const uint32_t rowBytes = static_cast<uint32_t>(N * sizeof(float));
    pipe.InitBuffer(inQueue, 2, rowBytes);
    pipe.InitBuffer(outQueue, 2, rowBytes);
    DataCopyExtParams row{1, rowBytes, 0, 0, 0};
    DataCopyPadExtParams<float> noPad{false, 0, 0, 0.0f};
    for (int64_t r = mine0; r < mine0 + mine; ++r) {
        LocalTensor<float> x = inQueue.AllocTensor<float>();
        DataCopyPad(x, ws[r * N], row, noPad);
        inQueue.EnQue(x);
        x = inQueue.DeQue<float>();
        LocalTensor<float> y = outQueue.AllocTensor<float>();
        Maxs(y, x, 0.0f, static_cast<int32_t>(N));
        Muls(y, y, scale, static_cast<int32_t>(N));
        inQueue.FreeTensor(x);
        outQueue.EnQue(y);
        y = outQueue.DeQue<float>();
        DataCopyPad(cGlobal[r * N], y, row);
        outQueue.FreeTensor(y);
    }
}
#undef ASCENDC_CUBE_ONLY

// The low-level Cube API: each AIC computes a band of up to 64 rows of C = A * B (half in, float
// out). A and B go GM -> L1 as NZ (DataCopy with Nd2NzParams), L1 -> L0A as Zz and L1 -> L0B as Zn
// (LoadData, B's 16 x 16 fractals transposed), K in slices of up to 128 accumulated in L0C
// (Mmad, cmatrixInitVal = false after the first), then L0C -> GM as ND (Fixpipe, CFG_ROW_MAJOR).
// The queues order the pipes: A1/B1 MTE2 -> MTE1, A2/B2 MTE1 -> M, CO1 M -> FIX.
struct MmadTiling {
    int32_t M, N, K;
    int32_t bandM;   // rows per AIC (a multiple of 16)
    int32_t sliceK;  // K per Mmad (a multiple of 16)
    int32_t extra;   // 1: L0A/L0B not ordered before Mmad; 2: ordered by HardEvent::MTE1_M;
                     // 3: A is Zz in GM
};

extern "C" __global__ __aicore__ void mmad_custom(GM_ADDR a, GM_ADDR b, GM_ADDR c,
                                                  GM_ADDR tilingGm) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GET_TILING_DATA_WITH_STRUCT(MmadTiling, t, tilingGm);
    const int32_t r0 = static_cast<int32_t>(GetBlockIdx()) * t.bandM;
    if (r0 >= t.M)
        return;
    const int32_t m = std::min(t.bandM, t.M - r0);
    const int32_t mB = (m + 15) / 16, kB = (t.K + 15) / 16, nB = t.N / 16;
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), t.M * t.K);
    bGm.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), t.K * t.N);
    cGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), t.M * t.N);
    TPipe pipe;
    TQue<TPosition::A1, 1> inQueueA1;
    TQue<TPosition::B1, 1> inQueueB1;
    TQue<TPosition::A2, 1> inQueueA2;
    TQue<TPosition::B2, 1> inQueueB2;
    TQue<TPosition::CO1, 1> outQueueCO1;
    const int32_t sliceB = t.sliceK / 16;
    pipe.InitBuffer(inQueueA1, 1, mB * 16 * kB * 16 * sizeof(half));
    pipe.InitBuffer(inQueueB1, 1, kB * 16 * t.N * sizeof(half));
    pipe.InitBuffer(inQueueA2, 1, mB * 16 * sliceB * 16 * sizeof(half));
    pipe.InitBuffer(inQueueB2, 1, sliceB * 16 * t.N * sizeof(half));
    pipe.InitBuffer(outQueueCO1, 1, mB * 16 * t.N * sizeof(float));

    // CopyIn: ND -> NZ (column groups of 16, each mB * 16 / kB * 16 rows apart).
    LocalTensor<half> a1 = inQueueA1.AllocTensor<half>();
    LocalTensor<half> b1 = inQueueB1.AllocTensor<half>();
    DataCopy(a1, aGm[r0 * t.K],
             Nd2NzParams(1, static_cast<uint16_t>(m), static_cast<uint16_t>(t.K), 0,
                         static_cast<uint16_t>(t.K), static_cast<uint16_t>(mB * 16), 1, 0));
    DataCopy(b1, bGm,
             Nd2NzParams(1, static_cast<uint16_t>(t.K), static_cast<uint16_t>(t.N), 0,
                         static_cast<uint16_t>(t.N), static_cast<uint16_t>(kB * 16), 1, 0));
    inQueueA1.EnQue(a1);
    inQueueB1.EnQue(b1);
    a1 = inQueueA1.DeQue<half>();
    b1 = inQueueB1.DeQue<half>();

    LocalTensor<float> c1 = outQueueCO1.AllocTensor<float>();
    for (int32_t k0 = 0; k0 < kB; k0 += sliceB) {
        const int32_t kb = std::min(sliceB, kB - k0);
        // Split: A's fractal (i, k0 + q) of the NZ source to Zz fractal (i, q); B's (k0 + q, j) to
        // Zn fractal (q, j), transposed.
        LocalTensor<half> a2 = inQueueA2.AllocTensor<half>();
        LocalTensor<half> b2 = inQueueB2.AllocTensor<half>();
        for (int32_t i = 0; i < mB; ++i) {
            if (t.extra == 3) {  // A already Zz in GM (M, K multiples of 16): GM -> L0A
                LoadData(a2[i * kb * 256], aGm,
                         LoadData2DParams(static_cast<uint16_t>((r0 / 16 + i) * kB + k0),
                                          static_cast<uint8_t>(kb), 1, 0, 0, false, 0));
                continue;
            }
            LoadData(a2[i * kb * 256], a1,
                     LoadData2DParams(static_cast<uint16_t>(k0 * mB + i), static_cast<uint8_t>(kb),
                                      static_cast<uint16_t>(mB), 0, 0, false, 0));
        }
        for (int32_t q = 0; q < kb; ++q) {
            LoadData(b2[q * nB * 256], b1,
                     LoadData2DParams(static_cast<uint16_t>(k0 + q), static_cast<uint8_t>(nB),
                                      static_cast<uint16_t>(kB), 0, 0, true, 0));
        }
        if (t.extra == 3) {  // the A2 queue's event is MTE1 -> M; A came on MTE2
            SetFlag<HardEvent::MTE2_M>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_M>(EVENT_ID0);
        }
        if (t.extra == 2) {  // the queue's event by hand
            SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
            WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        } else if (t.extra != 1) {
            inQueueA2.EnQue(a2);
            inQueueB2.EnQue(b2);
            a2 = inQueueA2.DeQue<half>();
            b2 = inQueueB2.DeQue<half>();
        }
        // Compute: the slice's K (the last one up to K) into L0C, accumulating after the first.
        MmadParams mp;
        mp.m = static_cast<uint16_t>(m);
        mp.n = static_cast<uint16_t>(t.N);
        mp.k = static_cast<uint16_t>(std::min(kb * 16, t.K - k0 * 16));
        mp.cmatrixInitVal = k0 == 0;
        Mmad(c1, a2, b2, mp);
        inQueueA2.FreeTensor(a2);
        inQueueB2.FreeTensor(b2);
    }
    inQueueA1.FreeTensor(a1);
    inQueueB1.FreeTensor(b1);
    outQueueCO1.EnQue(c1);
    c1 = outQueueCO1.DeQue<float>();
    // CopyOut: Nz -> ND rows of N.
    FixpipeParamsV220 fp;
    fp.nSize = static_cast<uint16_t>(t.N);
    fp.mSize = static_cast<uint16_t>(m);
    fp.srcStride = static_cast<uint16_t>(mB * 16);
    fp.dstStride = static_cast<uint32_t>(t.N);
    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm[r0 * t.N], c1, fp);
    outQueueCO1.FreeTensor(c1);
}

// LoadDataWithTranspose of float squares into L0A, observed through the Cube: C = A * I with A
// the L0A contents read as Zz (m x k) and I a k x k identity given as Zn fractals in GM (loaded GM
// -> L0B). The squares come from GM through A1 unchanged.
struct LdtTiling {
    int32_t m, k;      // A as Zz: m x k
    int32_t srcElems;  // floats copied GM -> A1
    int32_t startIndex, repeatTimes, srcStride, dstGap, dstFracGap;
};

extern "C" __global__ __aicore__ void ldt_custom(GM_ADDR src, GM_ADDR eye, GM_ADDR c,
                                                 GM_ADDR tilingGm) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GET_TILING_DATA_WITH_STRUCT(LdtTiling, t, tilingGm);
    GlobalTensor<float> srcGm, eyeGm, cGm;
    srcGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(src), t.srcElems);
    eyeGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(eye), t.k * t.k);
    cGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), t.m * t.k);
    TPipe pipe;
    TQue<TPosition::A1, 1> qA1;
    TQue<TPosition::A2, 1> qA2;
    TQue<TPosition::B2, 1> qB2;
    TQue<TPosition::CO1, 1> qC;
    pipe.InitBuffer(qA1, 1, t.srcElems * sizeof(float));
    pipe.InitBuffer(qA2, 1, t.m * t.k * sizeof(float));
    pipe.InitBuffer(qB2, 1, t.k * t.k * sizeof(float));
    pipe.InitBuffer(qC, 1, t.m * t.k * sizeof(float));
    LocalTensor<float> a1 = qA1.AllocTensor<float>();
    DataCopy(a1, srcGm, static_cast<uint32_t>(t.srcElems));
    qA1.EnQue(a1);
    a1 = qA1.DeQue<float>();
    LocalTensor<float> a2 = qA2.AllocTensor<float>();
    LoadDataWithTranspose(a2, a1,
                          LoadData2dTransposeParams(static_cast<uint16_t>(t.startIndex),
                                                    static_cast<uint8_t>(t.repeatTimes),
                                                    static_cast<uint16_t>(t.srcStride),
                                                    static_cast<uint16_t>(t.dstGap),
                                                    static_cast<uint16_t>(t.dstFracGap)));
    LocalTensor<float> b2 = qB2.AllocTensor<float>();
    LoadData(b2, eyeGm,
             LoadData2DParams(0, static_cast<uint8_t>(t.k * t.k * sizeof(float) / 512), 1, 0, 0,
                              false, 0));
    SetFlag<HardEvent::MTE2_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_M>(EVENT_ID0);
    qA2.EnQue(a2);
    a2 = qA2.DeQue<float>();
    LocalTensor<float> c1 = qC.AllocTensor<float>();
    MmadParams mp;
    mp.m = static_cast<uint16_t>(t.m);
    mp.n = static_cast<uint16_t>(t.k);
    mp.k = static_cast<uint16_t>(t.k);
    Mmad(c1, a2, b2, mp);
    qA2.FreeTensor(a2);
    qB2.FreeTensor(b2);
    qA1.FreeTensor(a1);
    qC.EnQue(c1);
    c1 = qC.DeQue<float>();
    FixpipeParamsV220 fp;
    fp.nSize = static_cast<uint16_t>(t.k);
    fp.mSize = static_cast<uint16_t>(t.m);
    fp.srcStride = static_cast<uint16_t>((t.m + 15) / 16 * 16);
    fp.dstStride = static_cast<uint32_t>(t.k);
    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, fp);
    qC.FreeTensor(c1);
}

// ---- the host side ------------------------------------------------------------------------------

namespace {

const SampleCase* g = nullptr;

mxrec::PlatformInfo Platform(const recsdk::sim::SocInfo* soc) {
    mxrec::PlatformInfo p;
    p.vector_cores = soc->vector_cores;
    p.ub_bytes = soc->ub_bytes;
    p.cube_cores = soc->cube_cores;
    p.l1_bytes = soc->l1_bytes;
    p.l0a_bytes = soc->l0a_bytes;
    p.l0b_bytes = soc->l0b_bytes;
    p.l0c_bytes = soc->l0c_bytes;
    p.bt_bytes = soc->bt_bytes;
    return p;
}

}  // namespace

namespace {

// mmad_custom's launch: bands of 64 rows, one per AIC, K in slices of 128.
int32_t RunMmad(const SampleCase* sc, const recsdk::sim::SocInfo* soc, RecsdkSimReport* report) {
    MmadTiling t{static_cast<int32_t>(sc->m),
                 static_cast<int32_t>(sc->n),
                 static_cast<int32_t>(sc->k),
                 64,
                 128,
                 static_cast<int32_t>(sc->extra)};
    recsdk::sim::KernelRun run;
    run.kernel = sc->kernel;
    run.soc = soc;
    run.kernel_type = KERNEL_TYPE_AIC_ONLY;
    run.block_dim = static_cast<uint32_t>((t.M + t.bandM - 1) / t.bandM);
    auto add = [&run](void* p, int64_t bytes, bool writable, const char* name) {
        run.regions.push_back(
            recsdk::sim::GmRegion{static_cast<const uint8_t*>(p), uint64_t(bytes), writable, name});
    };
    add(&t, sizeof(t), false, "tiling");
    add(sc->a, sc->m * sc->k * 2, false, "x1_gm");
    add(sc->b, sc->k * sc->n * 2, false, "x2_gm");
    add(sc->c, sc->m * sc->n * 4, true, "output");
    auto* a = static_cast<uint8_t*>(sc->a);
    auto* b = static_cast<uint8_t*>(sc->b);
    auto* c = static_cast<uint8_t*>(sc->c);
    auto* tp = reinterpret_cast<uint8_t*>(&t);
    report->block_dim = static_cast<int32_t>(run.block_dim);
    return recsdk::sim::RunKernel(run, [=] { mmad_custom(a, b, c, tp); }, report);
}

// ldt_custom's launch: a = the squares, b = the Zn identity, c = [m, k]; m, k, and in n / dim /
// extra the repeats and strides: n = startIndex, dim = repeatTimes | srcStride << 8 | dstGap << 16
// | dstFracGap << 24, k the Zz width (m is 16).
int32_t RunLdt(const SampleCase* sc, const recsdk::sim::SocInfo* soc, RecsdkSimReport* report) {
    const auto d = static_cast<uint32_t>(sc->dim);
    LdtTiling t{static_cast<int32_t>(sc->m),
                static_cast<int32_t>(sc->k),
                static_cast<int32_t>(sc->extra),
                static_cast<int32_t>(sc->n),
                static_cast<int32_t>(d & 0xFF),
                static_cast<int32_t>((d >> 8) & 0xFF),
                static_cast<int32_t>((d >> 16) & 0xFF),
                static_cast<int32_t>((d >> 24) & 0xFF)};
    recsdk::sim::KernelRun run;
    run.kernel = sc->kernel;
    run.soc = soc;
    run.kernel_type = KERNEL_TYPE_AIC_ONLY;
    run.block_dim = 1;
    auto add = [&run](void* p, int64_t bytes, bool writable, const char* name) {
        run.regions.push_back(
            recsdk::sim::GmRegion{static_cast<const uint8_t*>(p), uint64_t(bytes), writable, name});
    };
    add(&t, sizeof(t), false, "tiling");
    add(sc->a, int64_t(t.srcElems) * 4, false, "squares");
    add(sc->b, int64_t(t.k) * t.k * 4, false, "identity");
    add(sc->c, int64_t(t.m) * t.k * 4, true, "output");
    auto* a = static_cast<uint8_t*>(sc->a);
    auto* b = static_cast<uint8_t*>(sc->b);
    auto* c = static_cast<uint8_t*>(sc->c);
    auto* tp = reinterpret_cast<uint8_t*>(&t);
    report->block_dim = 1;
    return recsdk::sim::RunKernel(run, [=] { ldt_custom(a, b, c, tp); }, report);
}

}  // namespace

#define RECSDK_SAMPLE_EXPORT extern "C" __attribute__((visibility("default")))

// The sample's main(): the tiling (MultiCoreMatmulTiling with SetDim(GetCoreNumAiv()) for the
// AIV-driven samples, the AI cores for the Cube-driven one), then the launch. blockDim: the AI
// cores of the usedCoreNum AIVs (SetDim.md: "SetSimdNumBlocks设置为实际使用的AI Core的数量").
RECSDK_SAMPLE_EXPORT int32_t recsdk_sim_sample_run(const SampleCase* sc, RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    g = sc;
    const recsdk::sim::SocInfo* soc = recsdk::sim::FindSoc(sc->soc);
    const std::string kernel = sc->kernel;
    if (kernel == "mmad_custom")
        return RunMmad(sc, soc, report);
    if (kernel == "ldt_custom")
        return RunLdt(sc, soc, report);
    const bool cubeDriven = kernel == "cube_vector_custom";
    mxrec::MatmulTilingArgs args;
    args.a = args.b = mxrec::DType::kFloat16;
    args.c = mxrec::DType::kFloat32;
    args.bias = mxrec::DType::kFloat32;
    args.hasBias = !cubeDriven;
    args.m = sc->m;
    args.n = sc->n;
    args.k = sc->k;
    args.mix = !cubeDriven;
    args.cores = static_cast<uint32_t>(sc->dim);  // 0: GetCoreNumAiv() (mix) / GetCoreNumAic()
    if (cubeDriven) {  // the AIC splits M itself: the tiling is of one AI core's rows
        const int64_t cores = std::min<int64_t>(soc->cube_cores, (sc->m + 15) / 16);
        args.singleM = (sc->m + cores - 1) / cores;
        args.singleN = sc->n;
        args.cores = 1;
        args.m = args.singleM;
    }
    if (kernel == "matmul_leakyrelu_custom") {
        args.baseM = 64;  // several blocks per tile, and room for the vector buffers
        args.baseN = 64;
    }
    const mxrec::MatmulTiling t = mxrec::MatmulApiTiling(args, Platform(soc));
    if (!t.ok()) {
        std::snprintf(report->message, sizeof(report->message), "%s", t.error.c_str());
        return report->status = RECSDK_SIM_INVALID_ARGUMENT;
    }
    TCubeTiling tiling = t.tiling;
    recsdk::sim::KernelRun run;
    run.kernel = sc->kernel;
    run.soc = soc;
    run.kernel_type = KERNEL_TYPE_MIX_AIC_1_2;
    if (cubeDriven) {
        tiling.M = static_cast<int32_t>(sc->m);  // the whole A; each AIC sets its tail
        run.block_dim = static_cast<uint32_t>((sc->m + args.singleM - 1) / args.singleM);
    } else {
        run.block_dim = static_cast<uint32_t>((tiling.usedCoreNum + 1) / 2);
    }
    auto add = [&run](void* p, int64_t bytes, bool writable, const char* name, bool ws = false) {
        if (p != nullptr && bytes > 0)
            run.regions.push_back(recsdk::sim::GmRegion{static_cast<const uint8_t*>(p),
                                                        uint64_t(bytes), writable, name, ws});
    };
    add(&tiling, sizeof(tiling), false, "tiling");
    add(sc->a, sc->m * sc->k * 2, false, "x1_gm");
    add(sc->b, sc->k * sc->n * 2, false, "x2_gm");
    add(sc->bias, sc->n * 4, false, "bias");
    add(sc->c, sc->m * sc->n * 4, true, "output");
    add(sc->ws, sc->ws_bytes, true, "workspace", true);
    // The system workspace in front of the user part is not backed (as the op launcher does).
    run.sys_workspace_ptr = static_cast<uint8_t*>(sc->ws);
    auto* a = static_cast<uint8_t*>(sc->a);
    auto* b = static_cast<uint8_t*>(sc->b);
    auto* bias = static_cast<uint8_t*>(sc->bias);
    auto* c = static_cast<uint8_t*>(sc->c);
    auto* ws = static_cast<uint8_t*>(sc->ws);
    auto* tp = reinterpret_cast<uint8_t*>(&tiling);
    const float scale = sc->scale;
    std::function<void()> body;
    if (kernel == "matmul_custom") {
        body = [=] { matmul_custom(a, b, bias, c, ws, tp); };
    } else if (kernel == "matmul_async_custom") {
        const int32_t waitBySync = sc->extra == 5 ? 1 : 0;
        body = [=] { matmul_async_custom(a, b, bias, c, ws, tp, waitBySync); };
    } else if (kernel == "matmul_leakyrelu_custom") {
        body = [=] { matmul_leakyrelu_custom(a, b, bias, c, ws, tiling); };
    } else if (cubeDriven) {
        const int32_t viaSyncAll = sc->extra == 6 ? 1 : 0;
        body = [=] { cube_vector_custom(a, b, c, ws, tp, scale, viaSyncAll); };
    } else {
        std::snprintf(report->message, sizeof(report->message), "no sample %s", sc->kernel);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    report->block_dim = static_cast<int32_t>(run.block_dim);
    return recsdk::sim::RunKernel(run, body, report);
}
