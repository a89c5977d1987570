// What the vector samples (vector_*.cpp, run by test_vector_*.py) share: each case is a function
// that reads floats from `in` and writes bytes to the front of `out`, and the library exports one
// entry, recsdk_sim_vector_case(name, in, in_bytes, out, out_bytes, report), that runs a named case
// on one simulated core with both regions declared to the checker. A sample defines its table
// of cases as vector_sample::Cases().
#ifndef RECSDK_TESTS_VECTOR_SAMPLE_H
#define RECSDK_TESTS_VECTOR_SAMPLE_H

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "recsdk_sim/launch.h"

namespace vector_sample {

using namespace AscendC;

using CaseTable = std::map<std::string, std::function<void()>>;
const CaseTable& Cases();  // defined by each sample

// The regions of the running case (one case at a time: the library runs on one core).
inline uint8_t* g_in = nullptr;
inline uint32_t g_in_bytes = 0;
inline uint8_t* g_out = nullptr;

template <typename T>
GlobalTensor<T> Gm(uint8_t* base, uint32_t bytes) {
    GlobalTensor<T> gt;
    gt.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(base), bytes / sizeof(T));
    return gt;
}

// The input as floats.
inline GlobalTensor<float> In() {
    return Gm<float>(g_in, g_in_bytes);
}

// in[at, at + n) into a fresh UB tensor of `cap` floats.
inline LocalTensor<float> Load(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, uint32_t at, uint32_t n,
                               uint32_t cap) {
    pipe.InitBuffer(buf, cap * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, In()[at], n);
    PipeBarrier<PIPE_ALL>();
    return t;
}

// A fresh UB tensor of n elements, each v.
template <typename T>
LocalTensor<T> Filled(TPipe& pipe, TBuf<TPosition::VECCALC>& buf, uint32_t n, T v) {
    pipe.InitBuffer(buf, n * sizeof(T));
    LocalTensor<T> t = buf.Get<T>();
    if constexpr (sizeof(T) == 1) {  // Duplicate has no 8-bit form: fill as uint16_t
        const auto v16 = static_cast<uint16_t>(v * 0x101u);
        Duplicate<uint16_t>(t.template ReinterpretCast<uint16_t>(), v16,
                            static_cast<int32_t>(n / 2));
    } else {
        Duplicate<T>(t, v, static_cast<int32_t>(n));
    }
    return t;
}

// The first n of `src` as half (Cast, CAST_NONE) in a fresh UB tensor.
inline LocalTensor<half> ToHalf(TPipe& pipe, TBuf<TPosition::VECCALC>& buf,
                                const LocalTensor<float>& src, uint32_t n) {
    pipe.InitBuffer(buf, n * sizeof(half));
    LocalTensor<half> t = buf.Get<half>();
    Cast(t, src, RoundMode::CAST_NONE, n);
    return t;
}

// `bytes` bytes of `t` to out[at...].
template <typename T>
void Store(const LocalTensor<T>& t, uint32_t bytes, uint32_t at = 0) {
    PipeBarrier<PIPE_ALL>();
    DataCopy(Gm<T>(g_out + at, bytes), t, bytes / sizeof(T));
    PipeBarrier<PIPE_ALL>();
}

}  // namespace vector_sample

extern "C" __attribute__((visibility("default"))) int32_t
recsdk_sim_vector_case(const char* name, uint8_t* in, uint32_t in_bytes, uint8_t* out,
                       uint32_t out_bytes, RecsdkSimReport* report) {
    std::memset(report, 0, sizeof(*report));
    const auto& cases = vector_sample::Cases();
    auto it = cases.find(name);
    if (it == cases.end()) {
        std::snprintf(report->message, sizeof(report->message), "no case %s", name);
        return report->status = RECSDK_SIM_INTERNAL;
    }
    vector_sample::g_in = in;
    vector_sample::g_in_bytes = in_bytes;
    vector_sample::g_out = out;
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

#endif  // RECSDK_TESTS_VECTOR_SAMPLE_H
