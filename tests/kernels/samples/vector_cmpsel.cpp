// Compare / Compares / CompareScalar, Select and the CmpMask register on the emulation
// (tests/kernels/samples/test_vector_cmpsel.py): each case reads the 512 floats of `in` (a in
// [0, 256), b in [256, 512)) and writes its results to the front of `out` (bytes), which the test
// checks against numpy.
//
// The library's entry is vector_sample.h's recsdk_sim_vector_case.
#include "vector_sample.h"

using namespace AscendC;
using namespace vector_sample;

namespace {

// The six modes of the count form on float: 256 elements -> 32 bytes each; then a count of 300
// (one whole repeat beyond 256 is missing: only 256 compared) into a 64-byte tensor.
void cmp_count_float() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 320), b = Load(pipe, bb, 256, 256, 320);
    LocalTensor<uint8_t> d = Filled<uint8_t>(pipe, bd, 256, uint8_t(0xAA));
    const CMPMODE modes[6] = {CMPMODE::LT, CMPMODE::GT, CMPMODE::EQ,
                              CMPMODE::LE, CMPMODE::GE, CMPMODE::NE};
    for (int m = 0; m < 6; ++m)
        Compare(d[32 * m], a, b, modes[m], 256);
    Compare(d[192], a, b, CMPMODE::LT, 300);
    Store(d, 256);
}

// Level 0 on half, mask ignored on A2: 2 repeats of 128 lanes; src0 repeats 16 blocks apart
// (elements 0..127 and 256..383), src0 blocks 1 apart, src1 blocks 2 apart within a repeat and
// repeats 8 blocks apart. The bits of repeat 1 follow repeat 0's whatever dstRepStride.
void cmp_level0_half() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, ha, hb, bd;
    LocalTensor<float> fa = Load(pipe, ba, 0, 512, 512), fb = Load(pipe, bb, 256, 256, 512);
    Muls(fb[256], fb, -1.0f, 256);  // b = in[256..512) then its negation
    LocalTensor<half> a = ToHalf(pipe, ha, fa, 512), b = ToHalf(pipe, hb, fb, 512);
    LocalTensor<uint8_t> d = Filled<uint8_t>(pipe, bd, 64, uint8_t(0xAA));
    BinaryRepeatParams rp(1, 1, 2, 1, 16, 8);
    uint64_t mask[2] = {1, 0};
    Compare(d, a, b, CMPMODE::LE, mask, 2, rp);
    Store(d, 64);
}

// Compares (LT against 0.5, mask count form, 4 repeats with the source's repeats 16 blocks
// apart) and CompareScalar in its count form on int32_t (EQ against 1).
void compares_scalar() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bi, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 512, 512);
    pipe.InitBuffer(bi, 512 * sizeof(int32_t));
    LocalTensor<int32_t> ai = bi.Get<int32_t>();
    Cast(ai, a, RoundMode::CAST_FLOOR, 512);
    LocalTensor<uint8_t> d = Filled<uint8_t>(pipe, bd, 96, uint8_t(0xAA));
    UnaryRepeatParams rp(1, 1, 8, 16);
    Compares(d, a, 0.5f, CMPMODE::LT, uint64_t(64), 4, rp);
    CompareScalar(d[32], ai, int32_t(1), CMPMODE::EQ, 512);
    Store(d, 96);
}

void cmp_int32_lt_refused() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bi, bd;
    pipe.InitBuffer(bi, 128 * sizeof(int32_t));
    LocalTensor<int32_t> ai = bi.Get<int32_t>();
    LocalTensor<uint8_t> d = Filled<uint8_t>(pipe, bd, 32, uint8_t(0));
    Compare(d, ai, ai, CMPMODE::LT, 64u);
}

// Compare into the CmpMask register (GT, 64 float lanes), GetCmpMask to out[0, 16), then
// Select's register form over 2 repeats with the mask register's 64 lanes: max(a, b) on the
// first 64 elements, and the same bits choosing between a[64..128) and b[64..128), to out[32...).
void cmp_register_select() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 128, 128), b = Load(pipe, bb, 256, 128, 128);
    LocalTensor<uint8_t> m = Filled<uint8_t>(pipe, bm, 32, uint8_t(0));
    LocalTensor<float> d = Filled<float>(pipe, bd, 128, -100.0f);
    BinaryRepeatParams rp;
    Compare(a, b, CMPMODE::GT, uint64_t(64), rp);
    GetCmpMask(m);
    SetVectorMask<float>(0, ~uint64_t{0});
    Select<float, SELMODE::VSEL_CMPMASK_SPR>(d, a, b, 2, rp);
    ResetMask();
    Store(m, 32);
    Store(d, 512, 32);
}

// SetCmpMask with bits 0b0101... then the register form again (mode 0), one repeat.
void set_cmp_mask_select() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64), b = Load(pipe, bb, 256, 64, 64);
    LocalTensor<uint8_t> m = Filled<uint8_t>(pipe, bm, 32, uint8_t(0x55));
    LocalTensor<float> d = Filled<float>(pipe, bd, 64, -100.0f);
    SetCmpMask(m);
    BinaryRepeatParams rp;
    Select<float, SELMODE::VSEL_CMPMASK_SPR>(d, a, b, 1, rp);
    Store(d, 256);
}

// Mode 2 with a mask array (lanes 0-7, 16-23, ... of each repeat) and strides: selMask from
// Compare GT over 256 elements; repeat r reads a at r * 64, b at r * 128 (src1RepStride 16),
// writes dst at r * 128 (dstRepStride 16), 3 repeats, consuming selMask bits r * 64 on.
void select_mode2_mask_strides() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256), b = Load(pipe, bb, 256, 256, 512);
    Muls(b[256], b, -1.0f, 256);  // b = in[256..512) then its negation
    LocalTensor<uint8_t> m = Filled<uint8_t>(pipe, bm, 32, uint8_t(0));
    LocalTensor<float> d = Filled<float>(pipe, bd, 384, -100.0f);
    Compare(m, a, b, CMPMODE::GT, 256);
    uint64_t mask[2] = {0x00FF00FF00FF00FFull, 0};
    BinaryRepeatParams rp(1, 1, 1, 16, 8, 16);
    Select(d, m, a, b, SELMODE::VSEL_TENSOR_TENSOR_MODE, mask, 3, rp);
    Store(d, 384 * 4);
}

// Mode 1, count form: relu through Compares(a > 0) and Select(a, 0.0f) on the first 200
// elements; dst's other elements keep -100.
void select_mode1_count() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bm, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256);
    LocalTensor<uint8_t> m = Filled<uint8_t>(pipe, bm, 32, uint8_t(0));
    LocalTensor<float> d = Filled<float>(pipe, bd, 256, -100.0f);
    Compares(m, a, 0.0f, CMPMODE::GT, 256);
    Select(d, m, a, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 200u);
    Store(d, 1024);
}

// Mode 0, count form on half: 300 elements, every repeat taking the first 128 bits of selMask
// (Compare LT of a and b over the first 256).
void select_mode0_count_half() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, ha, hb, bm, bd;
    LocalTensor<float> fa = Load(pipe, ba, 0, 256, 512), fb = Load(pipe, bb, 256, 256, 512);
    Adds(fa[256], fa, 0.25f, 256);  // elements 256.. of a: a + 0.25, of b: b
    Adds(fb[256], fb, 0.0f, 256);
    LocalTensor<half> a = ToHalf(pipe, ha, fa, 512), b = ToHalf(pipe, hb, fb, 512);
    LocalTensor<uint8_t> m = Filled<uint8_t>(pipe, bm, 64, uint8_t(0));
    pipe.InitBuffer(bd, 512 * sizeof(half));
    LocalTensor<half> d = bd.Get<half>();
    Duplicate<half>(d, half(-100.0f), 512);
    Compare(m, a, b, CMPMODE::LT, 256);
    Select(d, m, a, b, SELMODE::VSEL_CMPMASK_SPR, 300u);
    Store(m, 32);
    Store(d, 1024, 32);
}

void select_scalar_mode_mismatch() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bm, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    LocalTensor<uint8_t> m = Filled<uint8_t>(pipe, bm, 32, uint8_t(0));
    LocalTensor<float> d = Filled<float>(pipe, bd, 64, 0.0f);
    Select(d, m, a, 1.0f, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64u);
}

// GatherMask: a user pattern (GT bits of a, b in bytes [0, 32), LT bits in [32, 64)) in counter
// mode with 40 lanes over 2 repeats of a, src1RepeatStride 1 (repeat 1 reads the LT bits) to
// out[0, 512); the built-in pattern 2 (odd lanes) in normal mode over 2 repeats to out[512, 1024);
// the two rsvdCnt to out[1024...) as floats.
void gather_mask() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm, b1, b2, bc;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256), b = Load(pipe, bb, 256, 256, 256);
    LocalTensor<uint8_t> m = Filled<uint8_t>(pipe, bm, 64, uint8_t(0));
    LocalTensor<float> d1 = Filled<float>(pipe, b1, 128, -100.0f);
    LocalTensor<float> d2 = Filled<float>(pipe, b2, 128, -100.0f);
    LocalTensor<float> c = Filled<float>(pipe, bc, 8, 0.0f);
    Compare(m, a, b, CMPMODE::GT, 256);
    Compare(m[32], a, b, CMPMODE::LT, 256);
    uint64_t n1 = 0, n2 = 0;
    GatherMask(d1, a, m.ReinterpretCast<uint32_t>(), true, 40, GatherMaskParams(1, 2, 8, 1), n1);
    GatherMask(d2, a, uint8_t(2), false, 0, GatherMaskParams(1, 2, 8, 0), n2);
    PipeBarrier<PIPE_ALL>();
    c.SetValue(0, float(n1));
    c.SetValue(1, float(n2));
    Store(d1, 512);
    Store(d2, 512, 512);
    Store(c, 32, 1024);
}

}  // namespace

const CaseTable& vector_sample::Cases() {
    static const CaseTable cases = {
        {"cmp_count_float", cmp_count_float},
        {"cmp_level0_half", cmp_level0_half},
        {"compares_scalar", compares_scalar},
        {"cmp_int32_lt_refused", cmp_int32_lt_refused},
        {"cmp_register_select", cmp_register_select},
        {"set_cmp_mask_select", set_cmp_mask_select},
        {"select_mode2_mask_strides", select_mode2_mask_strides},
        {"select_mode1_count", select_mode1_count},
        {"select_mode0_count_half", select_mode0_count_half},
        {"select_scalar_mode_mismatch", select_scalar_mode_mismatch},
        {"gather_mask", gather_mask},
    };
    return cases;
}
