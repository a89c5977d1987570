// Cast's A2 conversion table and rounding modes, count and level-0 forms, on the emulation
// (tests/kernels/samples/test_vector_cast.py): each case reads the 512 floats of `in` and writes
// its results to the front of `out` (bytes), which the test checks against a reference worked in
// Python with exact fractions.
//
// The library's entry is vector_sample.h's recsdk_sim_vector_case.
#include "vector_sample.h"

using namespace AscendC;
using namespace vector_sample;

namespace {

constexpr RoundMode kModes[6] = {RoundMode::CAST_NONE,  RoundMode::CAST_RINT,
                                 RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL,
                                 RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC};

// float -> int32_t: in[0, 64) scaled by 1e9 in [64, 128) (saturating) in each of the five
// rounding modes: 5 x 128 int32 to out[0, 2560).
void float_to_int32() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 128);
    Muls(a[64], a, 1e9f, 64);
    pipe.InitBuffer(bd, 5 * 128 * sizeof(int32_t));
    LocalTensor<int32_t> d = bd.Get<int32_t>();
    for (int m = 1; m < 6; ++m)
        Cast(d[(m - 1) * 128], a, kModes[m], 128);
    Store(d, 2560);
}

// float -> half: in[0, 128) + 1/3 (inexact in half), and in[128, 256) * 30000 (beyond 65504
// for |in| > 2.18), in the six modes and CAST_ODD: 7 x 256 half to out[0, 3584).
void float_to_half() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256);
    Adds(a, a, 1.0f / 3.0f, 128);
    Muls(a[128], a[128], 30000.0f, 128);
    pipe.InitBuffer(bd, 7 * 256 * sizeof(half));
    LocalTensor<half> d = bd.Get<half>();
    for (int m = 0; m < 6; ++m)
        Cast(d[m * 256], a, kModes[m], 256);
    Cast(d[6 * 256], a, RoundMode::CAST_ODD, 256);
    Store(d, 3584);
}

// int32_t -> float around 2^24 (odd integers inexact): 16777200 + i for i in [0, 64) and their
// negations, in the six modes: 6 x 128 float to out[0, 3072).
void int32_to_float() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bi, bd;
    pipe.InitBuffer(bi, 128 * sizeof(int32_t));
    LocalTensor<int32_t> x = bi.Get<int32_t>();
    CreateVecIndex(x, int32_t(16777200), 64);
    Muls(x[64], x, int32_t(-1), 64);
    pipe.InitBuffer(bd, 6 * 128 * sizeof(float));
    LocalTensor<float> d = bd.Get<float>();
    for (int m = 0; m < 6; ++m)
        Cast(d[m * 128], x, kModes[m], 128);
    Store(d, 3072);
}

// float -> float (rounding to integral values) and float -> bfloat16_t (in + 1/3) in the five
// modes: 5 x 64 float to out[0, 1280), 5 x 64 bfloat16_t to out[1280, 1920).
void float_to_float_bf16() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bd, be;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    LocalTensor<float> b = Load(pipe, bb, 0, 64, 64);
    Adds(b, b, 1.0f / 3.0f, 64);
    pipe.InitBuffer(bd, 5 * 64 * sizeof(float));
    LocalTensor<float> d = bd.Get<float>();
    pipe.InitBuffer(be, 5 * 64 * sizeof(bfloat16_t));
    LocalTensor<bfloat16_t> e = be.Get<bfloat16_t>();
    for (int m = 1; m < 6; ++m) {
        Cast(d[(m - 1) * 64], a, kModes[m], 64);
        Cast(e[(m - 1) * 64], b, kModes[m], 64);
    }
    Store(d, 1280);
    Store(e, 640, 1280);
}

// half -> int8_t with CAST_NONE (rint, saturating) of in * 50: 256 int8 to out[0, 256); int8 ->
// half back: 256 half to out[256, 768).
void half_int8() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bh, bd, be;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256);
    Muls(a, a, 50.0f, 256);
    pipe.InitBuffer(bh, 256 * sizeof(half));
    LocalTensor<half> h = bh.Get<half>();
    Cast(h, a, RoundMode::CAST_NONE, 256);
    pipe.InitBuffer(bd, 256);
    LocalTensor<int8_t> d = bd.Get<int8_t>();
    Cast(d, h, RoundMode::CAST_NONE, 256);
    pipe.InitBuffer(be, 256 * sizeof(half));
    LocalTensor<half> e = be.Get<half>();
    Cast(e, d, RoundMode::CAST_NONE, 256);
    Store(d, 256);
    Store(e, 512, 256);
}

// Level 0, half -> int32_t (64 lanes a repeat): mask count 40, 2 repeats, dstRepStride 8,
// srcRepStride 8 (every other 64-half stretch of src), CAST_FLOOR; then mask bits (lanes 0-7 of
// 16) with dstRepStride 16. dst starts as -7: 2 x 256 int32 to out[0, 2048).
void level0_half_to_int32() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bh, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256);
    Adds(a, a, 0.125f, 256);
    pipe.InitBuffer(bh, 256 * sizeof(half));
    LocalTensor<half> h = bh.Get<half>();
    Cast(h, a, RoundMode::CAST_NONE, 256);
    pipe.InitBuffer(bd, 512 * sizeof(int32_t));
    LocalTensor<int32_t> d = bd.Get<int32_t>();
    Duplicate<int32_t>(d, -7, 512);
    Cast(d, h, RoundMode::CAST_FLOOR, uint64_t(40), 2, UnaryRepeatParams(1, 1, 8, 8));
    uint64_t mask[2] = {0x00FF00FF00FF00FFull, 0};
    Cast(d[256], h, RoundMode::CAST_CEIL, mask, 2, UnaryRepeatParams(1, 1, 16, 4));
    Store(d, 2048);
}

void refused_float_to_uint8() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    pipe.InitBuffer(bd, 64);
    LocalTensor<uint8_t> d = bd.Get<uint8_t>();
    Cast(d, a, RoundMode::CAST_RINT, 64);
}

void refused_half_to_float_rint() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd;
    pipe.InitBuffer(ba, 128);
    pipe.InitBuffer(bd, 256);
    LocalTensor<half> h = ba.Get<half>();
    LocalTensor<float> d = bd.Get<float>();
    Cast(d, h, RoundMode::CAST_RINT, 64);
}

void refused_int32_to_half() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd;
    pipe.InitBuffer(ba, 256);
    pipe.InitBuffer(bd, 128);
    LocalTensor<int32_t> x = ba.Get<int32_t>();
    LocalTensor<half> d = bd.Get<half>();
    Cast(d, x, RoundMode::CAST_NONE, 64);
}

}  // namespace

const CaseTable& vector_sample::Cases() {
    static const CaseTable cases = {
        {"float_to_int32", float_to_int32},
        {"float_to_half", float_to_half},
        {"int32_to_float", int32_to_float},
        {"float_to_float_bf16", float_to_float_bf16},
        {"half_int8", half_int8},
        {"level0_half_to_int32", level0_half_to_int32},
        {"refused_float_to_uint8", refused_float_to_uint8},
        {"refused_half_to_float_rint", refused_half_to_float_rint},
        {"refused_int32_to_half", refused_int32_to_half},
    };
    return cases;
}
