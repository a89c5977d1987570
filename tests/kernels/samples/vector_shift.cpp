// ShiftLeft / ShiftRight on the emulation (tests/kernels/samples/test_vector_shift.py): each case
// reads the 2048 bytes of `in` as 16- or 32-bit integers (their bits, loaded as floats) and
// writes its results to the front of `out` (bytes), which the test checks against numpy.
//
// The library's entry is vector_sample.h's recsdk_sim_vector_case.
#include "vector_sample.h"

using namespace AscendC;
using namespace vector_sample;

namespace {

// Count forms over the whole input: int16 << 3 [0, 2048); int16 >> 5 [2048, 4096); uint32 << 7
// [4096, 6144); int32 >> 13 [6144, 8192).
void shift_count() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, b1, b2, b3, b4;
    LocalTensor<float> a = Load(pipe, ba, 0, 512, 512);
    LocalTensor<int16_t> s16 = a.ReinterpretCast<int16_t>();
    LocalTensor<int32_t> s32 = a.ReinterpretCast<int32_t>();
    LocalTensor<int16_t> d1 = Filled<int16_t>(pipe, b1, 1024, 0);
    LocalTensor<int16_t> d2 = Filled<int16_t>(pipe, b2, 1024, 0);
    LocalTensor<uint32_t> d3 = Filled<uint32_t>(pipe, b3, 512, 0u);
    LocalTensor<int32_t> d4 = Filled<int32_t>(pipe, b4, 512, 0);
    ShiftLeft(d1, s16, int16_t(3), 1024);
    ShiftRight(d2, s16, int16_t(5), 1024);
    ShiftLeft(d3, a.ReinterpretCast<uint32_t>(), 7u, 512);
    ShiftRight<int32_t, int32_t>(d4, s32, 13, 512);  // the U-typed overload
    Store(d1, 2048);
    Store(d2, 2048, 2048);
    Store(d3, 2048, 4096);
    Store(d4, 2048, 6144);
}

// The ends of the documented shift range: int16 << 16 [0, 2048); int16 >> 16 [2048, 4096);
// uint32 << 32 [4096, 6144); uint16 >> 0 of the first 1000 over a dst of 0x1234 [6144, 8192).
void shift_edges() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, b1, b2, b3, b4;
    LocalTensor<float> a = Load(pipe, ba, 0, 512, 512);
    LocalTensor<int16_t> s16 = a.ReinterpretCast<int16_t>();
    LocalTensor<int16_t> d1 = Filled<int16_t>(pipe, b1, 1024, 0);
    LocalTensor<int16_t> d2 = Filled<int16_t>(pipe, b2, 1024, 0);
    LocalTensor<uint32_t> d3 = Filled<uint32_t>(pipe, b3, 512, 7u);
    LocalTensor<uint16_t> d4 = Filled<uint16_t>(pipe, b4, 1024, uint16_t(0x1234));
    ShiftLeft(d1, s16, int16_t(16), 1024);
    ShiftRight(d2, s16, int16_t(16), 1024);
    ShiftLeft(d3, a.ReinterpretCast<uint32_t>(), 32u, 512);
    ShiftRight(d4, a.ReinterpretCast<uint16_t>(), uint16_t(0), 1000);
    Store(d1, 2048);
    Store(d2, 2048, 2048);
    Store(d3, 2048, 4096);
    Store(d4, 2048, 6144);
}

// Level 0. int16 >> 4 with roundEn, mask {0x00FF00FF00FF00FF, 0xFFFF000000000000}, 2 repeats,
// src repeats 16 blocks apart, over a dst of 256 x 0x7777 [0, 512). uint16 << 1, mask count 40,
// 3 repeats, dst blocks 2 apart and repeats 16 apart, over a dst of 768 x 0x5555 [512, 2048).
// uint32 >> 9 in counter mode (SetMaskCount, 100 elements from SetVectorMask, isSetMask false)
// over a dst of 128 x 0xAAAAAAAA [2048, 2560).
void shift_level0() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, b1, b2, b3;
    LocalTensor<float> a = Load(pipe, ba, 0, 512, 512);
    LocalTensor<int16_t> d1 = Filled<int16_t>(pipe, b1, 256, int16_t(0x7777));
    LocalTensor<uint16_t> d2 = Filled<uint16_t>(pipe, b2, 768, uint16_t(0x5555));
    LocalTensor<uint32_t> d3 = Filled<uint32_t>(pipe, b3, 128, 0xAAAAAAAAu);
    uint64_t mask[2] = {0x00FF00FF00FF00FFull, 0xFFFF000000000000ull};
    ShiftRight(d1, a.ReinterpretCast<int16_t>(), int16_t(4), mask, 2,
               UnaryRepeatParams(1, 1, 8, 16), true);
    ShiftLeft(d2, a.ReinterpretCast<uint16_t>(), uint16_t(1), uint64_t(40), 3,
              UnaryRepeatParams(2, 1, 16, 8));
    SetMaskCount();
    SetVectorMask<uint32_t, MaskMode::COUNTER>(0, 100);
    ShiftRight<uint32_t, false>(d3, a.ReinterpretCast<uint32_t>(), 9u, MASK_PLACEHOLDER, 1,
                                UnaryRepeatParams());
    SetMaskNorm();
    ResetMask();
    Store(d1, 512);
    Store(d2, 1536, 512);
    Store(d3, 512, 2048);
}

void shift_float_refused() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    ShiftLeft(a, a, 1.0f, 64);
}

void shift_out_of_range() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba;
    LocalTensor<int16_t> a = Load(pipe, ba, 0, 64, 64).ReinterpretCast<int16_t>();
    ShiftRight(a, a, int16_t(17), 128);
}

void shift_round_by_zero() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba;
    LocalTensor<int32_t> a = Load(pipe, ba, 0, 64, 64).ReinterpretCast<int32_t>();
    ShiftRight(a, a, int32_t(0), uint64_t(64), 1, UnaryRepeatParams(), true);
}

}  // namespace

const CaseTable& vector_sample::Cases() {
    static const CaseTable cases = {
        {"shift_count", shift_count},
        {"shift_edges", shift_edges},
        {"shift_level0", shift_level0},
        {"shift_float_refused", shift_float_refused},
        {"shift_out_of_range", shift_out_of_range},
        {"shift_round_by_zero", shift_round_by_zero},
    };
    return cases;
}
