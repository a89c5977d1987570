// Whole-tensor and per-block reductions beyond vector_masked.h's: ReduceMax / ReduceMin (count
// and level-0 forms, calIndex), ReduceSum's level-0 forms, BlockReduceMax / BlockReduceMin,
// PairReduceSum, and the unified names ReduceDataBlock / ReducePairElem / ReduceRepeat.
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/归约计算/, impl/basic_api/dav_c220/
// kernel_operator_vec_reduce_impl.h):
// - ReduceMax / ReduceMin (half/float): dst[0] = the extreme of the selected elements, and with
//   calIndex dst[1] = its index stored as an integer in an element of T (uint16_t for half,
//   uint32_t for float: read it through ReinterpretCast). Ties give the smallest index. The
//   index of lane j of repeat r is its element offset r * srcRepStride * (32 / sizeof(T)) + j
//   (the implementation's preNum = offsetNumPerRep * repeat). half indices beyond 65535 are
//   refused. sharedTmpBuffer must hold the documented minimum ("sharedTmpBuffer所需空间"), and
//   receives the first round's [value, in-repeat index] pairs, one per repeat; dst may alias it.
// - ReduceSum level 0 ("方式二"): each repeat's selected lanes summed as a binary tree, then the
//   repeats' sums summed as a tree of 256-byte repeats, rounding to T after each round;
//   sharedTmpBuffer holds at least repeatTime elements rounded up to a block and receives the
//   first round's sums.
// - BlockReduceMax / Min: per 32-byte block of each repeat, the extreme of its selected lanes, to
//   dst[r * dstRepStride * 8 + b]; a block with no lane selected has no documented result and is
//   refused. PairReduceSum: lanes 2k and 2k+1 summed (unselected lanes count 0) to
//   dst[r * dstRepStride * (128 / sizeof(T)) + k] (dstRepStride in 128-byte units).
// - A repeatTime or count of 0 is a NOP on A2/A3. The level-0 forms of ReduceMax/Min/Sum take the
//   mask in normal mode only: their use of counter mode is not documented.
#ifndef RECSDK_SIM_VECTOR_REDUCE_H
#define RECSDK_SIM_VECTOR_REDUCE_H

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "recsdk_sim/vector_masked.h"

namespace AscendC {

enum class ReduceType {
    NONE = -1,
    SUM = 0,
    MAX,
    MIN,
};

}  // namespace AscendC

namespace recsdk::sim {

inline void VecCost(uint64_t repeats, uint64_t elems) {
    auto& s = Stats();
    s.vector_elements += elems;
    s.vector_repeats += repeats;
    ++s.vector_instrs;
    ModelVector(repeats);
}

inline uint64_t AlignElems(uint64_t n, uint64_t per_block) {
    return (n + per_block - 1) / per_block * per_block;
}

// ReduceMax.md "sharedTmpBuffer所需空间设置", in elements.
template <typename T>
inline uint64_t ReduceExtremeTmpElems(uint64_t first_repeats, bool cal_index) {
    constexpr uint64_t blk = 32 / sizeof(T), lanes = 256 / sizeof(T);
    const uint64_t out1 = first_repeats * 2;
    if (!cal_index)
        return AlignElems(out1, blk);
    const uint64_t start2 = AlignElems(out1, blk);
    const uint64_t out2 = (out1 + lanes - 1) / lanes * 2;
    const uint64_t end2 = AlignElems(out2, blk);
    if (out2 <= 2)
        return start2 + end2;
    const uint64_t out3 = (out2 + lanes - 1) / lanes * 2;
    return start2 + end2 + AlignElems(out3, blk);
}

template <typename T>
inline void CheckTmp(const AscendC::LocalTensor<T>& tmp, uint64_t need, const char* call,
                     const SrcLoc& loc) {
    tmp.Validate(call, loc);
    tmp.InUb(call, loc);
    CheckUbAligned(tmp.SimData(), call, loc, "sharedTmpBuffer");
    if (tmp.GetSize() < need) {
        Fail(call, loc,
             "sharedTmpBuffer holds " + std::to_string(tmp.GetSize()) +
                 " elements; this call needs " + std::to_string(need) +
                 " (the documented minimum)");
    }
}

template <typename T>
inline void RefuseCounterMode(const char* call, const SrcLoc& loc) {
    if (MaskRegs().counter) {
        Fail(call, loc,
             "counter mask mode: this form's use of it is not documented (call SetMaskNorm, or use "
             "the count form)");
    }
}

template <bool kMax, typename T, typename P>
inline void ReduceExtreme(const char* call, const AscendC::LocalTensor<T>& dst,
                          const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<T>& tmp,
                          const P& plan, uint64_t src_rep_stride, bool cal_index,
                          uint64_t first_repeats, const SrcLoc& loc) {
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    VecType<kHalfFloat<T>, T>(call, loc);
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    if (plan.repeats == 0 || plan.HighestLane() == 0)
        return;  // A2/A3: a NOP
    const Lane0 ss{1, src_rep_stride};
    Operand0(src, plan, ss, Acc::kRead, call, loc);
    const uint64_t need = ReduceExtremeTmpElems<T>(first_repeats, cal_index);
    CheckTmp(tmp, need, call, loc);
    const T* a = src.SimData();
    // The first round: each repeat's extreme and its lane; then the extreme of those.
    std::vector<std::pair<T, Bits>> round1(plan.repeats);
    std::vector<bool> any(plan.repeats, false);
    bool found = false;
    float best = 0.0f;
    uint64_t best_index = 0;
    T best_value{};
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        float rbest = 0.0f;
        for (uint32_t j = 0; j < P::kLanes; ++j) {
            if (!plan.On(r, j))
                continue;
            const uint64_t at = P::At(r, j, ss);
            const float v = static_cast<float>(a[at]);
            if (!any[r] || (kMax ? v > rbest : v < rbest)) {
                rbest = v;
                any[r] = true;
                round1[r] = {a[at], static_cast<Bits>(j)};
            }
            if (!found || (kMax ? v > best : v < best) || (v == best && at < best_index)) {
                best = v;
                best_index = at;
                best_value = a[at];
                found = true;
            }
        }
    }
    if (cal_index && sizeof(T) == 2 && best_index > 0xFFFF) {
        Fail(call, loc,
             "the index " + std::to_string(best_index) +
                 " does not fit the uint16_t a half result holds (at most 65535)");
    }
    const uint64_t pairs = plan.repeats * 2 < need ? plan.repeats * 2 : need;
    tmp.SimAccess(0, pairs * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    T* t = tmp.SimData();
    for (uint32_t r = 0; r < plan.repeats && 2 * uint64_t(r) + 1 < pairs; ++r) {
        t[2 * r] = round1[r].first;
        std::memcpy(t + 2 * r + 1, &round1[r].second, sizeof(T));
    }
    const uint64_t out = cal_index ? 2 : 1;
    dst.CheckSpan(out, call, loc);
    dst.SimAccess(0, out * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    T* d = dst.SimData();
    d[0] = best_value;
    if (cal_index) {
        const Bits index = static_cast<Bits>(best_index);
        std::memcpy(d + 1, &index, sizeof(T));
    }
    VecCost(plan.repeats + (2 * uint64_t(plan.repeats) + P::kLanes - 1) / P::kLanes,
            uint64_t(plan.repeats) * P::kLanes);
}

template <typename T, typename P>
inline void ReduceSumTree(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                          const AscendC::LocalTensor<T>& tmp, const P& plan,
                          uint64_t src_rep_stride, const SrcLoc& loc) {
    const char* call = "ReduceSum";
    VecType<kHalfFloat<T>, T>(call, loc);
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    if (plan.repeats == 0)
        return;
    Core().reduce_sum_type = nullptr;  // what the level-0 form leaves in the register: undocumented
    const Lane0 ss{1, src_rep_stride};
    Operand0(src, plan, ss, Acc::kRead, call, loc);
    CheckTmp(tmp, AlignElems(plan.repeats, 32 / sizeof(T)), call, loc);
    const T* a = src.SimData();
    std::vector<T> sums(plan.repeats);
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        float lanes[P::kLanes];
        for (uint32_t j = 0; j < P::kLanes; ++j)
            lanes[j] = plan.On(r, j) ? static_cast<float>(a[P::At(r, j, ss)]) : 0.0f;
        sums[r] = static_cast<T>(AscendC::PairwiseSum(lanes, P::kLanes));
    }
    tmp.SimAccess(0, uint64_t(plan.repeats) * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    std::memcpy(tmp.SimData(), sums.data(), sums.size() * sizeof(T));
    uint64_t rounds = plan.repeats;
    std::vector<T> level = sums;
    while (level.size() > 1) {
        std::vector<T> next((level.size() + P::kLanes - 1) / P::kLanes);
        for (size_t k = 0; k < next.size(); ++k) {
            float lanes[P::kLanes] = {};
            for (uint32_t j = 0; j < P::kLanes && k * P::kLanes + j < level.size(); ++j)
                lanes[j] = static_cast<float>(level[k * P::kLanes + j]);
            next[k] = static_cast<T>(AscendC::PairwiseSum(lanes, P::kLanes));
        }
        rounds += next.size();
        level.swap(next);
    }
    dst.CheckSpan(1, call, loc);
    dst.SimAccess(0, sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    dst.SimData()[0] = level[0];
    VecCost(rounds, uint64_t(plan.repeats) * P::kLanes);
}

// BlockReduceMax / Min: 8 results per repeat.
template <bool kMax, typename T, typename P>
inline void BlockReduceExtreme(const char* call, const AscendC::LocalTensor<T>& dst,
                               const AscendC::LocalTensor<T>& src, const P& plan,
                               int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                               const SrcLoc& loc) {
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    CheckUbAligned(dst.SimData(), call, loc, "destination");
    const uint64_t per = uint64_t(dstRepStride) * 8;
    const uint64_t end = plan.repeats == 0 ? 0 : (plan.repeats - 1) * per + 8;
    dst.CheckSpan(end, call, loc);
    const Lane0 ss{uint64_t(srcBlkStride), uint64_t(srcRepStride)};
    std::vector<T> results(uint64_t(plan.repeats) * 8);
    std::vector<bool> written(results.size(), false);
    const T* a = src.SimData();
    AscendC::ReduceLevel0(
        call, src, plan, ss,
        [&](uint32_t r, const float* v, const bool* on) {
            for (uint32_t b = 0; b < 8; ++b) {
                bool any = false;
                float best = 0.0f;
                for (uint32_t e = 0; e < P::kBlk; ++e) {
                    const uint32_t j = b * P::kBlk + e;
                    if (!on[j] || (any && !(kMax ? v[j] > best : v[j] < best)))
                        continue;
                    best = v[j];
                    any = true;
                    results[r * 8 + b] = a[P::At(r, j, ss)];
                }
                written[r * 8 + b] = any;
            }
        },
        loc);
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        for (uint32_t b = 0; b < 8; ++b) {
            if (!written[r * 8 + b]) {
                Fail(call, loc,
                     "block " + std::to_string(b) + " of repeat " + std::to_string(r) +
                         " has no lane selected: its result is not documented");
            }
        }
    }
    if (end > 0)
        dst.SimAccess(0, end * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    T* d = dst.SimData();
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        for (uint32_t b = 0; b < 8; ++b)
            d[r * per + b] = results[r * 8 + b];
    }
}

template <typename T, typename P>
inline void PairReduceSumLevel0(const AscendC::LocalTensor<T>& dst,
                                const AscendC::LocalTensor<T>& src, const P& plan,
                                int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                                const SrcLoc& loc) {
    const char* call = "PairReduceSum";
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    CheckUbAligned(dst.SimData(), call, loc, "destination");
    constexpr uint32_t kHalf = P::kLanes / 2;
    const uint64_t per = uint64_t(dstRepStride) * kHalf;
    const uint64_t end = plan.repeats == 0 ? 0 : (plan.repeats - 1) * per + kHalf;
    dst.CheckSpan(end, call, loc);
    const Lane0 ss{uint64_t(srcBlkStride), uint64_t(srcRepStride)};
    std::vector<T> results(uint64_t(plan.repeats) * kHalf);
    AscendC::ReduceLevel0(
        call, src, plan, ss,
        [&](uint32_t r, const float* v, const bool*) {
            for (uint32_t k = 0; k < kHalf; ++k)
                results[r * kHalf + k] = static_cast<T>(v[2 * k] + v[2 * k + 1]);
        },
        loc);
    if (end > 0)
        dst.SimAccess(0, end * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    T* d = dst.SimData();
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        for (uint32_t k = 0; k < kHalf; ++k)
            d[r * per + k] = results[r * kHalf + k];
    }
}

}  // namespace recsdk::sim

namespace AscendC {

// ---- ReduceMax / ReduceMin (ReduceMax.md, ReduceMin.md) -----------------------------------------

#define RECSDK_SIM_REDUCE_EXTREME(NAME, IS_MAX)                                                \
    template <typename T>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                     \
                     const LocalTensor<T>& sharedTmpBuffer, const uint64_t mask[],             \
                     const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0,  \
                     recsdk::sim::SrcLoc loc = {}) {                                           \
        using namespace recsdk::sim;                                                           \
        RefuseCounterMode<T>(#NAME, loc);                                                      \
        if (repeatTime < 0 || srcRepStride < 0)                                                \
            Fail(#NAME, loc, "negative repeatTime or srcRepStride");                           \
        LanePlan<T> plan = PlanFromBits<T>(mask, 1, true, #NAME, loc);                         \
        plan.repeats = static_cast<uint32_t>(repeatTime);                                      \
        ReduceExtreme<IS_MAX>(#NAME, dst, src, sharedTmpBuffer, plan, uint64_t(srcRepStride),  \
                              calIndex, uint64_t(repeatTime), loc);                            \
    }                                                                                          \
    template <typename T>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                     \
                     const LocalTensor<T>& sharedTmpBuffer, const int32_t mask,                \
                     const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0,  \
                     recsdk::sim::SrcLoc loc = {}) {                                           \
        using namespace recsdk::sim;                                                           \
        RefuseCounterMode<T>(#NAME, loc);                                                      \
        if (repeatTime < 0 || srcRepStride < 0)                                                \
            Fail(#NAME, loc, "negative repeatTime or srcRepStride");                           \
        LanePlan<T> plan = PlanFromCount<T>(static_cast<uint64_t>(mask), 1, true, #NAME, loc); \
        plan.repeats = static_cast<uint32_t>(repeatTime);                                      \
        ReduceExtreme<IS_MAX>(#NAME, dst, src, sharedTmpBuffer, plan, uint64_t(srcRepStride),  \
                              calIndex, uint64_t(repeatTime), loc);                            \
    }                                                                                          \
    template <typename T>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                     \
                     const LocalTensor<T>& sharedTmpBuffer, const int32_t count,               \
                     bool calIndex = 0, recsdk::sim::SrcLoc loc = {}) {                        \
        using namespace recsdk::sim;                                                           \
        if (count < 0)                                                                         \
            Fail(#NAME, loc, "negative count " + std::to_string(count));                       \
        src.CheckSpan(static_cast<uint64_t>(count), #NAME, loc);                               \
        const uint64_t first = uint64_t(count) / (256 / sizeof(T));                            \
        ReduceExtreme<IS_MAX>(#NAME, dst, src, sharedTmpBuffer,                                \
                              CountPlan<T>(static_cast<uint32_t>(count)), 8, calIndex,         \
                              first == 0 ? 1 : first, loc);                                    \
    }
RECSDK_SIM_REDUCE_EXTREME(ReduceMax, true)
RECSDK_SIM_REDUCE_EXTREME(ReduceMin, false)
#undef RECSDK_SIM_REDUCE_EXTREME

// ---- ReduceSum, level 0 (ReduceSum.md, "方式二")
// -------------------------------------------------

template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                      const LocalTensor<T>& sharedTmpBuffer, const uint64_t mask[],
                      const int32_t repeatTime, const int32_t srcRepStride,
                      recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    RefuseCounterMode<T>("ReduceSum", loc);
    if (repeatTime < 0 || srcRepStride < 0)
        Fail("ReduceSum", loc, "negative repeatTime or srcRepStride");
    LanePlan<T> plan = PlanFromBits<T>(mask, 1, true, "ReduceSum", loc);
    plan.repeats = static_cast<uint32_t>(repeatTime);
    ReduceSumTree(dst, src, sharedTmpBuffer, plan, uint64_t(srcRepStride), loc);
}
template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                      const LocalTensor<T>& sharedTmpBuffer, const int32_t mask,
                      const int32_t repeatTime, const int32_t srcRepStride,
                      recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    RefuseCounterMode<T>("ReduceSum", loc);
    if (repeatTime < 0 || srcRepStride < 0)
        Fail("ReduceSum", loc, "negative repeatTime or srcRepStride");
    LanePlan<T> plan = PlanFromCount<T>(static_cast<uint64_t>(mask), 1, true, "ReduceSum", loc);
    plan.repeats = static_cast<uint32_t>(repeatTime);
    ReduceSumTree(dst, src, sharedTmpBuffer, plan, uint64_t(srcRepStride), loc);
}

// ---- BlockReduceMax / BlockReduceMin / PairReduceSum --------------------------------------------

#define RECSDK_SIM_BLOCK_EXTREME(NAME, IS_MAX)                                                     \
    template <typename T, bool isSetMask = true>                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                         \
                     const int32_t repeatTime, const uint64_t mask[], const int32_t dstRepStride,  \
                     const int32_t srcBlkStride, const int32_t srcRepStride,                       \
                     recsdk::sim::SrcLoc loc = {}) {                                               \
        recsdk::sim::BlockReduceExtreme<IS_MAX>(                                                   \
            #NAME, dst, src,                                                                       \
            recsdk::sim::PlanFromBits<T>(mask, static_cast<uint8_t>(repeatTime), isSetMask, #NAME, \
                                         loc),                                                     \
            dstRepStride, srcBlkStride, srcRepStride, loc);                                        \
    }                                                                                              \
    template <typename T, bool isSetMask = true>                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                         \
                     const int32_t repeatTime, const int32_t mask, const int32_t dstRepStride,     \
                     const int32_t srcBlkStride, const int32_t srcRepStride,                       \
                     recsdk::sim::SrcLoc loc = {}) {                                               \
        recsdk::sim::BlockReduceExtreme<IS_MAX>(                                                   \
            #NAME, dst, src,                                                                       \
            recsdk::sim::PlanFromCount<T>(static_cast<uint64_t>(mask),                             \
                                          static_cast<uint8_t>(repeatTime), isSetMask, #NAME,      \
                                          loc),                                                    \
            dstRepStride, srcBlkStride, srcRepStride, loc);                                        \
    }
RECSDK_SIM_BLOCK_EXTREME(BlockReduceMax, true)
RECSDK_SIM_BLOCK_EXTREME(BlockReduceMin, false)
#undef RECSDK_SIM_BLOCK_EXTREME

template <typename T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                          const int32_t repeatTime, const uint64_t mask[],
                          const int32_t dstRepStride, const int32_t srcBlkStride,
                          const int32_t srcRepStride, recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::PairReduceSumLevel0(
        dst, src,
        recsdk::sim::PlanFromBits<T>(mask, static_cast<uint8_t>(repeatTime), isSetMask,
                                     "PairReduceSum", loc),
        dstRepStride, srcBlkStride, srcRepStride, loc);
}
template <typename T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                          const int32_t repeatTime, const int32_t mask, const int32_t dstRepStride,
                          const int32_t srcBlkStride, const int32_t srcRepStride,
                          recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::PairReduceSumLevel0(
        dst, src,
        recsdk::sim::PlanFromCount<T>(static_cast<uint64_t>(mask), static_cast<uint8_t>(repeatTime),
                                      isSetMask, "PairReduceSum", loc),
        dstRepStride, srcBlkStride, srcRepStride, loc);
}

// ---- the unified names (ReduceDataBlock.md, ReducePairElem.md, ReduceRepeat.md): mask before
// repeatTime, the reduction a template argument, dst and src of one type
// ---------------------------

#define RECSDK_SIM_UNIFIED(MASK_T)                                                                 \
    template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>                \
    inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, MASK_T mask, \
                                const int32_t repeatTime, const int32_t dstRepStride,              \
                                const int32_t srcBlkStride, const int32_t srcRepStride,            \
                                recsdk::sim::SrcLoc loc = {}) {                                    \
        static_assert(std::is_same_v<T, U>, "ReduceDataBlock: dst and src have one type");         \
        static_assert(reduceType != ReduceType::NONE, "ReduceDataBlock: SUM, MAX or MIN");         \
        if constexpr (reduceType == ReduceType::SUM)                                               \
            BlockReduceSum<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride,   \
                                         srcRepStride, loc);                                       \
        else if constexpr (reduceType == ReduceType::MAX)                                          \
            BlockReduceMax<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride,   \
                                         srcRepStride, loc);                                       \
        else                                                                                       \
            BlockReduceMin<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride,   \
                                         srcRepStride, loc);                                       \
    }                                                                                              \
    template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>                \
    inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, MASK_T mask,  \
                               const int32_t repeatTime, const int32_t dstRepStride,               \
                               const int32_t srcBlkStride, const int32_t srcRepStride,             \
                               recsdk::sim::SrcLoc loc = {}) {                                     \
        static_assert(std::is_same_v<T, U>, "ReducePairElem: dst and src have one type");          \
        static_assert(reduceType == ReduceType::SUM, "ReducePairElem: only ReduceType::SUM");      \
        PairReduceSum<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride,        \
                                    srcRepStride, loc);                                            \
    }                                                                                              \
    template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>                \
    inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, MASK_T mask,    \
                             const int32_t repeatTime, const int32_t dstRepStride,                 \
                             const int32_t srcBlkStride, const int32_t srcRepStride,               \
                             ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,                   \
                             recsdk::sim::SrcLoc loc = {}) {                                       \
        static_assert(std::is_same_v<T, U>, "ReduceRepeat: dst and src have one type");            \
        static_assert(reduceType != ReduceType::NONE, "ReduceRepeat: SUM, MAX or MIN");            \
        if constexpr (reduceType == ReduceType::SUM)                                               \
            WholeReduceSum<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,   \
                                         srcRepStride, loc);                                       \
        else if constexpr (reduceType == ReduceType::MAX)                                          \
            WholeReduceMax<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,   \
                                         srcRepStride, order, loc);                                \
        else                                                                                       \
            WholeReduceMin<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,   \
                                         srcRepStride, order, loc);                                \
    }
RECSDK_SIM_UNIFIED(const uint64_t*)
RECSDK_SIM_UNIFIED(const int32_t)
#undef RECSDK_SIM_UNIFIED

// RepeatReduceSum: the older name of ReduceRepeat<ReduceType::SUM> (接口变更说明.md: repeatTime
// before the mask count, and a dstBlkStride that is not used); dav_c220 issues the same
// instruction as WholeReduceSum's count form (vcadd, the mask set from the count).
template <typename T, bool isSetMask = true>
inline void RepeatReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                            const int32_t repeatTime, const int32_t mask,
                            const int32_t dstBlkStride, const int32_t srcBlkStride,
                            const int32_t dstRepStride, const int32_t srcRepStride,
                            recsdk::sim::SrcLoc loc = {}) {
    (void)dstBlkStride;
    WholeReduceSumLevel0(
        dst, src,
        recsdk::sim::PlanFromCount<T>(static_cast<uint64_t>(mask), static_cast<uint8_t>(repeatTime),
                                      isSetMask, "RepeatReduceSum", loc),
        dstRepStride, srcBlkStride, srcRepStride, loc, "RepeatReduceSum");
}

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_REDUCE_H
