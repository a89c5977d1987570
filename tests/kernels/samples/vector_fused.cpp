// AddRelu, SubRelu, FusedMulAdd, MulAddRelu, MulAddDst, Axpy, And, Or, Not, Rsqrt on the
// emulation (tests/kernels/samples/test_vector_fused.py): each case reads the 512 floats of `in`
// and writes its results to the front of `out` (bytes), which the test checks against numpy.
//
// The library's entry is vector_sample.h's recsdk_sim_vector_case.
#include "vector_sample.h"

using namespace AscendC;
using namespace vector_sample;

namespace {

// a = in[0, 256) then its negation, b = in[256, 512). out: AddRelu(a, b) float count form
// [0, 1024); SubRelu on half, level 0, lanes 0-3 of every 16, 2 repeats, src0 repeats 16 blocks
// apart, src1 and dst 8 apart [1024, 1536); AddRelu on int16 (a's and b's bits) [1536, 2560).
void relu_ops() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bd, ha, hb, he, bf;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 512), b = Load(pipe, bb, 256, 256, 256);
    Muls(a[256], a, -1.0f, 256);
    LocalTensor<float> d = Filled<float>(pipe, bd, 256, -100.0f);
    AddRelu(d, a, b, 256);
    LocalTensor<half> x = ToHalf(pipe, ha, a, 512), y = ToHalf(pipe, hb, b, 256);
    pipe.InitBuffer(he, 256 * sizeof(half));
    LocalTensor<half> e = he.Get<half>();
    Duplicate<half>(e, half(-100.0f), 256);
    uint64_t mask[2] = {0x000F000F000F000Full, 0x000F000F000F000Full};
    SubRelu(e, x, y, mask, 2, BinaryRepeatParams(1, 1, 1, 8, 16, 8));
    pipe.InitBuffer(bf, 512 * sizeof(int16_t));
    LocalTensor<int16_t> f = bf.Get<int16_t>();
    AddRelu(f, a.ReinterpretCast<int16_t>(), b.ReinterpretCast<int16_t>(), 512);
    Store(d, 1024);
    Store(e, 512, 1024);
    Store(f, 1024, 1536);
}

// FusedMulAdd (dst = a * dst + b, dst starting as b) float count 256 [0, 1024); MulAddRelu level
// 0, mask count 40, 2 repeats, src1 repeats 16 blocks apart (b = in[256..512) then in[0..)), dst
// starting as a [1024, 1536); MulAddDst float count 64 (dst starting as b) [1536, 1792);
// MulAddDst half -> float count 64 [1792, 2048); Axpy float level 0, mask lanes 32-63, scalar
// 0.5, dst starting as b [2048, 2304); Axpy half -> float count 64, scalar -2 [2304, 2560).
void fma_ops() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, b1, b2, b3, b4, b5, b6, ha, hb;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256), b = Load(pipe, bb, 256, 256, 512);
    DataCopy(b[256], In(), 256);
    PipeBarrier<PIPE_ALL>();
    LocalTensor<float> d1 = Load(pipe, b1, 256, 256, 256);
    FusedMulAdd(d1, a, b, 256);
    LocalTensor<float> d2 = Load(pipe, b2, 0, 128, 128);
    MulAddRelu(d2, a, b, uint64_t(40), 2, BinaryRepeatParams(1, 1, 1, 8, 8, 16));
    LocalTensor<float> d3 = Load(pipe, b3, 256, 64, 64);
    MulAddDst(d3, a, b, 64);
    LocalTensor<float> d4 = Load(pipe, b4, 256, 64, 64);
    LocalTensor<half> x = ToHalf(pipe, ha, a, 64), y = ToHalf(pipe, hb, b, 64);
    MulAddDst(d4, x, y, 64);
    LocalTensor<float> d5 = Load(pipe, b5, 256, 64, 64);
    uint64_t mask[2] = {0xFFFFFFFF00000000ull, 0};
    Axpy(d5, a, 0.5f, mask, 1, UnaryRepeatParams());
    LocalTensor<float> d6 = Load(pipe, b6, 256, 64, 64);
    Axpy(d6, x, half(-2.0f), 64);
    Store(d1, 1024);
    Store(d2, 512, 1024);
    Store(d3, 256, 1536);
    Store(d4, 256, 1792);
    Store(d5, 256, 2048);
    Store(d6, 256, 2304);
}

// On int16 views of in's bits: And, Or count 256 [0, 512), [512, 1024); Not level 0 with a mask
// count of 100 over 2 repeats [1024, 1536) (dst starting as 0x5555). Rsqrt of |a| + 0.25: float
// count 256 [1536, 2560), half level 0 with mask bits (even lanes), 2 repeats [2560, 3072).
void logic_rsqrt() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, b1, b2, b3, b4, ha, b5;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256), b = Load(pipe, bb, 256, 256, 256);
    LocalTensor<int16_t> p = a.ReinterpretCast<int16_t>(), q = b.ReinterpretCast<int16_t>();
    pipe.InitBuffer(b1, 512);
    pipe.InitBuffer(b2, 512);
    LocalTensor<int16_t> d1 = b1.Get<int16_t>(), d2 = b2.Get<int16_t>();
    And(d1, p, q, 256);
    Or(d2, p, q, 256);
    LocalTensor<int16_t> d3 = Filled<int16_t>(pipe, b3, 256, int16_t(0x5555));
    Not(d3, p, uint64_t(100), 2, UnaryRepeatParams());
    LocalTensor<float> d4 = Filled<float>(pipe, b4, 256, 0.0f);
    Abs(d4, a, 256);
    Adds(d4, d4, 0.25f, 256);
    LocalTensor<half> h = ToHalf(pipe, ha, d4, 256);
    Rsqrt(d4, d4, 256);
    pipe.InitBuffer(b5, 256 * sizeof(half));
    LocalTensor<half> d5 = b5.Get<half>();
    Duplicate<half>(d5, half(-100.0f), 256);
    uint64_t mask[2] = {0x5555555555555555ull, 0x5555555555555555ull};
    Rsqrt(d5, h, mask, 2, UnaryRepeatParams());
    Store(d1, 512);
    Store(d2, 512, 512);
    Store(d3, 512, 1024);
    Store(d4, 1024, 1536);
    Store(d5, 512, 2560);
}

void and_float_refused() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    And(a, a, a, 64);
}

void axpy_mixed_level0_refused() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, ha;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    LocalTensor<half> x = ToHalf(pipe, ha, a, 64);
    Axpy(a, x, half(1.0f), uint64_t(64), 1, UnaryRepeatParams());
}

// Brcb: in[0, 16) broadcast to blocks, float, 2 repeats with the default strides [0, 512); half
// (in[0, 16) as half), 2 repeats with dstBlkStride 2, dstRepStride 16, over a dst of -100
// [512, 1536).
void brcb() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd, ha, he;
    LocalTensor<float> a = Load(pipe, ba, 0, 16, 16);
    LocalTensor<float> d = Filled<float>(pipe, bd, 128, 0.0f);
    Brcb(d, a, 2, BrcbRepeatParams(1, 8));
    LocalTensor<half> h = ToHalf(pipe, ha, a, 16);
    pipe.InitBuffer(he, 512 * sizeof(half));
    LocalTensor<half> e = he.Get<half>();
    Duplicate<half>(e, half(-100.0f), 512);
    Brcb(e, h, 2, BrcbRepeatParams(2, 16));
    Store(d, 512);
    Store(e, 1024, 512);
}

}  // namespace

const CaseTable& vector_sample::Cases() {
    static const CaseTable cases = {
        {"relu_ops", relu_ops},
        {"fma_ops", fma_ops},
        {"logic_rsqrt", logic_rsqrt},
        {"and_float_refused", and_float_refused},
        {"axpy_mixed_level0_refused", axpy_mixed_level0_refused},
        {"brcb", brcb},
    };
    return cases;
}
