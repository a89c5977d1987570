// Kernels for the tests of the emulated AscendC APIs added for vendor kernels
// (tests/kernels/test_sim_api_vector.py): each case writes its results to the output tensor,
// whose expected values the test works out by hand or with torch.
//
// recsdk_sim_api_case(name, out, out_elems, report) runs one case on one core.
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "recsdk_sim/launch.h"

using namespace AscendC;

namespace {

float* g_out = nullptr;
constexpr uint32_t kOut = 512;

GlobalTensor<float> Out() {
    GlobalTensor<float> gt;
    gt.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(g_out), kOut);
    return gt;
}

// Writes `n` floats of `t` to out[at...] (V -> MTE3 ordered by a barrier).
void Store(const LocalTensor<float>& t, uint32_t n, uint32_t at = 0) {
    PipeBarrier<PIPE_ALL>();
    DataCopy(Out()[at], t, n);
    PipeBarrier<PIPE_ALL>();
}

LocalTensor<float> Zeroed(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, uint32_t n) {
    pipe.InitBuffer(buf, n * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    Duplicate<float>(t, 0.0f, static_cast<int32_t>(n));
    return t;
}

void dup_mask_bits() {  // lanes 0, 1, 3 of two repeats
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<float> t = Zeroed(pipe, buf, 128);
    uint64_t mask[2] = {0b1011, 0};
    Duplicate<float>(t, 7.0f, mask, 2, 1, 8);
    Store(t, 128);
}

void dup_mask_count_strides() {  // 10 lanes, blocks 2 apart, repeats 16 blocks apart
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<float> t = Zeroed(pipe, buf, 256);
    Duplicate<float>(t, 5.0f, 10, 2, 2, 16);
    Store(t, 256);
}

void add_level0() {  // dst = src0 + src1 over 2 repeats of 64 lanes
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    LocalTensor<float> x = Zeroed(pipe, a, 128), y = Zeroed(pipe, b, 128), z = Zeroed(pipe, c, 128);
    CreateVecIndex(x, 0.0f, 128);
    Duplicate<float>(y, 100.0f, 128);
    BinaryRepeatParams rp;
    Add(z, x, y, 64, 2, rp);
    Store(z, 128);
}

void counter_mode() {  // Adds on the first 70 elements, the count in the mask register
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    LocalTensor<float> x = Zeroed(pipe, a, 128), y = Zeroed(pipe, b, 128);
    CreateVecIndex(x, 0.0f, 128);
    SetMaskCount();
    SetVectorMask<float, MaskMode::COUNTER>(0, 70);
    UnaryRepeatParams rp;
    Adds<float, false>(y, x, 1.0f, MASK_PLACEHOLDER, 1, rp);
    SetMaskNorm();
    ResetMask();
    Store(y, 128);
}

void whole_reduce_sum() {  // 1..128: one sum per repeat of 64
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    LocalTensor<float> x = Zeroed(pipe, a, 128), y = Zeroed(pipe, b, 8);
    CreateVecIndex(x, 1.0f, 128);
    WholeReduceSum<float>(y, x, 64, 2, 1, 1, 8);
    Store(y, 8);
}

void block_reduce_sum() {  // 1..64: one sum per 32-byte block
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    LocalTensor<float> x = Zeroed(pipe, a, 64), y = Zeroed(pipe, b, 8);
    CreateVecIndex(x, 1.0f, 64);
    BlockReduceSum<float>(y, x, 1, 64, 1, 1, 8);
    Store(y, 8);
}

void activations() {  // x = -4 + i / 8 for 64 elements: Silu, Relu, LeakyRelu(0.1), Exp
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    LocalTensor<float> x = Zeroed(pipe, a, 64), y = Zeroed(pipe, b, 256);
    CreateVecIndex(x, 0.0f, 64);
    Muls(x, x, 0.125f, 64);
    Adds(x, x, -4.0f, 64);
    Silu(y, x, 64);
    Relu(y[64], x, 64);
    LeakyRelu(y[128], x, 0.1f, 64);
    Exp(y[192], x, 64);
    Store(y, 256);
}

void atomic_max_min() {  // out[0..8) = max(0, v), then out[8..16) = min(0, v)
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    LocalTensor<float> v = Zeroed(pipe, a, 8);
    const float vals[8] = {-1, 5, 2, -3, 0.5f, -0.5f, 9, -9};
    for (int i = 0; i < 8; ++i)
        v.SetValue(i, vals[i]);
    PipeBarrier<PIPE_ALL>();
    SetAtomicMax<float>();
    DataCopy(Out(), v, 8);
    SetAtomicMin<float>();
    DataCopy(Out()[8], v, 8);
    DisableDmaAtomic();
}

void flags_ordered() {  // V writes, set_flag/wait_flag V -> MTE3, then the store
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 64 * sizeof(float));
    LocalTensor<float> t = a.Get<float>();
    Duplicate<float>(t, 3.0f, 64);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    DataCopy(Out(), t, 64);
}

void flags_missing() {  // the same without the flag: the store races the vector write
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 64 * sizeof(float));
    LocalTensor<float> t = a.Get<float>();
    Duplicate<float>(t, 3.0f, 64);
    DataCopy(Out(), t, 64);
}

void phy_addr_and_queues() {  // GetPhyAddr as a pointer and an offset; DeQue forms
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 64 * sizeof(float));
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate<float>(t, 0.0f, 64);
    PipeBarrier<PIPE_ALL>();
    __ubuf__ float* p = (__ubuf__ float*)t.GetPhyAddr();
    p[2] = 42.0f;
    const uint64_t addr = t.GetPhyAddr();
    q.EnQue(t);
    LocalTensor<float> u;
    q.DeQue(u);
    u.SetValue(3, static_cast<float>(addr % 32));  // 0: the buffer is 32-byte aligned
    PipeBarrier<PIPE_ALL>();
    DataCopy(Out(), u, 64);
    q.FreeTensor(u);
    GlobalTensor<float> out = Out();
    out(10) = 11.0f;  // GlobalTensor::operator()
}

void assert_fails() {
    ASCENDC_ASSERT(GetBlockNum() == 2, KERNEL_LOG(KERNEL_ERROR, "expected %d cores", 2));
}

void mask_count_too_large() {  // 65 lanes of float in normal mode
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    LocalTensor<float> t = Zeroed(pipe, a, 128);
    Duplicate<float>(t, 1.0f, 65, 1, 1, 8);
}

// Leaves the vector mask in counter mode with a count of 3 and a compare result in the CmpMask
// register: the next launch on this thread must not see either.
void mask_left_set() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    LocalTensor<float> t = Zeroed(pipe, a, 64);
    LocalTensor<float> u = Zeroed(pipe, b, 64);
    Adds(u, u, 1.0f, 64);
    Compare(t, u, CMPMODE::LT, uint64_t(64), BinaryRepeatParams());  // every lane: 0 < 1
    SetMaskCount();
    SetVectorMask<float, MaskMode::COUNTER>(0, 3);
}

// A launch's first level-0 instruction with isSetMask = false: the mask registers as a core
// starts them (normal mode, every lane on), so all 64 lanes; then the CmpMask register as
// GetCmpMask reads it, into out[64...) as raw bits.
void mask_fresh() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    LocalTensor<float> t = Zeroed(pipe, a, 128);
    pipe.InitBuffer(b, 32);
    LocalTensor<uint8_t> m = b.Get<uint8_t>();
    Duplicate<float, false>(t, 7.0f, MASK_PLACEHOLDER, 1, 1, 8);
    GetCmpMask(m);
    PipeBarrier<PIPE_ALL>();
    DataCopy(t[64], m.ReinterpretCast<float>(), 8);
    Store(t, 128);
}

// Gather's mask-count form: 40 lanes of 2 float repeats, dst repeats 16 blocks apart, the
// offsets (bytes past srcBaseAddr = 16) read one per lane of every repeat.
void gather_level0_count() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    LocalTensor<float> dst = Zeroed(pipe, a, 256);
    pipe.InitBuffer(b, 128 * sizeof(float));
    pipe.InitBuffer(c, 128 * sizeof(uint32_t));
    LocalTensor<float> src = b.Get<float>();
    LocalTensor<uint32_t> off = c.Get<uint32_t>();
    for (uint32_t k = 0; k < 128; ++k) {
        src.SetValue(k, static_cast<float>(k + 1));
        off.SetValue(k, 4 * ((k * 5) % 100));
    }
    Gather(dst, src, off, uint32_t{16}, uint64_t{40}, 2, 16);
    Store(dst, 256);
}

// Gather's mask-bit form on half: the even lanes of the low 64 and lanes 64 and 127, 2 repeats
// 8 blocks apart; offsets reverse the 256 sources.
void gather_level0_bits() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c, d;
    LocalTensor<float> out = Zeroed(pipe, a, 256);
    pipe.InitBuffer(b, 256 * sizeof(half));
    pipe.InitBuffer(c, 256 * sizeof(uint32_t));
    pipe.InitBuffer(d, 256 * sizeof(half));
    LocalTensor<half> src = b.Get<half>();
    LocalTensor<uint32_t> off = c.Get<uint32_t>();
    LocalTensor<half> dst = d.Get<half>();
    Duplicate<half>(dst, half(0.0f), 256);
    for (uint32_t k = 0; k < 256; ++k) {
        src.SetValue(k, half(static_cast<float>(k)));
        off.SetValue(k, 2 * (255 - k));
    }
    uint64_t mask[2] = {0x5555555555555555ull, 0x8000000000000001ull};
    Gather(dst, src, off, uint32_t{0}, mask, 2, 8);
    Cast(out, dst, RoundMode::CAST_NONE, 256);
    Store(out, 256);
}

void gather_mask_too_large() {  // 65 lanes of float: a repeat has 64
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    LocalTensor<float> dst = Zeroed(pipe, a, 64);
    LocalTensor<float> src = Zeroed(pipe, b, 64);
    pipe.InitBuffer(c, 64 * sizeof(uint32_t));
    LocalTensor<uint32_t> off = c.Get<uint32_t>();
    Duplicate<int32_t>(off.ReinterpretCast<int32_t>(), 0, 64);
    Gather(dst, src, off, uint32_t{0}, uint64_t{65}, 1, 8);
}

void gather_offset_misaligned() {  // a float gathered from byte 2
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    LocalTensor<float> dst = Zeroed(pipe, a, 64);
    LocalTensor<float> src = Zeroed(pipe, b, 64);
    pipe.InitBuffer(c, 64 * sizeof(uint32_t));
    LocalTensor<uint32_t> off = c.Get<uint32_t>();
    Duplicate<int32_t>(off.ReinterpretCast<int32_t>(), 2, 64);
    Gather(dst, src, off, uint32_t{0}, uint64_t{64}, 1, 8);
}

// The int32_t sources of the dequantising conversions: exact cases, ties, saturation and one
// whose product a float would round before the half does (16785409 * 2^-14 = 1024.50006).
constexpr int32_t kDeqSrc[16] = {0,    1,     3,      -3,     5,        2049, 2051, -2051,
                                 4097, 70000, -70000, 131007, 16785409, 7,    -7,   12345};

// out[0..16): Cast int32_t -> half (the round mode ignored) by SetDeqScale(half(0.5));
// out[16..32): CastDequant's count form by 2^-14; out[64..192): its mask-count form, 10 lanes
// of 2 repeats, dst repeats 5 blocks (80 halves) apart, src 8 blocks, by 0.5 again.
void deq_cast() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c, d;
    LocalTensor<float> out = Zeroed(pipe, a, 256);
    pipe.InitBuffer(b, 128 * sizeof(int32_t));
    pipe.InitBuffer(c, 256 * sizeof(half));
    pipe.InitBuffer(d, 256 * sizeof(half));
    LocalTensor<int32_t> src = b.Get<int32_t>();
    LocalTensor<half> h = c.Get<half>();
    LocalTensor<half> h2 = d.Get<half>();
    for (uint32_t k = 0; k < 128; ++k)
        src.SetValue(k, kDeqSrc[k % 16] + static_cast<int32_t>(k / 16));
    Duplicate<half>(h2, half(0.0f), 256);
    SetDeqScale(half(0.5f));
    Cast(h, src, RoundMode::CAST_FLOOR, 16);
    SetDeqScale(half(1.0f / 16384.0f));
    CastDequant<half, int32_t>(h[16], src, 16);
    SetDeqScale(half(0.5f));
    CastDequant<half, int32_t>(h2, src, 10, 2, {1, 1, 5, 8});
    PipeBarrier<PIPE_V>();
    Cast(out, h, RoundMode::CAST_NONE, 32);
    Cast(out[64], h2, RoundMode::CAST_NONE, 128);
    Store(out, 256);
}

void deq_unset() {  // Cast int32_t -> half with no SetDeqScale in this launch
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 64 * sizeof(int32_t));
    pipe.InitBuffer(b, 64 * sizeof(half));
    LocalTensor<int32_t> src = a.Get<int32_t>();
    Duplicate<int32_t>(src, 1, 64);
    Cast(b.Get<half>(), src, RoundMode::CAST_NONE, 64);
}

// SetDeqScale's vector form: the 16 packed words written into vdeq, read back as out[0..32)
// (float bit patterns); then a CastDequant int32_t -> half, which reads a half scale, is refused.
void deq_vector_words() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    pipe.InitBuffer(a, 16 * sizeof(uint64_t));
    LocalTensor<uint64_t> vdeq = a.Get<uint64_t>();
    float scale[16];
    int16_t offset[16];
    bool sign[16];
    for (int i = 0; i < 16; ++i) {
        scale[i] = 0.25f * static_cast<float>(i + 1);
        offset[i] = static_cast<int16_t>(i - 8);
        sign[i] = i % 2 == 0;
    }
    SetDeqScale(vdeq, VdeqInfo(scale, offset, sign));
    PipeBarrier<PIPE_ALL>();
    DataCopy(Out(), vdeq.ReinterpretCast<float>(), 32);
    PipeBarrier<PIPE_ALL>();
    pipe.InitBuffer(b, 64 * sizeof(int32_t));
    pipe.InitBuffer(c, 64 * sizeof(half));
    LocalTensor<int32_t> src = b.Get<int32_t>();
    Duplicate<int32_t>(src, 1, 64);
    CastDequant<half, int32_t>(c.Get<half>(), src, 64);
}

// The scalar Cast forms, into out[0..8).
void scalar_cast() {
    GlobalTensor<float> out = Out();
    out(0) = Cast(Cast(3.14159f));                                            // bf16 RINT: 3.140625
    out(1) = float(Cast<float, int32_t, RoundMode::CAST_ROUND>(2.5f));        // 3
    out(2) = float(Cast<float, int32_t, RoundMode::CAST_RINT>(2.5f));         // 2
    out(3) = float(Cast<float, int32_t, RoundMode::CAST_FLOOR>(-2.5f));       // -3
    out(4) = float(Cast<float, int32_t, RoundMode::CAST_CEIL>(-2.5f));        // -2
    out(5) = float(Cast<float, half, RoundMode::CAST_ODD>(1.000244140625f));  // 1 + 2^-10
    out(6) = float(Cast<float, half, RoundMode::CAST_ODD>(1.0f));             // exact: 1
}

// SyncAll's software form on the one core of the launch, then with a 16-byte gmWorkspace
// (the page asks GetBlockNum() * 32 bytes).
void soft_sync_all() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 32);
    LocalTensor<int32_t> ub = a.Get<int32_t>();
    GlobalTensor<int32_t> ws;
    ws.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(g_out), 8);
    SyncAll(ws, ub, 1);
    Out()(100) = 1.0f;
    GlobalTensor<int32_t> small;
    small.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(g_out), 4);
    SyncAll(small, ub);
}

// BilinearInterpolation on the page's example: src0 = 1..512, src0Offset = 0, 32, ..., 992 (one
// block each), src1 = 2..33, hRepeat = vRepeat = 2, vROffset = 128. out[0..256): mask count 128,
// repeatMode false; out[256..512): repeatMode true, the low 64 lanes only (dst preset to -1).
void bilinear() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c, d, e, f;
    LocalTensor<float> out = Zeroed(pipe, a, 512);
    pipe.InitBuffer(b, 512 * sizeof(half));
    pipe.InitBuffer(c, 32 * sizeof(uint32_t));
    pipe.InitBuffer(d, 32 * sizeof(half));
    pipe.InitBuffer(e, 512 * 32 + 32 * 32);
    pipe.InitBuffer(f, 512 * sizeof(half));
    LocalTensor<half> src0 = b.Get<half>();
    LocalTensor<uint32_t> off = c.Get<uint32_t>();
    LocalTensor<half> src1 = d.Get<half>();
    LocalTensor<uint8_t> tmp = e.Get<uint8_t>();
    LocalTensor<half> dst = f.Get<half>();
    for (uint32_t k = 0; k < 512; ++k)
        src0.SetValue(k, half(static_cast<float>(k + 1)));
    for (uint32_t k = 0; k < 32; ++k) {
        off.SetValue(k, 32 * k);
        src1.SetValue(k, half(static_cast<float>(k + 2)));
    }
    Duplicate<half>(dst, half(-1.0f), 512);
    BilinearInterpolation(dst, src0, off, src1, uint64_t{128}, 2, false, 1, 128, 2, tmp);
    uint64_t mask[2] = {~uint64_t{0}, 0};
    BilinearInterpolation(dst[256], src0, off, src1, mask, 2, true, 1, 128, 2, tmp);
    PipeBarrier<PIPE_V>();
    Cast(out, dst, RoundMode::CAST_NONE, 512);
    Store(out, 512);
}

// InitOutput after InitBuffer (which Fill refuses): out[8..24) = 2.5, the rest untouched.
void init_output() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    Zeroed(pipe, a, 64);
    InitOutput(Out()[8], 16, 2.5f);
}

const std::map<std::string, std::function<void()>>& Cases() {
    static const std::map<std::string, std::function<void()>> cases = {
        {"dup_mask_bits", dup_mask_bits},
        {"dup_mask_count_strides", dup_mask_count_strides},
        {"add_level0", add_level0},
        {"counter_mode", counter_mode},
        {"whole_reduce_sum", whole_reduce_sum},
        {"block_reduce_sum", block_reduce_sum},
        {"activations", activations},
        {"atomic_max_min", atomic_max_min},
        {"flags_ordered", flags_ordered},
        {"flags_missing", flags_missing},
        {"phy_addr_and_queues", phy_addr_and_queues},
        {"assert_fails", assert_fails},
        {"mask_count_too_large", mask_count_too_large},
        {"mask_left_set", mask_left_set},
        {"mask_fresh", mask_fresh},
        {"gather_level0_count", gather_level0_count},
        {"gather_level0_bits", gather_level0_bits},
        {"gather_mask_too_large", gather_mask_too_large},
        {"gather_offset_misaligned", gather_offset_misaligned},
        {"deq_cast", deq_cast},
        {"deq_unset", deq_unset},
        {"deq_vector_words", deq_vector_words},
        {"scalar_cast", scalar_cast},
        {"soft_sync_all", soft_sync_all},
        {"bilinear", bilinear},
        {"init_output", init_output},
    };
    return cases;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t
recsdk_sim_api_case(const char* name, float* out, int32_t out_elems, RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    auto it = Cases().find(name);
    if (it == Cases().end() || out_elems < static_cast<int32_t>(kOut)) {
        std::snprintf(report->message, sizeof(report->message), "no case %s", name);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    g_out = out;
    recsdk::sim::KernelRun run;
    run.kernel = name;
    run.soc = recsdk::sim::FindSoc("Ascend910B1");
    run.block_dim = 1;
    run.regions = {recsdk::sim::GmRegion{reinterpret_cast<const uint8_t*>(out),
                                         kOut * sizeof(float), true, "output out"}};
    return recsdk::sim::RunKernel(run, it->second, report);
}
