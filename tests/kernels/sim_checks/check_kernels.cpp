// Kernels for the emulator's own tests: each "bad_*" kernel breaks exactly one rule the
// hardware enforces and the emulator must report it (naming kernel, core and call); each
// "good_*" kernel exercises a semantic whose result the test checks.
//
// recsdk_sim_run_case(name, blockDim, report) runs one kernel on fresh global memory and returns the status.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "recsdk_sim/launch.h"

using namespace AscendC;
using recsdk::sim::GmRegion;

namespace {

constexpr int kN = 256;

struct Gm {
    std::vector<float> in = std::vector<float>(kN, 1.0f);
    std::vector<float> out = std::vector<float>(kN, 0.0f);
    std::vector<int32_t> iout = std::vector<int32_t>(kN, 0);
    std::vector<int64_t> lout = std::vector<int64_t>(kN, 0);
};

Gm* g = nullptr;
GM_ADDR In() { return reinterpret_cast<GM_ADDR>(g->in.data()); }
GM_ADDR Out() { return reinterpret_cast<GM_ADDR>(g->out.data()); }

std::string g_fail;  // a good_* kernel's own result check
void Expect(bool ok, const std::string& what) {
    if (!ok && g_fail.empty()) g_fail = what;
}

// ---- DataCopy rules ----------------------------------------------------------------------------

void bad_datacopy_length() {  // 7 floats = 28 bytes: not a multiple of 32
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, src, 7);
}

void bad_datacopy_ub_address() {  // UB destination 4 bytes into a buffer
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t[1], src, 8);
}

void bad_datacopy_gm_address() {  // GM source not aligned to sizeof(float)
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)(In() + 2), kN - 1);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, src, 8);
}

void bad_datacopy_ub_to_gm_length() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 0.0f, 16);
    DataCopy(dst, t, 12);
}

void bad_local_overrun() {  // more elements than the UB tensor holds
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, src, 32);
}

void bad_datacopypad_b64_padding() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    GlobalTensor<int64_t> src;
    src.SetGlobalBuffer((__gm__ int64_t*)In(), kN / 2);
    LocalTensor<int64_t> t = buf.Get<int64_t>();
    DataCopyExtParams p{1, 3 * sizeof(int64_t), 0, 0, 0};
    DataCopyPadExtParams<int64_t> pad{true, 0, 1, 5};
    DataCopyPad(t, src, p, pad);
}

// ---- unified buffer capacity -------------------------------------------------------------------

void bad_ub_overflow() {  // 2 x 100 KiB > 192 KiB on Ascend910B
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 2, 100 * 1024);
}

// ---- global memory bounds ----------------------------------------------------------------------

void bad_gm_read_past_end() {  // DataCopyPad reads 8 floats past the input
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2048);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = buf.Get<float>();
    DataCopyExtParams p{1, (kN - 8 + 16) * sizeof(float), 0, 0, 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    DataCopyPad(t, src[0], p, pad);
    DataCopyPad(t, src[8], p, pad);
}

void bad_gm_write_past_end() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 0.0f, 64);
    DataCopy(dst[kN - 32], t, 64);
}

void bad_gm_scalar_read() {  // GetValue one element before the input
    GlobalTensor<float> before;
    before.SetGlobalBuffer((__gm__ float*)(In()) - 1, kN);
    (void)before.GetValue(0);
}

void bad_gm_write_input() {  // inputs are read-only
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    src.SetValue(3, 2.0f);
}

// ---- queues ------------------------------------------------------------------------------------

void bad_deque_empty() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 1, 256);
    LocalTensor<float> t = que.DeQue<float>();
    que.FreeTensor(t);
}

void bad_double_free() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 2, 256);
    LocalTensor<float> t = que.AllocTensor<float>();
    que.FreeTensor(t);
    que.FreeTensor(t);
}

void bad_alloc_beyond_buffers() {  // three tensors from a double-buffered queue
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 2, 256);
    LocalTensor<float> a = que.AllocTensor<float>();
    LocalTensor<float> b = que.AllocTensor<float>();
    LocalTensor<float> c = que.AllocTensor<float>();
    que.FreeTensor(a);
    que.FreeTensor(b);
    que.FreeTensor(c);
}

void bad_enque_beyond_depth() {  // depth 1: two EnQue without a DeQue in between
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 2, 256);
    LocalTensor<float> a = que.AllocTensor<float>();
    LocalTensor<float> b = que.AllocTensor<float>();
    que.EnQue(a);
    que.EnQue(b);
}

void bad_leak_at_exit() {  // allocated, never freed
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> que;
    pipe.InitBuffer(que, 1, 256);
    LocalTensor<float> a = que.AllocTensor<float>();
    Duplicate(a, 1.0f, 64);
}

void bad_use_after_free() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 1, 256);
    LocalTensor<float> a = que.AllocTensor<float>();
    que.FreeTensor(a);
    Duplicate(a, 1.0f, 64);
}

void bad_free_enqueued() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 1, 256);
    LocalTensor<float> a = que.AllocTensor<float>();
    que.EnQue(a);
    que.FreeTensor(a);
}

// ---- cores, sync, atomics, vector types -------------------------------------------------------

void bad_syncall_deadlock() {  // core 0 leaves without meeting the others
    if (GetBlockIdx() == 0) return;
    SyncAll();
}

void bad_syncall_count() {  // the last core calls SyncAll once more than the others
    SyncAll();
    if (GetBlockIdx() == GetBlockNum() - 1) SyncAll();
}

void bad_waitflag_without_setflag() { WaitFlag<HardEvent::MTE2_V>(EVENT_ID0); }

void bad_vector_int64() {  // A2/A3 have no 64-bit vector Duplicate
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    LocalTensor<int64_t> t = buf.Get<int64_t>();
    Duplicate(t, static_cast<int64_t>(7), 8);
}

void bad_atomic_type() {  // SetAtomicAdd<float> but the copy moves int32
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    GlobalTensor<int32_t> dst;
    dst.SetGlobalBuffer((__gm__ int32_t*)g->iout.data(), kN);
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    Duplicate(t, 1, 8);
    SetAtomicAdd<float>();
    DataCopy(dst, t, 8);
    SetAtomicNone();
}

void bad_atomic_int64() {  // no 64-bit atomic add on A2/A3
    SetAtomicAdd<int64_t>();
}

void bad_trap() { Trap(); }

void good_atomic_add() {  // every core adds 1 to the same 8 floats and to its own slot
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 1.0f, 8);
    SetAtomicAdd<float>();
    for (int rep = 0; rep < 100; ++rep) DataCopy(dst, t, 8);
    DataCopyExtParams one{1, sizeof(float), 0, 0, 0};
    DataCopyPad(dst[8 + GetBlockIdx()], t, one);
    SetAtomicNone();
}

void good_syncall_exchange() {  // write own slot, meet, read the neighbour's
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    GlobalTensor<float> gm;
    gm.SetGlobalBuffer((__gm__ float*)Out(), kN);
    const int64_t me = GetBlockIdx();
    const int64_t n = GetBlockNum();
    for (int round = 0; round < 3; ++round) {
        gm.SetValue(round * 32 + me, static_cast<float>(me * 10 + round));
        SyncAll();
        const float other = gm.GetValue(round * 32 + (me + 1) % n);
        Expect(other == static_cast<float>(((me + 1) % n) * 10 + round), "neighbour value after SyncAll");
        SyncAll();
    }
}

void good_datacopypad_padding() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = buf.Get<float>();
    // 3 floats, 2 blocks, padding value 9: each block is [9, x, x, x, 9, 9, 9, 9] in its 32 bytes.
    DataCopyExtParams p{2, 3 * sizeof(float), 4 * sizeof(float), 0, 0};
    DataCopyPadExtParams<float> pad{true, 1, 1, 9.0f};
    DataCopyPad(t, src, p, pad);
    for (int blk = 0; blk < 2; ++blk) {
        Expect(t.GetValue(blk * 8) == 9.0f, "left padding");
        for (int i = 1; i <= 3; ++i) Expect(t.GetValue(blk * 8 + i) == 1.0f, "data");
        for (int i = 4; i < 8; ++i) Expect(t.GetValue(blk * 8 + i) == 9.0f, "right padding and dummy");
    }
}

void good_datacopypad_dummy() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    LocalTensor<float> t = buf.Get<float>();
    DataCopyExtParams p{1, 5 * sizeof(float), 0, 0, 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    DataCopyPad(t, src[3], p, pad);
    for (int i = 5; i < 8; ++i) Expect(t.GetValue(i) == t.GetValue(0), "dummy repeats the first element");
    // Unaligned store: only 5 floats reach GM, at an odd offset.
    DataCopyPad(dst[1], t, p);
}

void good_counters() {  // one core: 64 floats in, 64 out, one vector op of 64
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 2, 256);
    pipe.InitBuffer(outQ, 2, 256);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    LocalTensor<float> a = inQ.AllocTensor<float>();
    DataCopy(a, src, 64);
    inQ.EnQue(a);
    LocalTensor<float> b = inQ.DeQue<float>();
    LocalTensor<float> c = outQ.AllocTensor<float>();
    Adds(c, b, 1.0f, 64);
    inQ.FreeTensor(b);
    outQ.EnQue(c);
    LocalTensor<float> d = outQ.DeQue<float>();
    DataCopy(dst, d, 64);
    outQ.FreeTensor(d);
}

const std::map<std::string, std::function<void()>>& Cases() {
    static const std::map<std::string, std::function<void()>> cases = {
        {"bad_datacopy_length", bad_datacopy_length},
        {"bad_datacopy_ub_address", bad_datacopy_ub_address},
        {"bad_datacopy_gm_address", bad_datacopy_gm_address},
        {"bad_datacopy_ub_to_gm_length", bad_datacopy_ub_to_gm_length},
        {"bad_local_overrun", bad_local_overrun},
        {"bad_datacopypad_b64_padding", bad_datacopypad_b64_padding},
        {"bad_ub_overflow", bad_ub_overflow},
        {"bad_gm_read_past_end", bad_gm_read_past_end},
        {"bad_gm_write_past_end", bad_gm_write_past_end},
        {"bad_gm_scalar_read", bad_gm_scalar_read},
        {"bad_gm_write_input", bad_gm_write_input},
        {"bad_deque_empty", bad_deque_empty},
        {"bad_double_free", bad_double_free},
        {"bad_alloc_beyond_buffers", bad_alloc_beyond_buffers},
        {"bad_enque_beyond_depth", bad_enque_beyond_depth},
        {"bad_leak_at_exit", bad_leak_at_exit},
        {"bad_use_after_free", bad_use_after_free},
        {"bad_free_enqueued", bad_free_enqueued},
        {"bad_syncall_deadlock", bad_syncall_deadlock},
        {"bad_syncall_count", bad_syncall_count},
        {"bad_waitflag_without_setflag", bad_waitflag_without_setflag},
        {"bad_vector_int64", bad_vector_int64},
        {"bad_atomic_type", bad_atomic_type},
        {"bad_atomic_int64", bad_atomic_int64},
        {"bad_trap", bad_trap},
        {"good_atomic_add", good_atomic_add},
        {"good_syncall_exchange", good_syncall_exchange},
        {"good_datacopypad_padding", good_datacopypad_padding},
        {"good_datacopypad_dummy", good_datacopypad_dummy},
        {"good_counters", good_counters},
    };
    return cases;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t recsdk_sim_run_case(const char* name, int32_t block_dim,
                                                                   const char* soc, RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    auto it = Cases().find(name);
    if (it == Cases().end()) {
        std::snprintf(report->message, sizeof(report->message), "no case %s", name);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    Gm gm;
    g = &gm;
    g_fail.clear();
    recsdk::sim::KernelRun run;
    run.kernel = name;
    run.soc = recsdk::sim::FindSoc(soc);
    run.block_dim = static_cast<uint32_t>(block_dim);
    run.regions = {
        GmRegion{reinterpret_cast<const uint8_t*>(gm.in.data()), kN * sizeof(float), false, "input in"},
        GmRegion{reinterpret_cast<const uint8_t*>(gm.out.data()), kN * sizeof(float), true, "output out"},
        GmRegion{reinterpret_cast<const uint8_t*>(gm.iout.data()), kN * sizeof(int32_t), true, "output iout"},
        GmRegion{reinterpret_cast<const uint8_t*>(gm.lout.data()), kN * sizeof(int64_t), true, "output lout"},
    };
    const int32_t status = recsdk::sim::RunKernel(run, it->second, report);
    if (status == RECSDK_SIM_OK && !g_fail.empty()) {
        std::snprintf(report->message, sizeof(report->message), "result check failed: %s", g_fail.c_str());
        return report->status = RECSDK_SIM_INTERNAL;
    }
    if (status == RECSDK_SIM_OK && std::string(name) == "good_atomic_add") {
        for (int i = 0; i < 8; ++i) {
            if (gm.out[i] != 100.0f * block_dim) {
                std::snprintf(report->message, sizeof(report->message), "out[%d] = %g, expected %g", i, gm.out[i],
                              100.0 * block_dim);
                return report->status = RECSDK_SIM_INTERNAL;
            }
        }
        for (int i = 0; i < block_dim; ++i) {
            if (gm.out[8 + i] != 1.0f) {
                std::snprintf(report->message, sizeof(report->message), "slot %d = %g", i, gm.out[8 + i]);
                return report->status = RECSDK_SIM_INTERNAL;
            }
        }
    }
    if (status == RECSDK_SIM_OK && std::string(name) == "good_datacopypad_dummy") {
        if (gm.out[0] != 0.0f || gm.out[1] != 1.0f || gm.out[5] != 1.0f || gm.out[6] != 0.0f) {
            std::snprintf(report->message, sizeof(report->message), "unaligned DataCopyPad store wrong");
            return report->status = RECSDK_SIM_INTERNAL;
        }
    }
    return status;
}
