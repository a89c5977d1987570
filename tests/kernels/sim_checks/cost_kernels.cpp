// Micro-kernels for the cost model's tests (tests/kernels/test_cost_model.py), in CANN's idiom:
// TPipe, TQue, AllocTensor / EnQue / DeQue / FreeTensor. Each reads the input and writes the output
// so that the model's times can be checked against figures the test works out from the vendor's
// constants.
//
// recsdk_sim_cost_case(name, in, out, elems, report) runs one case on one core (a vector core, or
// an AI core's Cube for the cube cases); in and out hold `elems` floats.
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "recsdk_sim/launch.h"

using namespace AscendC;

namespace {

float* g_in = nullptr;
float* g_out = nullptr;
uint32_t g_elems = 0;
constexpr uint32_t kTile = 2048;       // floats, 8 KB
constexpr uint32_t kTiles = 8;         // the pipelines' tile count
constexpr uint32_t kBig = 4096;        // floats moved by the DMA cases, 16 KB
constexpr uint32_t kSmall = 8;         // floats of each small DMA: one 32-byte block
constexpr uint32_t kAddsPerTile = 28;  // vector work per tile of the pipelines

GlobalTensor<float> Gm(float* p) {
    GlobalTensor<float> gt;
    gt.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(p), g_elems);
    return gt;
}

// One 16 KB DMA GM -> UB.
void dma_big() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    pipe.InitBuffer(inQ, 1, kBig * sizeof(float));
    LocalTensor<float> x = inQ.AllocTensor<float>();
    DataCopy(x, Gm(g_in), kBig);
    inQ.EnQue(x);
    x = inQ.DeQue<float>();
    inQ.FreeTensor(x);
}

// The same 16 KB in 32-byte DMAs.
void dma_small() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    pipe.InitBuffer(inQ, 1, kBig * sizeof(float));
    LocalTensor<float> x = inQ.AllocTensor<float>();
    for (uint32_t i = 0; i < kBig / kSmall; ++i)
        DataCopy(x[i * kSmall], Gm(g_in)[i * kSmall], kSmall);
    inQ.EnQue(x);
    x = inQ.DeQue<float>();
    inQ.FreeTensor(x);
}

// y = x + kAddsPerTile tile by tile: CopyIn (MTE2), Compute (V), CopyOut (MTE3), with `Buffers`
// buffers per queue (2: double buffering).
template <int32_t Buffers>
void pipeline() {
    TPipe pipe;
    TQue<TPosition::VECIN, Buffers> inQ;
    TQue<TPosition::VECOUT, Buffers> outQ;
    pipe.InitBuffer(inQ, Buffers, kTile * sizeof(float));
    pipe.InitBuffer(outQ, Buffers, kTile * sizeof(float));
    GlobalTensor<float> in = Gm(g_in), out = Gm(g_out);
    for (uint32_t t = 0; t < kTiles; ++t) {
        LocalTensor<float> x = inQ.template AllocTensor<float>();
        DataCopy(x, in[t * kTile], kTile);
        inQ.EnQue(x);

        x = inQ.template DeQue<float>();
        LocalTensor<float> y = outQ.template AllocTensor<float>();
        Adds(y, x, 1.0f, kTile);
        for (uint32_t k = 1; k < kAddsPerTile; ++k)
            Adds(y, y, 1.0f, kTile);
        outQ.EnQue(y);
        inQ.FreeTensor(x);

        y = outQ.template DeQue<float>();
        DataCopy(out[t * kTile], y, kTile);
        outQ.FreeTensor(y);
    }
}

// One AI core's Cube on [16, 256] x [256, 16] half tiles, `Rounds` times: A from GM straight to
// L0A (MTE2), B through L1 (MTE2, then MTE1 to L0B), Mmad accumulating into L0C, Fixpipe out.
// Reload: the operands are loaded again every round (MTE-bound); otherwise once (Cube-bound).
constexpr int32_t kCubeK = 256;
constexpr int32_t kRounds = 256;

template <bool Reload>
void cube() {
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(g_in), 16 * kCubeK);
    bGm.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(g_in) + 16 * kCubeK, 16 * kCubeK);
    cGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(g_out), 16 * 16);
    TPipe pipe;
    TQue<TPosition::B1, 1> qB1;
    TQue<TPosition::A2, 1> qA2;
    TQue<TPosition::B2, 1> qB2;
    TQue<TPosition::CO1, 1> qC;
    pipe.InitBuffer(qB1, 1, 16 * kCubeK * sizeof(half));
    pipe.InitBuffer(qA2, 1, 16 * kCubeK * sizeof(half));
    pipe.InitBuffer(qB2, 1, 16 * kCubeK * sizeof(half));
    pipe.InitBuffer(qC, 1, 16 * 16 * sizeof(float));
    LocalTensor<float> c1 = qC.AllocTensor<float>();
    LocalTensor<half> a2, b2;
    for (int32_t r = 0; r < kRounds; ++r) {
        if (Reload || r == 0) {
            LocalTensor<half> b1 = qB1.AllocTensor<half>();
            DataCopy(b1, bGm, static_cast<uint32_t>(16 * kCubeK));
            qB1.EnQue(b1);
            b1 = qB1.DeQue<half>();
            a2 = qA2.AllocTensor<half>();
            b2 = qB2.AllocTensor<half>();
            if (r > 0) {  // A2's queue event is MTE1 -> M; A comes on MTE2
                SetFlag<HardEvent::M_MTE2>(EVENT_ID0);
                WaitFlag<HardEvent::M_MTE2>(EVENT_ID0);
            }
            LoadData(a2, aGm, LoadData2DParams(0, kCubeK / 16, 1, 0, 0, false, 0));
            LoadData(b2, b1, LoadData2DParams(0, kCubeK / 16, 1, 0, 0, false, 0));
            qB1.FreeTensor(b1);
            SetFlag<HardEvent::MTE2_M>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_M>(EVENT_ID0);
            qA2.EnQue(a2);
            qB2.EnQue(b2);
            a2 = qA2.DeQue<half>();
            b2 = qB2.DeQue<half>();
        }
        if (r > 0)
            PipeBarrier<PIPE_M>();  // the previous Mmad's sum is this one's input
        MmadParams mp;
        mp.m = 16;
        mp.n = 16;
        mp.k = kCubeK;
        mp.cmatrixInitVal = r == 0;
        Mmad(c1, a2, b2, mp);
        if (Reload || r == kRounds - 1) {
            qA2.FreeTensor(a2);
            qB2.FreeTensor(b2);
        }
    }
    qC.EnQue(c1);
    c1 = qC.DeQue<float>();
    FixpipeParamsV220 fp;
    fp.nSize = 16;
    fp.mSize = 16;
    fp.srcStride = 16;
    fp.dstStride = 16;
    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, fp);
    qC.FreeTensor(c1);
}

// One vector instruction on kTile elements of T in the unified buffer, after two Duplicates that
// fill its operands (the vector pipe's time is theirs plus the instruction's). Level0: the
// mask-count form, one full repeat of lanes kTile * sizeof(T) / 256 times.
enum class VecOp { kAdd, kExp, kLn, kSqrt, kDiv, kReciprocal };

template <typename T, VecOp Op, bool Level0 = false>
void vector_rate() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * kTile * sizeof(T));
    LocalTensor<T> all = buf.Get<T>();
    LocalTensor<T> a = all, b = all[kTile], c = all[2 * kTile];
    Duplicate(a, static_cast<T>(1.5f), kTile);
    Duplicate(b, static_cast<T>(2.0f), kTile);
    const int32_t n = kTile;
    if constexpr (Level0) {
        constexpr uint64_t lanes = 256 / sizeof(T);
        const auto repeats = static_cast<uint8_t>(kTile / lanes);
        Exp(c, a, lanes, repeats, UnaryRepeatParams(1, 1, 8, 8));
    } else if constexpr (Op == VecOp::kAdd) {
        Add(c, a, b, n);
    } else if constexpr (Op == VecOp::kExp) {
        Exp(c, a, n);
    } else if constexpr (Op == VecOp::kLn) {
        Ln(c, a, n);
    } else if constexpr (Op == VecOp::kSqrt) {
        Sqrt(c, a, n);
    } else if constexpr (Op == VecOp::kDiv) {
        Div(c, a, b, n);
    } else {
        Reciprocal(c, a, n);
    }
}

const std::map<std::string, std::function<void()>>& Cases() {
    static const std::map<std::string, std::function<void()>> cases = {
        {"dma_big", dma_big},
        {"dma_small", dma_small},
        {"pipeline_single", pipeline<1>},
        {"pipeline_double", pipeline<2>},
        {"cube_bound", cube<false>},
        {"mte_bound", cube<true>},
        {"add_f32", vector_rate<float, VecOp::kAdd>},
        {"add_f16", vector_rate<half, VecOp::kAdd>},
        {"exp_f32", vector_rate<float, VecOp::kExp>},
        {"exp_f16", vector_rate<half, VecOp::kExp>},
        {"exp_f16_level0", vector_rate<half, VecOp::kExp, true>},
        {"ln_f32", vector_rate<float, VecOp::kLn>},
        {"sqrt_f32", vector_rate<float, VecOp::kSqrt>},
        {"div_f32", vector_rate<float, VecOp::kDiv>},
        {"div_f16", vector_rate<half, VecOp::kDiv>},
        {"reciprocal_f32", vector_rate<float, VecOp::kReciprocal>},
    };
    return cases;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t recsdk_sim_cost_case(
    const char* name, float* in, float* out, int32_t elems, RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    auto it = Cases().find(name);
    if (it == Cases().end() || elems < static_cast<int32_t>(kTile * kTiles)) {
        std::snprintf(report->message, sizeof(report->message), "no case %s", name);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    g_in = in;
    g_out = out;
    g_elems = static_cast<uint32_t>(elems);
    recsdk::sim::KernelRun run;
    run.kernel = name;
    run.soc = recsdk::sim::FindSoc("Ascend910B1");
    run.block_dim = 1;
    if (std::strncmp(name, "cube", 4) == 0 || std::strncmp(name, "mte", 3) == 0)
        run.kernel_type = KERNEL_TYPE_AIC_ONLY;
    const uint64_t bytes = uint64_t(elems) * sizeof(float);
    run.regions = {
        recsdk::sim::GmRegion{reinterpret_cast<const uint8_t*>(in), bytes, false, "input in"},
        recsdk::sim::GmRegion{reinterpret_cast<const uint8_t*>(out), bytes, true, "output out"}};
    return recsdk::sim::RunKernel(run, it->second, report);
}
