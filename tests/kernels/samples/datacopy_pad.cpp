// DataCopyPad and DataCopy in the forms CANN declares for dav_c220 (the 910B), and the APIs the
// API inventory moved out of the refusal table (WholeReduceMax/Min, DumpTensor, printf), written
// from the documented behaviour (DataCopyPad_GMToUB.md, DataCopyPad_UBToGM.md,
// SetPadValue(ISASI).md, DataCopy_UBToUB, ReduceRepeat.md, DumpTensor.md): each case copies a known
// input and writes what lands in the unified buffer or global memory to the output, whose values
// test_datacopy_pad.py works out by hand.
//
// recsdk_sim_copy_case(name, in, out, report): `in` holds 64 int32 (the test fills i + 1), `out`
// 256 int32 (the test fills -7: bytes a copy must not touch keep it).
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "recsdk_sim/launch.h"

using namespace AscendC;

namespace {

int32_t* g_in = nullptr;
int32_t* g_out = nullptr;
constexpr uint32_t kIn = 64;
constexpr uint32_t kOut = 256;

template <typename T>
GlobalTensor<T> Gm(int32_t* base, uint32_t words) {
    GlobalTensor<T> gt;
    gt.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(base), words * sizeof(int32_t) / sizeof(T));
    return gt;
}

// A UB tensor of n int32 set to -1, so that bytes no copy writes are recognisable.
LocalTensor<int32_t> Ub(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, uint32_t n) {
    pipe.InitBuffer(buf, n * sizeof(int32_t));
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    Duplicate<int32_t>(t, -1, static_cast<int32_t>(n));
    PipeBarrier<PIPE_ALL>();
    return t;
}

void Store(const LocalTensor<int32_t>& t, uint32_t n) {
    PipeBarrier<PIPE_ALL>();
    DataCopy(Gm<int32_t>(g_out, kOut), t, n);
    PipeBarrier<PIPE_ALL>();
}

// Two blocks of 5 int32 (20 bytes), 4 bytes apart in GM, each padded 1 left and 1 right with
// the raw word 0x7F; the block's 28 bytes round up to 32 and the rest is padding too; one empty
// 32-byte block between the two in UB.
void pad_params_gm_to_ub() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 32);
    DataCopyParams copy{2, 20, 4, 1};
    DataCopyPadParams pad{true, 1, 1, 0x7F};
    DataCopyPad(ub, Gm<int32_t>(g_in, kIn), copy, pad);
    Store(ub, 32);
}

// The DataCopyPadParams value is the element's bit pattern: 0x3F800000 pads a float with 1.0,
// where DataCopyPadExtParams<float> converts its value (2.0f pads with 2.0).
void pad_params_raw_bits() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 16);
    LocalTensor<float> f = ub.ReinterpretCast<float>();
    GlobalTensor<float> in = Gm<float>(g_in, kIn);
    DataCopyPad(f, in, DataCopyParams{1, 8, 0, 0}, DataCopyPadParams{true, 0, 6, 0x3F800000ull});
    DataCopyPad(f[8], in, DataCopyExtParams{1, 8, 0, 0, 0},
                DataCopyPadExtParams<float>{true, 0, 6, 2.0f});
    Store(ub, 16);
}

// Without padding, the dummy bytes up to 32 repeat the block's first element (isPad false).
void pad_params_dummy() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 16);
    DataCopyPad(ub, Gm<int32_t>(g_in, kIn)[2], DataCopyParams{2, 12, 0, 0},
                DataCopyPadParams{false, 0, 0, 0});
    Store(ub, 16);
}

// SetPadValue fills the padding of a copy that does not set the value itself (isPad false).
void set_pad_value() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 8);
    SetPadValue<int32_t>(9);
    DataCopyPad(ub, Gm<int32_t>(g_in, kIn), DataCopyExtParams{1, 12, 0, 0, 0},
                DataCopyPadExtParams<int32_t>{false, 0, 2, 0});
    Store(ub, 8);
}

// UB -> GM with DataCopyParams: 2 blocks of 3 int32 (12 bytes), one 32-byte block apart in UB,
// 8 bytes apart in GM.
void pad_params_ub_to_gm() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 24);
    DataCopy(ub, Gm<int32_t>(g_in, kIn), 24);
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(Gm<int32_t>(g_out, kOut), ub, DataCopyParams{2, 12, 1, 8});
    PipeBarrier<PIPE_ALL>();
}

// UB -> UB with DataCopyParams: 2 blocks of one 32-byte unit, 1 unit apart in the source, packed
// in the destination.
void params_ub_to_ub() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    LocalTensor<int32_t> src = Ub(pipe, a, 32);
    LocalTensor<int32_t> dst = Ub(pipe, b, 32);
    DataCopy(src, Gm<int32_t>(g_in, kIn), 32);
    PipeBarrier<PIPE_ALL>();
    DataCopy(dst, src, DataCopyParams{2, 1, 1, 0});
    Store(dst, 32);
}

// A padding of more than 32 bytes is refused, naming the call.
void pad_too_wide() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 32);
    DataCopyPad(ub, Gm<int32_t>(g_in, kIn), DataCopyParams{1, 4, 0, 0},
                DataCopyPadParams{true, 9, 0, 0});
}

// WholeReduceMax over 2 repeats of 64 float lanes, [value, index] pairs one pair apart; then
// WholeReduceMin over the first 10 lanes of each repeat, [index, value]. x[j] = (37 j mod 64) - 20
// in repeat 0 and its negation in repeat 1: the test works the extremes out with the same formula.
void whole_reduce_max_min() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 128 * sizeof(float));
    LocalTensor<float> x = a.Get<float>();
    for (uint32_t j = 0; j < 128; ++j) {
        const float v = static_cast<float>(static_cast<int32_t>((37 * (j % 64)) % 64) - 20);
        x.SetValue(j, j < 64 ? v : -v);
    }
    LocalTensor<int32_t> out = Ub(pipe, b, 8);
    LocalTensor<float> r = out.ReinterpretCast<float>();
    WholeReduceMax<float>(r, x, 64, 2, 1, 1, 8);
    WholeReduceMin<float>(r[4], x, 10, 2, 1, 1, 8, ReduceOrder::ORDER_INDEX_VALUE);
    Store(out, 8);
}

// DumpTensor and printf print on the host (the test reads standard output).
void dump_and_printf() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 8);
    DataCopy(ub, Gm<int32_t>(g_in, kIn), 8);
    PipeBarrier<PIPE_ALL>();
    DumpTensor(ub, 5, 4);
    printf("block %lld of %lld\n", static_cast<long long>(GetBlockIdx()),
           static_cast<long long>(GetBlockNum()));
    PRINTF("value %d\n", ub.GetValue(3));
}

// ReduceSum (count form) of 130 floats x[j] = j / 2 - 10 (exact in float, so the sum is exact
// whatever the order), and of the first 7.
void reduce_sum() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, tmp;
    pipe.InitBuffer(a, 192 * sizeof(float));
    pipe.InitBuffer(tmp, 64 * sizeof(float));
    LocalTensor<float> x = a.Get<float>();
    for (uint32_t j = 0; j < 130; ++j)
        x.SetValue(j, static_cast<float>(j) / 2 - 10);
    LocalTensor<int32_t> out = Ub(pipe, b, 16);
    LocalTensor<float> r = out.ReinterpretCast<float>();
    ReduceSum(r, x, tmp.Get<float>(), 130);
    ReduceSum(r[8], x, tmp.Get<float>(), 7);
    Store(out, 16);
}

// A level-0 Add with repeatStrideMode set: refused, not run with the default stride counting.
void stride_mode_refused() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    LocalTensor<int32_t> ub = Ub(pipe, buf, 64);
    LocalTensor<float> f = ub.ReinterpretCast<float>();
    BinaryRepeatParams p;
    p.repeatStrideMode = true;
    Add(f, f, f, 64, 1, p);
}

const std::map<std::string, std::function<void()>>& Cases() {
    static const std::map<std::string, std::function<void()>> cases = {
        {"pad_params_gm_to_ub", pad_params_gm_to_ub},
        {"pad_params_raw_bits", pad_params_raw_bits},
        {"pad_params_dummy", pad_params_dummy},
        {"set_pad_value", set_pad_value},
        {"pad_params_ub_to_gm", pad_params_ub_to_gm},
        {"params_ub_to_ub", params_ub_to_ub},
        {"pad_too_wide", pad_too_wide},
        {"whole_reduce_max_min", whole_reduce_max_min},
        {"dump_and_printf", dump_and_printf},
        {"stride_mode_refused", stride_mode_refused},
        {"reduce_sum", reduce_sum},
    };
    return cases;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t
recsdk_sim_copy_case(const char* name, int32_t* in, int32_t* out, RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    auto it = Cases().find(name);
    if (it == Cases().end()) {
        std::snprintf(report->message, sizeof(report->message), "no case %s", name);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    g_in = in;
    g_out = out;
    recsdk::sim::KernelRun run;
    run.kernel = name;
    run.soc = recsdk::sim::FindSoc("Ascend910B1");
    run.block_dim = 1;
    run.regions = {recsdk::sim::GmRegion{reinterpret_cast<const uint8_t*>(in),
                                         kIn * sizeof(int32_t), false, "input in"},
                   recsdk::sim::GmRegion{reinterpret_cast<const uint8_t*>(out),
                                         kOut * sizeof(int32_t), true, "output out"}};
    return recsdk::sim::RunKernel(run, it->second, report);
}
