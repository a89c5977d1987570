// Micro-kernels for the cost model's tests (tests/kernels/test_cost_model.py), in CANN's idiom:
// TPipe, TQue, AllocTensor / EnQue / DeQue / FreeTensor. Each reads the input and writes the output
// so that the model's times can be checked against figures the test works out from the vendor's
// constants.
//
// recsdk_sim_cost_case(name, in, out, elems, report) runs one case on one vector core; in and out
// hold `elems` floats.
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

const std::map<std::string, std::function<void()>>& Cases() {
    static const std::map<std::string, std::function<void()>> cases = {
        {"dma_big", dma_big},
        {"dma_small", dma_small},
        {"pipeline_single", pipeline<1>},
        {"pipeline_double", pipeline<2>},
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
    const uint64_t bytes = uint64_t(elems) * sizeof(float);
    run.regions = {
        recsdk::sim::GmRegion{reinterpret_cast<const uint8_t*>(in), bytes, false, "input in"},
        recsdk::sim::GmRegion{reinterpret_cast<const uint8_t*>(out), bytes, true, "output out"}};
    return recsdk::sim::RunKernel(run, it->second, report);
}
