// ReduceMax / ReduceMin, ReduceSum's level-0 forms, BlockReduceMax / Min / Sum, PairReduceSum
// and the unified names on the emulation (tests/kernels/samples/test_vector_reduce.py): each case
// reads the 512 floats of `in` and writes its results to the front of `out` (bytes), which the
// test checks against numpy.
//
// The library's entry is vector_sample.h's recsdk_sim_vector_case.
#include "vector_sample.h"

using namespace AscendC;
using namespace vector_sample;

namespace {

// Count form on float over in[0, 300): max and min with their indices, then max without.
void reduce_count_float() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bt, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 304, 320);
    LocalTensor<float> t = Filled<float>(pipe, bt, 64, 0.0f);
    LocalTensor<float> d = Filled<float>(pipe, bd, 8, -100.0f);
    ReduceMax(d, a, t, 300, true);
    ReduceMin(d[2], a, t, 300, true);
    ReduceMax(d[4], a, t, 300);
    Store(d, 32);
}

// Level 0 on half: src = in[0, 512) then -in[0, 256) (768 elements); ReduceMax with a mask
// array over 3 repeats 16 blocks apart (index = r * 256 + lane), ReduceMin with a mask count of
// 100 over 6 repeats 8 blocks apart; each with its index.
void reduce_level0_half() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bh, bt, bd;
    LocalTensor<float> fa = Load(pipe, ba, 0, 512, 768);
    Muls(fa[512], fa, -1.0f, 256);
    pipe.InitBuffer(bh, 768 * sizeof(half));
    LocalTensor<half> a = bh.Get<half>();
    Cast(a, fa, RoundMode::CAST_NONE, 768);
    pipe.InitBuffer(bt, 64 * sizeof(half));
    LocalTensor<half> t = bt.Get<half>();
    pipe.InitBuffer(bd, 16 * sizeof(half));
    LocalTensor<half> d = bd.Get<half>();
    Duplicate<half>(d, half(-100.0f), 16);
    uint64_t mask[2] = {0xF0F0F0F0F0F0F0F0ull, 0x1ull};
    ReduceMax(d, a, t, mask, 3, 16, true);
    ReduceMin(d[2], a, t, 100, 6, 8, true);
    Store(d, 32);
}

// Level-0 ReduceSum on float: the first 40 lanes of 5 repeats 8 blocks apart, then the lanes of
// a mask array (every third lane) of 3 repeats 16 blocks apart.
void reduce_sum_level0() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bt, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 512, 512);
    LocalTensor<float> t = Filled<float>(pipe, bt, 8, 0.0f);
    LocalTensor<float> d = Filled<float>(pipe, bd, 8, -100.0f);
    ReduceSum(d, a, t, 40, 5, 8);
    uint64_t mask[2] = {0x9249249249249249ull, 0};
    ReduceSum(d[1], a, t, mask, 3, 16);
    Store(d, 32);
}

// 100 repeats over the same 64 elements (srcRepStride 0) need 216 elements of sharedTmpBuffer
// with the index (200 + 8 + 8 for three rounds): 64 are refused.
void reduce_tmp_too_small() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bt, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    LocalTensor<float> t = Filled<float>(pipe, bt, 64, 0.0f);
    LocalTensor<float> d = Filled<float>(pipe, bd, 8, 0.0f);
    ReduceMax(d, a, t, 64, 100, 0, true);
}

// The same 100 repeats with the 216 elements: the index of the first maximum (a lane index).
void reduce_repeats_same_data() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bt, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    LocalTensor<float> t = Filled<float>(pipe, bt, 216, 0.0f);
    LocalTensor<float> d = Filled<float>(pipe, bd, 8, -100.0f);
    ReduceMax(d, a, t, 64, 100, 0, true);
    Store(d, 32);
}

// BlockReduceMax over even lanes of 2 float repeats (dstRepStride 1: results at r * 8 + b),
// BlockReduceMin with dstRepStride 2 (r * 16 + b) from d[16]; BlockReduceSum on half with
// dstRepStride 1 (one repeat's 8 results: r * 8 + b) to out[192...).
void block_reduce() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bh, bd, be;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256);
    pipe.InitBuffer(bh, 256 * sizeof(half));
    LocalTensor<half> h = bh.Get<half>();
    Cast(h, a, RoundMode::CAST_NONE, 256);
    LocalTensor<float> d = Filled<float>(pipe, bd, 48, -100.0f);
    pipe.InitBuffer(be, 32 * sizeof(half));
    LocalTensor<half> e = be.Get<half>();
    Duplicate<half>(e, half(-100.0f), 32);
    uint64_t mask[2] = {0x5555555555555555ull, 0};
    BlockReduceMax<float>(d, a, 2, mask, 1, 1, 8);
    BlockReduceMin<float>(d[16], a, 2, mask, 2, 1, 8);
    BlockReduceSum<half>(e, h, 2, 128, 1, 1, 8);
    Store(d, 192);
    Store(e, 64, 192);
}

void block_reduce_empty_block() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    LocalTensor<float> d = Filled<float>(pipe, bd, 8, 0.0f);
    BlockReduceMax<float>(d, a, 1, 60, 1, 1, 8);  // lanes 60-63 of block 7 only partly: fine
    BlockReduceMax<float>(d, a, 1, 50, 1, 1, 8);  // block 7 (lanes 56-63) has none
}

// PairReduceSum on half: the first 100 lanes of 2 repeats (the rest count 0); dstRepStride 1
// (128 bytes: 64 results), so repeat 1's results follow repeat 0's.
void pair_reduce() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bh, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 256, 256);
    pipe.InitBuffer(bh, 256 * sizeof(half));
    LocalTensor<half> h = bh.Get<half>();
    Cast(h, a, RoundMode::CAST_NONE, 256);
    pipe.InitBuffer(bd, 128 * sizeof(half));
    LocalTensor<half> d = bd.Get<half>();
    Duplicate<half>(d, half(-100.0f), 128);
    PairReduceSum<half>(d, h, 2, 100, 1, 1, 8);
    Store(d, 256);
}

// The unified names: ReduceDataBlock<MAX>, ReducePairElem<SUM>, ReduceRepeat<MIN> (value only)
// over one float repeat.
void unified_names() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd;
    LocalTensor<float> a = Load(pipe, ba, 0, 64, 64);
    LocalTensor<float> d = Filled<float>(pipe, bd, 64, -100.0f);
    ReduceDataBlock<ReduceType::MAX, float, float>(d, a, 64, 1, 1, 1, 8);
    ReducePairElem<ReduceType::SUM, float, float>(d[8], a, 64, 1, 1, 1, 8);
    ReduceRepeat<ReduceType::MIN, float, float>(d[40], a, 64, 1, 1, 1, 8,
                                                ReduceOrder::ORDER_ONLY_VALUE);
    Store(d, 256);
}

// GetReduceRepeatSumSpr after a ReduceSum count form: float over in[0, 300) to out[0, 4) (and
// ReduceSum's own dst[0] to out[4, 8)), then GetAccVal after a half ReduceSum over in[0, 200) to
// out[8, 10).
void reduce_sum_spr() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd, bt, ha, hd, ht;
    LocalTensor<float> a = Load(pipe, ba, 0, 304, 304);
    LocalTensor<float> d = Filled<float>(pipe, bd, 8, 0.0f);
    LocalTensor<float> t = Filled<float>(pipe, bt, 64, 0.0f);
    ReduceSum(d, a, t, 300);
    PipeBarrier<PIPE_ALL>();
    d.SetValue(1, d.GetValue(0));
    d.SetValue(0, GetReduceRepeatSumSpr<float>());
    LocalTensor<half> h = ToHalf(pipe, ha, a, 208);
    LocalTensor<half> e = Filled<half>(pipe, hd, 16, half(0.0f));
    LocalTensor<half> u = Filled<half>(pipe, ht, 64, half(0.0f));
    ReduceSum(e, h, u, 200);
    PipeBarrier<PIPE_ALL>();
    const half acc = GetAccVal<half>();
    Store(d, 32);
    d.SetValue(0, 0.0f);
    e.SetValue(0, acc);
    Store(e, 32, 8);
}

// The register read with nothing documented in it: before any ReduceSum, after a level-0
// ReduceSum, and as another type than the ReduceSum's.
void reduce_sum_spr_unset() {
    (void)GetReduceRepeatSumSpr<float>();
}
// A float ReduceSum count form over in[0, 64), a level-0 one after it if `level0`, then the
// register read as float or half.
template <typename R>
void reduce_sum_then_read(bool level0) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bd, bt;
    LocalTensor<float> a = Load(pipe, ba, 0, 128, 128);
    LocalTensor<float> d = Filled<float>(pipe, bd, 8, 0.0f);
    LocalTensor<float> t = Filled<float>(pipe, bt, 64, 0.0f);
    ReduceSum(d, a, t, 64);
    if (level0)
        ReduceSum(d, a, t, 64, 2, 8);
    (void)GetReduceRepeatSumSpr<R>();
}
void reduce_sum_spr_after_level0() {
    reduce_sum_then_read<float>(true);
}
void reduce_sum_spr_wrong_type() {
    reduce_sum_then_read<half>(false);
}

}  // namespace

const CaseTable& vector_sample::Cases() {
    static const CaseTable cases = {
        {"reduce_count_float", reduce_count_float},
        {"reduce_level0_half", reduce_level0_half},
        {"reduce_sum_level0", reduce_sum_level0},
        {"reduce_tmp_too_small", reduce_tmp_too_small},
        {"reduce_repeats_same_data", reduce_repeats_same_data},
        {"block_reduce", block_reduce},
        {"block_reduce_empty_block", block_reduce_empty_block},
        {"pair_reduce", pair_reduce},
        {"unified_names", unified_names},
        {"reduce_sum_spr", reduce_sum_spr},
        {"reduce_sum_spr_unset", reduce_sum_spr_unset},
        {"reduce_sum_spr_after_level0", reduce_sum_spr_after_level0},
        {"reduce_sum_spr_wrong_type", reduce_sum_spr_wrong_type},
    };
    return cases;
}
