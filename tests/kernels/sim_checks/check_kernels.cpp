// Kernels for the emulator's own tests: each "bad_*" kernel breaks exactly one rule the
// hardware enforces and the emulator must report it (naming kernel, core and call); each
// "good_*" kernel exercises a semantic whose result the test checks.
//
// recsdk_sim_run_case(name, blockDim, soc, report) runs one kernel on fresh global memory and
// returns the status; recsdk_sim_run_case_sync(..., cce_auto_sync, report) also says whether the
// kernel counts as compiled with the compiler's automatic synchronisation (recsdk_sim/hazard.h).
//
// Pipe-hazard cases mark the two racing calls with "// @hz <case> 1" (the earlier) and "2" (the
// one reported); the test checks that the message names both with these lines.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "kernel_copy.h"
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
GM_ADDR In() {
    return reinterpret_cast<GM_ADDR>(g->in.data());
}
GM_ADDR Out() {
    return reinterpret_cast<GM_ADDR>(g->out.data());
}

std::string g_fail;  // a good_* kernel's own result check
void Expect(bool ok, const std::string& what) {
    if (!ok && g_fail.empty())
        g_fail = what;
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
    if (GetBlockIdx() == 0)
        return;
    SyncAll();
}

void bad_syncall_count() {  // the last core calls SyncAll once more than the others
    SyncAll();
    if (GetBlockIdx() == GetBlockNum() - 1)
        SyncAll();
}

void bad_waitflag_without_setflag() {
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
}

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
    mxrec::PipeSync<HardEvent::V_MTE3>();
    SetAtomicAdd<float>();
    DataCopy(dst, t, 8);
    SetAtomicNone();
}

void bad_atomic_int64() {  // no 64-bit atomic add on A2/A3
    SetAtomicAdd<int64_t>();
}

void bad_trap() {
    Trap();
}

void good_atomic_add() {  // every core adds 1 to the same 8 floats and to its own slot
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 1.0f, 8);
    mxrec::PipeSync<HardEvent::V_MTE3>();
    SetAtomicAdd<float>();
    for (int rep = 0; rep < 100; ++rep)
        DataCopy(dst, t, 8);
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
        Expect(other == static_cast<float>(((me + 1) % n) * 10 + round),
               "neighbour value after SyncAll");
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
        for (int i = 1; i <= 3; ++i)
            Expect(t.GetValue(blk * 8 + i) == 1.0f, "data");
        for (int i = 4; i < 8; ++i)
            Expect(t.GetValue(blk * 8 + i) == 9.0f, "right padding and dummy");
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
    for (int i = 5; i < 8; ++i)
        Expect(t.GetValue(i) == t.GetValue(0), "dummy repeats the first element");
    mxrec::PipeSync<HardEvent::MTE2_MTE3>();  // a TBuf: nothing else orders the DMA out after the
                                              // DMA in
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

// ---- pipe hazards (recsdk_sim/hazard.h) ---------------------------------------------------------
// Each bad_hazard_* kernel races two calls on different pipes (or on one pipe with overlapping
// destinations) over a TBuf, which no queue synchronises; its good_hazard_* twin orders them.

struct HazardBufs {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    TBuf<TPosition::VECCALC> b;
    GlobalTensor<float> src;
    GlobalTensor<float> dst;
    LocalTensor<float> x;
    LocalTensor<float> y;
    HazardBufs() {
        pipe.InitBuffer(a, 1024);
        pipe.InitBuffer(b, 1024);
        src.SetGlobalBuffer((__gm__ float*)In(), kN);
        dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
        x = a.Get<float>();
        y = b.Get<float>();
    }
};

void bad_hazard_mte2_v() {  // DMA in, vector op reads it: no MTE2 -> V
    HazardBufs h;
    DataCopy(h.x, h.src, 64);  // @hz bad_hazard_mte2_v 1
    Muls(h.y, h.x, 2.0f, 64);  // @hz bad_hazard_mte2_v 2
}

void good_hazard_mte2_v() {
    HazardBufs h;
    DataCopy(h.x, h.src, 64);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(h.y, h.x, 2.0f, 64);
    mxrec::PipeSync<HardEvent::V_MTE3>();
    DataCopy(h.dst, h.y, 64);
}

void bad_hazard_v_mte3() {  // vector result copied out: no V -> MTE3
    HazardBufs h;
    Duplicate(h.x, 3.0f, 64);  // @hz bad_hazard_v_mte3 1
    DataCopy(h.dst, h.x, 64);  // @hz bad_hazard_v_mte3 2
}

void good_hazard_v_mte3() {
    HazardBufs h;
    Duplicate(h.x, 3.0f, 64);
    const TEventID id = GetTPipePtr()->FetchEventID(HardEvent::V_MTE3);
    SetFlag<HardEvent::V_MTE3>(id);
    WaitFlag<HardEvent::V_MTE3>(id);
    DataCopy(h.dst, h.x, 64);
}

void bad_hazard_war_mte2() {  // the buffer is refilled while the vector unit may still read it
    HazardBufs h;
    DataCopy(h.x, h.src, 64);
    mxrec::PipeSync<HardEvent::MTE2_V>();
    Muls(h.y, h.x, 2.0f, 64);      // @hz bad_hazard_war_mte2 1
    DataCopy(h.x, h.src[64], 64);  // @hz bad_hazard_war_mte2 2
}

void good_hazard_war_mte2() {
    HazardBufs h;
    for (int i = 0; i < 3; ++i) {
        if (i > 0)
            mxrec::PipeSync<HardEvent::V_MTE2>();  // the last Muls has read x
        DataCopy(h.x, h.src[i * 64], 64);
        mxrec::PipeSync<HardEvent::MTE2_V>();
        Muls(h.y, h.x, 2.0f, 64);
    }
}

// With --cce-auto-sync the compiler synchronises MTE2 -> S (not a hazard); without, the kernel
// must.
void bad_hazard_mte2_s() {
    HazardBufs h;
    DataCopy(h.x, h.src, 64);                            // @hz bad_hazard_mte2_s 1
    Expect(h.x.GetValue(3) == 1.0f, "value after DMA");  // @hz bad_hazard_mte2_s 2
}

void good_hazard_mte2_s() {
    HazardBufs h;
    DataCopy(h.x, h.src, 64);
    mxrec::PipeSync<HardEvent::MTE2_S>();
    Expect(h.x.GetValue(3) == 1.0f, "value after DMA");
}

// A pipe's ordering is transitive: MTE2 -> S, then S -> V orders the vector read after the DMA.
void good_hazard_chain() {
    HazardBufs h;
    DataCopy(h.x, h.src, 64);
    mxrec::PipeSync<HardEvent::MTE2_S>();
    h.y.SetValue(0, h.x.GetValue(0));
    mxrec::PipeSync<HardEvent::S_V>();
    Add(h.y, h.x, h.x, 64);
}

void bad_hazard_mte2_waw() {  // two DMAs into overlapping UB: PipeBarrier<PIPE_MTE2> needed
    HazardBufs h;
    DataCopy(h.x, h.src, 64);         // @hz bad_hazard_mte2_waw 1
    DataCopy(h.x[8], h.src[64], 64);  // @hz bad_hazard_mte2_waw 2
}

void good_hazard_mte2_waw() {
    HazardBufs h;
    DataCopy(h.x, h.src, 64);
    PipeBarrier<PIPE_MTE2>();
    DataCopy(h.x[8], h.src[64], 64);
    DataCopy(h.x[128], h.src, 64);  // disjoint bytes need nothing
}

// Dependent vector instructions: the compiler's PipeBarrier<PIPE_V> with auto sync, else the
// kernel's.
void bad_hazard_v_v() {
    HazardBufs h;
    Duplicate(h.x, 1.0f, 64);  // @hz bad_hazard_v_v 1
    Muls(h.y, h.x, 2.0f, 64);  // @hz bad_hazard_v_v 2
}

void good_hazard_v_v() {
    HazardBufs h;
    Duplicate(h.x, 1.0f, 64);
    PipeBarrier<PIPE_V>();
    Muls(h.y, h.x, 2.0f, 64);
    Muls(h.x, h.x, 3.0f, 64);  // in place: the instruction reads before it writes
}

// A VECIN queue orders MTE2 before V only: a tensor dequeued from it and copied straight out races.
void bad_hazard_vecin_to_gm() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 1, 256);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    LocalTensor<float> t = que.AllocTensor<float>();
    DataCopy(t, src, 64);  // @hz bad_hazard_vecin_to_gm 1
    que.EnQue(t);
    t = que.DeQue<float>();
    DataCopy(dst, t, 64);  // @hz bad_hazard_vecin_to_gm 2
    que.FreeTensor(t);
}

// TQueBind<VECIN, VECOUT> is a UB -> UB queue: EnQue/DeQue order MTE2 before MTE3, FreeTensor/
// AllocTensor MTE3 before the next MTE2 into that buffer (double buffered here).
void good_hazard_bound_queue() {
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> que;
    pipe.InitBuffer(que, 2, 256);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    for (int i = 0; i < 4; ++i) {
        LocalTensor<float> t = que.AllocTensor<float>();
        DataCopy(t, src[i * 64], 64);
        que.EnQue(t);
        t = que.DeQue<float>();
        DataCopy(dst[i * 64], t, 64);
        que.FreeTensor(t);
    }
}

// In, compute, out through queues only: the framework's events order every step.
void good_hazard_queues() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 2, 256);
    pipe.InitBuffer(outQ, 2, 256);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer((__gm__ float*)Out(), kN);
    for (int i = 0; i < 4; ++i) {
        LocalTensor<float> a = inQ.AllocTensor<float>();
        DataCopy(a, src[i * 64], 64);
        inQ.EnQue(a);
        LocalTensor<float> b = inQ.DeQue<float>();
        LocalTensor<float> c = outQ.AllocTensor<float>();
        Adds(c, b, static_cast<float>(i), 64);
        inQ.FreeTensor(b);
        outQ.EnQue(c);
        LocalTensor<float> d = outQ.DeQue<float>();
        DataCopy(dst[i * 64], d, 64);
        outQ.FreeTensor(d);
    }
}

// PipeBarrier<PIPE_ALL> and SyncAll wait for every pipe.
void good_hazard_barriers() {
    HazardBufs h;
    const int64_t me = GetBlockIdx();
    DataCopy(h.x, h.src[me * 64], 64);
    PipeBarrier<PIPE_ALL>();
    Muls(h.y, h.x, 2.0f, 64);
    SyncAll();
    DataCopy(h.dst[me * 64], h.y, 64);
}

void bad_setflag_twice() {                  // SetFlag_WaitFlag_ISASI.md: undefined
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);  // @hz bad_setflag_twice 1
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);  // @hz bad_setflag_twice 2
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);
}

// An enqueued VECIN tensor holds MTE2_V event id 0 until DeQue: a hand-picked id 0 collides.
void bad_event_id_in_use() {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 1, 256);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = que.AllocTensor<float>();
    DataCopy(t, src, 64);
    que.EnQue(t);                           // @hz bad_event_id_in_use 1
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);  // @hz bad_event_id_in_use 2
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    t = que.DeQue<float>();
    que.FreeTensor(t);
}

void good_event_ids() {  // FetchEventID / AllocEventID / ReleaseEventID (TPipe/*.md)
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 1, 256);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = que.AllocTensor<float>();
    DataCopy(t, src, 64);
    que.EnQue(t);
    Expect(pipe.FetchEventID(HardEvent::MTE2_V) == 1, "FetchEventID skips the id the EnQue holds");
    Expect(pipe.FetchEventID<HardEvent::MTE2_V>() == 1, "FetchEventID is repeatable");
    t = que.DeQue<float>();
    Expect(pipe.FetchEventID(HardEvent::MTE2_V) == 0, "DeQue released the id");
    que.FreeTensor(t);
    const TEventID a = pipe.AllocEventID<HardEvent::V_S>();
    const TEventID b = GetTPipePtr()->AllocEventID<HardEvent::V_S>();
    Expect(a == 0 && b == 1, "AllocEventID takes the lowest free ids");
    pipe.ReleaseEventID<HardEvent::V_S>(a);
    Expect(pipe.FetchEventID(HardEvent::V_S) == 0, "ReleaseEventID frees the id");
    SetFlag<HardEvent::V_S>(b);
    WaitFlag<HardEvent::V_S>(b);
    pipe.ReleaseEventID<HardEvent::V_S>(b);
}

void bad_release_event_id() {
    TPipe pipe;
    pipe.ReleaseEventID<HardEvent::V_S>(3);
}

void bad_event_ids_exhausted() {  // eight ids per event
    TPipe pipe;
    for (int i = 0; i < 9; ++i)
        pipe.AllocEventID<HardEvent::S_MTE3>();
}

// EnQue.md/DeQue.md: with user positions, DeQue must name the path EnQue did (its Wait pairs
// with that Set).
void bad_deque_other_path() {
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> que;
    pipe.InitBuffer(que, 1, 256);
    GlobalTensor<float> src;
    src.SetGlobalBuffer((__gm__ float*)In(), kN);
    LocalTensor<float> t = que.AllocTensor<float>();
    DataCopy(t, src, 64);
    que.EnQue<TPosition::GM, TPosition::VECIN, float>(t);
    t = que.DeQue<TPosition::VECOUT, TPosition::GM, float>();
    que.FreeTensor(t);
}

void good_tquesync() {  // 核内同步/TQueSync模板参数.md: the same ordering, named by pipes
    HazardBufs h;
    DataCopy(h.x, h.src, 64);
    TQueSync<PIPE_MTE2, PIPE_V> sync;
    sync.SetFlag(0);
    sync.WaitFlag(0);
    Muls(h.y, h.x, 2.0f, 64);
}

void good_free_all_event() {  // FreeAllEvent.md: the freed buffers' event ids come back
    TPipe pipe;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(que, 2, 256);
    LocalTensor<float> a = que.AllocTensor<float>();
    LocalTensor<float> b = que.AllocTensor<float>();
    que.FreeTensor(a);
    que.FreeTensor(b);
    Expect(pipe.FetchEventID(HardEvent::V_MTE2) == 2, "two freed buffers hold V_MTE2 ids 0 and 1");
    que.FreeAllEvent();
    Expect(pipe.FetchEventID(HardEvent::V_MTE2) == 0, "FreeAllEvent released them");
    LocalTensor<float> c = que.AllocTensor<float>();
    que.FreeTensor(c);
}

// The interval bookkeeping of the checker (splitting, merging, fast paths) against a plain
// per-block model of the same rules: random reads and writes by V, MTE2 and MTE3 over one
// buffer, random SetFlag/WaitFlag pairs and barriers; every access must be reported exactly
// when the model finds a conflicting access it is not ordered after. (Kernels built without
// --cce-auto-sync, so no conflict is the compiler's to resolve.)
void good_hazard_model() {
    using recsdk::sim::Acc;
    using recsdk::sim::Pipe;
    constexpr int kBlocks = 48;
    constexpr int kP = recsdk::sim::kPipes;
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, kBlocks * 32);
    LocalTensor<uint8_t> t = buf.Get<uint8_t>();
    recsdk::sim::HazardRanges& hz = t.SimSlot()->hz;
    struct Block {
        int wp = -1;
        uint32_t we = 0;
        uint32_t re[kP] = {};
    } blocks[kBlocks];
    uint32_t epoch[kP];
    uint32_t know[kP][kP] = {};
    for (auto& e : epoch)
        e = 1;
    const Pipe pipes[] = {Pipe::V, Pipe::MTE2, Pipe::MTE3};
    uint64_t seed = 12345;
    auto rnd = [&seed](uint32_t n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>((seed >> 33) % n);
    };
    int reported = 0;
    int passed = 0;
    for (int step = 0; step < 20000; ++step) {
        const uint32_t what = rnd(10);
        if (what == 0) {  // SetFlag + WaitFlag between two pipes
            const Pipe q = pipes[rnd(3)];
            const Pipe p = pipes[rnd(3)];
            const int qi = static_cast<int>(q);
            const int pi = static_cast<int>(p);
            uint32_t snap[kP];
            for (int k = 0; k < kP; ++k)
                snap[k] = know[qi][k];
            snap[qi] = epoch[qi]++;
            for (int k = 0; k < kP; ++k)
                know[pi][k] = know[pi][k] > snap[k] ? know[pi][k] : snap[k];
            recsdk::sim::HzSetFlag(q, p, 3, "SetFlag", {});
            recsdk::sim::HzWaitFlag(q, p, 3, "WaitFlag", {});
            continue;
        }
        if (what == 1) {  // PipeBarrier<pipe>
            const Pipe q = pipes[rnd(3)];
            const int qi = static_cast<int>(q);
            know[qi][qi] = epoch[qi]++;
            recsdk::sim::HzBarrier(q);
            continue;
        }
        const Pipe p = pipes[rnd(3)];
        const int pi = static_cast<int>(p);
        // MTE2 only writes and MTE3 only reads the unified buffer; V does both.
        const Acc acc = p == Pipe::MTE2   ? Acc::kWrite
                        : p == Pipe::MTE3 ? Acc::kRead
                                          : (rnd(2) ? Acc::kRead : Acc::kWrite);
        const uint32_t first = rnd(kBlocks);
        const uint32_t count =
            1 + rnd(rnd(4) == 0 ? kBlocks - first : (kBlocks - first < 4 ? kBlocks - first : 4));
        bool hazard = false;
        for (uint32_t k = first; k < first + count; ++k) {
            const Block& bl = blocks[k];
            if (bl.wp >= 0 && know[pi][bl.wp] < bl.we)
                hazard = true;  // RAW / WAW (same pipe too)
            if (acc == Acc::kWrite) {
                for (int q = 0; q < kP; ++q) {
                    if (q != pi && bl.re[q] != 0 && know[pi][q] < bl.re[q])
                        hazard = true;  // WAR
                }
            }
        }
        // Unaligned bytes inside the blocks: the checker rounds to whole blocks.
        const uint32_t lead = rnd(8);
        const uint32_t trim = rnd(8);
        bool threw = false;
        try {
            recsdk::sim::HzAccess(hz, t.SimData() + first * 32 + lead, count * 32 - lead - trim, p,
                                  acc, "Model", {});
        } catch (const recsdk::sim::CheckError&) {
            threw = true;
        }
        if (threw != hazard) {
            Expect(false, "step " + std::to_string(step) + ": the checker " +
                              (threw ? "reported" : "missed") + " an access the model " +
                              (hazard ? "finds racing" : "finds ordered"));
            return;
        }
        if (hazard) {
            ++reported;
            continue;
        }
        ++passed;
        for (uint32_t k = first; k < first + count; ++k) {
            Block& bl = blocks[k];
            if (acc == Acc::kWrite) {
                bl = Block{};
                bl.wp = pi;
                bl.we = epoch[pi];
            } else {
                bl.re[pi] = epoch[pi];
            }
        }
    }
    Expect(reported > 1000 && passed > 1000, "both outcomes occur (" + std::to_string(reported) +
                                                 " reported, " + std::to_string(passed) +
                                                 " ordered)");
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
        {"bad_hazard_mte2_v", bad_hazard_mte2_v},
        {"good_hazard_mte2_v", good_hazard_mte2_v},
        {"bad_hazard_v_mte3", bad_hazard_v_mte3},
        {"good_hazard_v_mte3", good_hazard_v_mte3},
        {"bad_hazard_war_mte2", bad_hazard_war_mte2},
        {"good_hazard_war_mte2", good_hazard_war_mte2},
        {"bad_hazard_mte2_s", bad_hazard_mte2_s},
        {"good_hazard_mte2_s", good_hazard_mte2_s},
        {"good_hazard_chain", good_hazard_chain},
        {"bad_hazard_mte2_waw", bad_hazard_mte2_waw},
        {"good_hazard_mte2_waw", good_hazard_mte2_waw},
        {"bad_hazard_v_v", bad_hazard_v_v},
        {"good_hazard_v_v", good_hazard_v_v},
        {"bad_hazard_vecin_to_gm", bad_hazard_vecin_to_gm},
        {"good_hazard_bound_queue", good_hazard_bound_queue},
        {"good_hazard_queues", good_hazard_queues},
        {"good_hazard_barriers", good_hazard_barriers},
        {"bad_setflag_twice", bad_setflag_twice},
        {"bad_event_id_in_use", bad_event_id_in_use},
        {"good_event_ids", good_event_ids},
        {"bad_release_event_id", bad_release_event_id},
        {"bad_event_ids_exhausted", bad_event_ids_exhausted},
        {"good_hazard_model", good_hazard_model},
        {"bad_deque_other_path", bad_deque_other_path},
        {"good_tquesync", good_tquesync},
        {"good_free_all_event", good_free_all_event},
    };
    return cases;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t
recsdk_sim_run_case_sync(const char* name, int32_t block_dim, const char* soc,
                         int32_t cce_auto_sync, RecsdkSimReport* report) {
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
    run.cce_auto_sync = cce_auto_sync != 0;
    run.regions = {
        GmRegion{reinterpret_cast<const uint8_t*>(gm.in.data()), kN * sizeof(float), false,
                 "input in"},
        GmRegion{reinterpret_cast<const uint8_t*>(gm.out.data()), kN * sizeof(float), true,
                 "output out"},
        GmRegion{reinterpret_cast<const uint8_t*>(gm.iout.data()), kN * sizeof(int32_t), true,
                 "output iout"},
        GmRegion{reinterpret_cast<const uint8_t*>(gm.lout.data()), kN * sizeof(int64_t), true,
                 "output lout"},
    };
    const int32_t status = recsdk::sim::RunKernel(run, it->second, report);
    if (status == RECSDK_SIM_OK && !g_fail.empty()) {
        std::snprintf(report->message, sizeof(report->message), "result check failed: %s",
                      g_fail.c_str());
        return report->status = RECSDK_SIM_INTERNAL;
    }
    if (status == RECSDK_SIM_OK && std::string(name) == "good_atomic_add") {
        for (int i = 0; i < 8; ++i) {
            if (gm.out[i] != 100.0f * block_dim) {
                std::snprintf(report->message, sizeof(report->message), "out[%d] = %g, expected %g",
                              i, gm.out[i], 100.0 * block_dim);
                return report->status = RECSDK_SIM_INTERNAL;
            }
        }
        for (int i = 0; i < block_dim; ++i) {
            if (gm.out[8 + i] != 1.0f) {
                std::snprintf(report->message, sizeof(report->message), "slot %d = %g", i,
                              gm.out[8 + i]);
                return report->status = RECSDK_SIM_INTERNAL;
            }
        }
    }
    if (status == RECSDK_SIM_OK && std::string(name) == "good_hazard_queues") {
        for (int i = 0; i < kN; ++i) {
            if (gm.out[i] != 1.0f + static_cast<float>(i / 64)) {
                std::snprintf(report->message, sizeof(report->message), "out[%d] = %g", i,
                              gm.out[i]);
                return report->status = RECSDK_SIM_INTERNAL;
            }
        }
    }
    if (status == RECSDK_SIM_OK && std::string(name) == "good_hazard_barriers") {
        for (int i = 0; i < 64 * block_dim; ++i) {
            if (gm.out[i] != 2.0f) {
                std::snprintf(report->message, sizeof(report->message), "out[%d] = %g", i,
                              gm.out[i]);
                return report->status = RECSDK_SIM_INTERNAL;
            }
        }
    }
    if (status == RECSDK_SIM_OK && std::string(name) == "good_datacopypad_dummy") {
        if (gm.out[0] != 0.0f || gm.out[1] != 1.0f || gm.out[5] != 1.0f || gm.out[6] != 0.0f) {
            std::snprintf(report->message, sizeof(report->message),
                          "unaligned DataCopyPad store wrong");
            return report->status = RECSDK_SIM_INTERNAL;
        }
    }
    return status;
}

extern "C" __attribute__((visibility("default"))) int32_t
recsdk_sim_run_case(const char* name, int32_t block_dim, const char* soc, RecsdkSimReport* report) {
    return recsdk_sim_run_case_sync(name, block_dim, soc, 1, report);
}
