// Kernels for the data-layout vector instructions and the names added with them
// (tests/kernels/test_sim_vector_layout.py): Gatherb, Transpose (16 x 16 and NCHW <-> NHWC),
// TransDataTo5HD in its three forms and widths, RepeatReduceSum, GetGatherMaskRemainCount and the
// fused casts MulCast / AddReluCast / SubReluCast. Each case reads raw bytes from `in` and writes
// bytes to the front of `out`; the test works the expected bytes out with numpy.
//
// recsdk_sim_vector_case(name, in, in_bytes, out, out_bytes, report) runs one case on one core
// (the entry kernel_testlib.vector_case calls).
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "recsdk_sim/launch.h"

using namespace AscendC;

namespace {

uint8_t* g_in = nullptr;
uint32_t g_in_bytes = 0;
uint8_t* g_out = nullptr;

template <typename T>
GlobalTensor<T> Gm(uint8_t* base, uint32_t bytes) {
    GlobalTensor<T> gt;
    gt.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(base), bytes / sizeof(T));
    return gt;
}

// in[at, at + bytes) into a fresh UB tensor of `cap` bytes.
template <typename T>
LocalTensor<T> Load(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, uint32_t at, uint32_t bytes,
                    uint32_t cap) {
    pipe.InitBuffer(buf, cap);
    LocalTensor<T> t = buf.Get<T>();
    DataCopy(t, Gm<T>(g_in + at, bytes), bytes / sizeof(T));
    PipeBarrier<PIPE_ALL>();
    return t;
}

// A fresh UB tensor of `bytes` bytes, every byte 0xEE (a value no case writes).
template <typename T>
LocalTensor<T> Sentinel(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, uint32_t bytes) {
    pipe.InitBuffer(buf, bytes);
    LocalTensor<uint16_t> t = buf.Get<uint16_t>();
    Duplicate<uint16_t>(t, uint16_t(0xEEEE), static_cast<int32_t>(bytes / 2));
    PipeBarrier<PIPE_ALL>();
    return buf.Get<T>();
}

template <typename T>
void Store(const LocalTensor<T>& t, uint32_t bytes, uint32_t at = 0) {
    PipeBarrier<PIPE_ALL>();
    DataCopy(Gm<T>(g_out + at, bytes), t, bytes / sizeof(T));
    PipeBarrier<PIPE_ALL>();
}

// ---- Gatherb: in = 32 blocks of uint32_t (1024 bytes), then 16 byte offsets -------------------

// 2 repeats of 8 blocks, dst blocks 2 apart and repeats 16 blocks apart.
void gatherb_strides() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bo, bd;
    LocalTensor<uint32_t> src = Load<uint32_t>(pipe, bs, 0, 1024, 1024);
    LocalTensor<uint32_t> off = Load<uint32_t>(pipe, bo, 1024, 64, 64);
    LocalTensor<uint32_t> dst = Sentinel<uint32_t>(pipe, bd, 1024);
    GatherRepeatParams params(2, 16);
    Gatherb<uint32_t>(dst, src, off, 2, params);
    Store(dst, 1024);
}

// uint16_t, one repeat, dstBlkStride 0 (counted as 1).
void gatherb_blk0() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bo, bd;
    LocalTensor<uint16_t> src = Load<uint16_t>(pipe, bs, 0, 1024, 1024);
    LocalTensor<uint32_t> off = Load<uint32_t>(pipe, bo, 1024, 32, 32);
    LocalTensor<uint16_t> dst = Sentinel<uint16_t>(pipe, bd, 256);
    GatherRepeatParams params(0, 8);
    Gatherb<uint16_t>(dst, src, off, 1, params);
    Store(dst, 256);
}

// The gathered blocks copied out with no barrier between: the copy races the vector write.
void gatherb_unsynced() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bo, bd;
    LocalTensor<uint32_t> src = Load<uint32_t>(pipe, bs, 0, 1024, 1024);
    LocalTensor<uint32_t> off = Load<uint32_t>(pipe, bo, 1024, 32, 32);
    pipe.InitBuffer(bd, 256);
    LocalTensor<uint32_t> dst = bd.Get<uint32_t>();
    Gatherb<uint32_t>(dst, src, off, 1, GatherRepeatParams(1, 8));
    DataCopy(Gm<uint32_t>(g_out, 256), dst, 64);
}

// ---- Transpose ----------------------------------------------------------------------------------

// in = 256 half: the 16 x 16 transpose into another tensor, then in place.
void transpose16() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    LocalTensor<half> src = Load<half>(pipe, bs, 0, 512, 512);
    LocalTensor<half> dst = Sentinel<half>(pipe, bd, 512);
    Transpose(dst, src);
    Store(dst, 512);
    Transpose(src, src);
    Store(src, 512, 512);
}

// in = float [2, 3, 2, 8] NCHW: to NHWC (out[0, 384)), and that back to NCHW (out[384, 768)).
void transpose_nchw_float() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd, bb, bt;
    LocalTensor<float> src = Load<float>(pipe, bs, 0, 384, 384);
    LocalTensor<float> dst = Sentinel<float>(pipe, bd, 384);
    LocalTensor<float> back = Sentinel<float>(pipe, bb, 384);
    pipe.InitBuffer(bt, (2 * 3 + 1) * 16 * 8 * 4);
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    Transpose(dst, src, tmp, TransposeParamsExt(2, 3, 2, 8, TransposeType::TRANSPOSE_NCHW2NHWC));
    Transpose(back, dst, tmp, TransposeParamsExt(2, 3, 2, 8, TransposeType::TRANSPOSE_NHWC2NCHW));
    Store(dst, 384);
    Store(back, 384, 384);
}

// in = int8_t [1, 5, 4, 8] NCHW to NHWC (h0 = 32 for 8-bit types in the buffer's size).
void transpose_nchw_int8() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd, bt;
    LocalTensor<int8_t> src = Load<int8_t>(pipe, bs, 0, 160, 160);
    LocalTensor<int8_t> dst = Sentinel<int8_t>(pipe, bd, 160);
    pipe.InitBuffer(bt, (5 + 2) * 32 * 32);
    Transpose(dst, src, bt.Get<uint8_t>(),
              TransposeParamsExt(1, 5, 4, 8, TransposeType::TRANSPOSE_NCHW2NHWC));
    Store(dst, 160);
}

// The same float transpose with a buffer one block short of (cSize + 2) * 16 * 8 * 4 bytes.
void transpose_tmp_too_small() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd, bt;
    LocalTensor<float> src = Load<float>(pipe, bs, 0, 384, 384);
    LocalTensor<float> dst = Sentinel<float>(pipe, bd, 384);
    pipe.InitBuffer(bt, (3 + 2) * 16 * 8 * 4 - 32);
    Transpose(dst, src, bt.Get<uint8_t>(),
              TransposeParamsExt(2, 3, 2, 8, TransposeType::TRANSPOSE_NCHW2NHWC));
}

// ---- TransDataTo5HD: NCHW -> NC1HWC0 as the page's recipe lays out the lists ------------------

// half, C = 16 planes of H * W = 32: srcList = the planes, dstList = consecutive blocks, 2
// repeats (src 1 block on, dst 16 blocks on). LocalTensor lists.
void trans5hd_b16() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    LocalTensor<half> src = Load<half>(pipe, bs, 0, 1024, 1024);
    LocalTensor<half> dst = Sentinel<half>(pipe, bd, 1024);
    LocalTensor<half> dstList[16], srcList[16];
    for (int i = 0; i < 16; ++i) {
        dstList[i] = dst[16 * i];
        srcList[i] = src[32 * i];
    }
    TransDataTo5HD<half>(dstList, srcList, TransDataTo5HDParams(false, false, 2, 16, 1));
    Store(dst, 1024);
}

// The same with repeatTimes = 1: the one repeat starts a stride on (hw 16..31 only).
void trans5hd_b16_one_repeat() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    LocalTensor<half> src = Load<half>(pipe, bs, 0, 1024, 1024);
    LocalTensor<half> dst = Sentinel<half>(pipe, bd, 1024);
    LocalTensor<half> dstList[16], srcList[16];
    for (int i = 0; i < 16; ++i) {
        dstList[i] = dst[16 * i];
        srcList[i] = src[32 * i];
    }
    TransDataTo5HD<half>(dstList, srcList, TransDataTo5HDParams(false, false, 1, 16, 1));
    Store(dst, 1024);
}

// float, C = 16 planes of H * W = 16, 2 repeats; uint64_t address lists from GetPhyAddr.
void trans5hd_b32() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    LocalTensor<float> src = Load<float>(pipe, bs, 0, 1024, 1024);
    LocalTensor<float> dst = Sentinel<float>(pipe, bd, 1024);
    uint64_t dstList[16], srcList[16];
    for (int i = 0; i < 16; ++i) {
        dstList[i] = static_cast<uint64_t>(dst[8 * i].GetPhyAddr());
        srcList[i] = static_cast<uint64_t>(src[16 * i].GetPhyAddr());
    }
    TransDataTo5HD<float>(dstList, srcList, TransDataTo5HDParams(false, false, 2, 16, 1));
    Store(dst, 1024);
}

// uint8_t, C = 32 planes of H * W = 32 into NC1HWC0 with C0 = 32: four calls (channels 0-15 into
// the low halves, 16-31 into the high halves; hw 0-15 and 16-31), the addresses in uint64_t
// tensors written by scalar code.
void trans5hd_b8() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd, ba, bb;
    LocalTensor<uint8_t> src = Load<uint8_t>(pipe, bs, 0, 1024, 1024);
    LocalTensor<uint8_t> dst = Sentinel<uint8_t>(pipe, bd, 1024);
    pipe.InitBuffer(ba, 16 * sizeof(uint64_t));
    pipe.InitBuffer(bb, 16 * sizeof(uint64_t));
    LocalTensor<uint64_t> dstAddr = ba.Get<uint64_t>(), srcAddr = bb.Get<uint64_t>();
    for (int hi_c = 0; hi_c < 2; ++hi_c) {
        for (int hi_hw = 0; hi_hw < 2; ++hi_hw) {
            for (int i = 0; i < 16; ++i) {
                dstAddr.SetValue(i, static_cast<uint64_t>(dst[32 * (16 * hi_hw + i)].GetPhyAddr()));
                srcAddr.SetValue(i, static_cast<uint64_t>(src[32 * (16 * hi_c + i)].GetPhyAddr()));
            }
            TransDataTo5HD<uint8_t>(dstAddr, srcAddr,
                                    TransDataTo5HDParams(hi_c == 1, hi_hw == 1, 1, 0, 0));
        }
    }
    Store(dst, 1024);
}

// An address list entry outside every buffer of the pipe.
void trans5hd_bad_address() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs;
    LocalTensor<float> src = Load<float>(pipe, bs, 0, 1024, 1024);
    uint64_t dstList[16], srcList[16];
    for (int i = 0; i < 16; ++i) {
        dstList[i] = static_cast<uint64_t>(src[8 * i].GetPhyAddr());
        srcList[i] = static_cast<uint64_t>(src[16 * i].GetPhyAddr());
    }
    dstList[5] = 4096 * 32;
    TransDataTo5HD<float>(dstList, srcList, TransDataTo5HDParams(false, false, 1, 0, 0));
}

// ---- RepeatReduceSum, GetGatherMaskRemainCount --------------------------------------------------

// in = 256 floats: 2 repeats of 64 lanes (dst 1 apart), then 2 repeats of the first 20 lanes,
// source blocks 2 apart and repeats 16 blocks apart, dst 2 apart (dstBlkStride unused).
void repeat_reduce_sum() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    LocalTensor<float> src = Load<float>(pipe, bs, 0, 1024, 1024);
    LocalTensor<float> dst = Sentinel<float>(pipe, bd, 64);
    RepeatReduceSum<float>(dst, src, 2, 64, 0, 1, 1, 8);
    RepeatReduceSum<float>(dst[8], src, 2, 20, 5, 2, 2, 16);
    Store(dst, 64);
}

// GatherMask with the odd-lane pattern over 2 repeats of 64 floats, then the register's count.
void gather_mask_remain() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd;
    LocalTensor<float> src = Load<float>(pipe, bs, 0, 512, 512);
    LocalTensor<float> dst = Sentinel<float>(pipe, bd, 512);
    uint64_t kept = 0;
    GatherMask(dst, src, uint8_t(2), false, 0, GatherMaskParams(1, 2, 8, 0), kept);
    const int64_t remain = GetGatherMaskRemainCount();
    dst.SetValue(100, static_cast<float>(remain));
    dst.SetValue(101, static_cast<float>(kept));
    Store(dst, 512);
}

void gather_mask_remain_unset() {
    GetGatherMaskRemainCount();
}

// ---- MulCast / AddReluCast / SubReluCast: in = a then b, 512 bytes each ------------------------

// half a * b -> int8_t (out[0, 256)) and uint8_t (out[256, 512)), count forms.
void mul_cast() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bd, bu;
    LocalTensor<half> a = Load<half>(pipe, ba, 0, 512, 512),
                      b = Load<half>(pipe, bb, 512, 512, 512);
    LocalTensor<int8_t> d = Sentinel<int8_t>(pipe, bd, 256);
    LocalTensor<uint8_t> u = Sentinel<uint8_t>(pipe, bu, 256);
    MulCast(d, a, b, 256);
    MulCast(u, a, b, 256);
    Store(d, 256);
    Store(u, 256, 256);
}

// half relu(a + b) -> int8_t, level 0: mask count 100 over 2 repeats, b's repeats 16 blocks
// apart (b[0..128) and b[256..384)), dst repeats 8 blocks apart (out[0..100), out[256..356)).
void add_relu_cast_level0() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bd;
    LocalTensor<half> a = Load<half>(pipe, ba, 0, 512, 512);
    LocalTensor<half> b = Load<half>(pipe, bb, 512, 512, 1024);
    Duplicate<half>(b[256], half(1.5f), 256);
    LocalTensor<int8_t> d = Sentinel<int8_t>(pipe, bd, 512);
    AddReluCast(d, a, b, uint64_t(100), 2, BinaryRepeatParams(1, 1, 1, 8, 8, 16));
    Store(d, 512);
}

// float relu(a - b) -> half with the mask bits of lanes 0-31 and 40, 2 repeats (level 0), then
// int16_t relu(c + e) -> int8_t (count form) on the 128 + 128 int16_t after them.
void sub_relu_cast_and_int16() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bd, bi, bj, be;
    LocalTensor<float> a = Load<float>(pipe, ba, 0, 512, 512),
                       b = Load<float>(pipe, bb, 512, 512, 512);
    LocalTensor<half> d = Sentinel<half>(pipe, bd, 512);
    uint64_t mask[2] = {0xFFFFFFFFull | (1ull << 40), 0};
    SubReluCast(d, a, b, mask, 2, BinaryRepeatParams(1, 1, 1, 4, 8, 8));
    Store(d, 512);
    LocalTensor<int16_t> ai = Load<int16_t>(pipe, bi, 1024, 256, 256);
    LocalTensor<int16_t> bj16 = Load<int16_t>(pipe, bj, 1280, 256, 256);
    LocalTensor<int8_t> e = Sentinel<int8_t>(pipe, be, 128);
    AddReluCast(e, ai, bj16, 128);
    Store(e, 128, 512);
}

const std::map<std::string, std::function<void()>>& Cases() {
    static const std::map<std::string, std::function<void()>> cases = {
        {"gatherb_strides", gatherb_strides},
        {"gatherb_blk0", gatherb_blk0},
        {"gatherb_unsynced", gatherb_unsynced},
        {"transpose16", transpose16},
        {"transpose_nchw_float", transpose_nchw_float},
        {"transpose_nchw_int8", transpose_nchw_int8},
        {"transpose_tmp_too_small", transpose_tmp_too_small},
        {"trans5hd_b16", trans5hd_b16},
        {"trans5hd_b16_one_repeat", trans5hd_b16_one_repeat},
        {"trans5hd_b32", trans5hd_b32},
        {"trans5hd_b8", trans5hd_b8},
        {"trans5hd_bad_address", trans5hd_bad_address},
        {"repeat_reduce_sum", repeat_reduce_sum},
        {"gather_mask_remain", gather_mask_remain},
        {"gather_mask_remain_unset", gather_mask_remain_unset},
        {"mul_cast", mul_cast},
        {"add_relu_cast_level0", add_relu_cast_level0},
        {"sub_relu_cast_and_int16", sub_relu_cast_and_int16},
    };
    return cases;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t
recsdk_sim_vector_case(const char* name, uint8_t* in, uint32_t in_bytes, uint8_t* out,
                       uint32_t out_bytes, RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    auto it = Cases().find(name);
    if (it == Cases().end()) {
        std::snprintf(report->message, sizeof(report->message), "no case %s", name);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    g_in = in;
    g_in_bytes = in_bytes;
    g_out = out;
    recsdk::sim::KernelRun run;
    run.kernel = name;
    run.soc = recsdk::sim::FindSoc("Ascend910B1");
    run.block_dim = 1;
    run.regions = {
        recsdk::sim::GmRegion{in, in_bytes, false, "input in"},
        recsdk::sim::GmRegion{out, out_bytes, true, "output out"},
    };
    return recsdk::sim::RunKernel(run, it->second, report);
}
