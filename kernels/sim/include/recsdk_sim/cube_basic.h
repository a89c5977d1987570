// The low-level Cube API of an AIC (基础API/矩阵计算（ISASI）): operands moved GM -> L1 (DataCopy
// into A1/B1 queues, datacopy.h), L1 -> L0A/L0B (LoadData), multiplied into L0C (Mmad) and moved
// out of L0C (Fixpipe). Queues on TPosition::A1/B1/C1 are carved from the AI core's L1, A2 from
// L0A, B2 from L0B and CO1 from L0C, with the SoC's capacities (pipe.h CarveCube, mix.h CubeMem).
//
// Semantics (docs/api/SIMD-API/基础API/矩阵计算（ISASI）/):
// - LoadData_2D.md: repeatTimes fractals of 512 bytes; fractal i comes from fractal startIndex +
//   i * srcStride of the source and goes to fractal i * (1 + dstGap) of the destination;
//   ifTranspose transposes each fractal (b16 only, L1 -> L0A/L0B only). L1 -> L0 runs on MTE1, GM
//   -> L0 on MTE2. Destination in L0A/L0B 512-byte aligned, L1 addresses 32-byte aligned.
//   repeatTimes = 0 is a no-op.
// - Mmad.md (Atlas A2/A3, table 2): C [m, n] (+)= A [m, k] * B [k, n]; A in L0A as Zz (fractals of
//   16 x C0 rows-first, each row-major; C0 = 32 bytes of the type), B in L0B as Zn (fractals of C0
//   x 16 rows-first, each column-major), C in L0C as Nz (column groups of 16, each align(m, 16)
//   rows of 16 elements). half/bfloat16_t/float in, float accumulation and C. cmatrixInitVal
//   (default true) starts C at 0; false with cmatrixSource = false accumulates onto L0C (as the
//   deprecated isBias = true does). dst 1024-byte, fm/filter 512-byte aligned. Runs on PIPE_M.
// - Fixpipe（L0C到GM数据搬运）.md: mSize x nSize of the Nz matrix (srcStride: column-group distance
//   in C0_Size = 16 elements, i.e. align(m, 16)) to GM; with CFG_ROW_MAJOR (NZ2ND) row i of the
//   ND result at dst + i * dstStride elements, ndNum matrices srcNdStride x 256 elements and
//   dstNdStride elements apart. quantPre NoQuant (float -> float), F322F16 / F322BF16 (round to
//   nearest even, CAST_RINT); reluEn clamps at 0 first. nSize a multiple of 16. Runs on PIPE_FIX.
//
// Pipes for the hazard checker (hazard.h): LoadData reads L1 and writes L0A/L0B on MTE1 (MTE2
// from GM), Mmad reads L0A/L0B and writes (accumulating: reads too) L0C on M, Fixpipe reads L0C on
// FIX. The compiler inserts nothing on the Cube side (核内同步/关键特性说明.md), so the kernel's
// queues (A1: MTE2 -> MTE1, A2/B2: MTE1 -> M, CO1: M -> FIX) or SetFlag/WaitFlag<HardEvent::
// MTE2_MTE1 / MTE1_M / M_FIX / ...> must order them. A Fixpipe result in GM is a Cube result for
// the cross-core check (mix.h).
//
// Refused, by name: LoadData 3D and SetFmatrix (img2col of feature maps), LoadDataWithTranspose's
// V2 parameters and decreasing addresses, Mmad with a bias table (C2) or cmatrixSource, Fixpipe to
// L1/UB, NZ/DN outputs, channel split and the quantisation modes other than the float casts,
// int8/int4 inputs.
#ifndef RECSDK_SIM_CUBE_BASIC_H
#define RECSDK_SIM_CUBE_BASIC_H

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "recsdk_sim/hazard.h"
#include "recsdk_sim/mix.h"
#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"

// Fixpipe's quantisation modes (the CPU debug stubs declare them in the global namespace).
#ifndef RECSDK_SIM_HAS_QUANT_MODE
#define RECSDK_SIM_HAS_QUANT_MODE
enum class QuantMode_t {
    NoQuant,
    F322F16,
    F322BF16,
    DEQF16,
    VDEQF16,
    DEQS16,
    VDEQS16,
    REQ8,
    VREQ8,
    REQ4,
    VREQ4,
    QF322B8_PRE,
    VQF322B8_PRE,
};
#endif

namespace AscendC {

// include/basic_api/kernel_struct_mm.h field names and order.
struct LoadData2DParams {
    LoadData2DParams() {}
    LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn,
                     const uint16_t srcStrideIn, const uint8_t sidIn, const uint16_t dstGapIn,
                     const bool ifTransposeIn, const uint8_t addrModeIn)
        : startIndex(startIndexIn),
          dstGap(dstGapIn),
          srcStride(srcStrideIn),
          ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn),
          sid(sidIn),
          addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = false;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;

struct LoadData2dTransposeParams {
    LoadData2dTransposeParams() {}
    LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn,
                              const uint16_t srcStrideIn, const uint16_t dstGapIn,
                              const uint16_t dstfracGapIn, const uint8_t addrModeIn = 0)
        : startIndex(startIndexIn),
          repeatTimes(repeatTimesIn),
          srcStride(srcStrideIn),
          dstGap(dstGapIn),
          dstFracGap(dstfracGapIn),
          addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};

struct MmadParams {
    MmadParams() {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn,
               const int32_t fmOffsetIn, const bool enSsparseIn, const bool enWinogradAIn,
               const bool enWinogradBIn)
        : m(mIn),
          n(nIn),
          k(kIn),
          isBias(isBiasIn),
          fmOffset(fmOffsetIn),
          enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn),
          enWinogradB(enWinogradBIn) {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
               const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn),
          n(nIn),
          k(kIn),
          unitFlag(unitFlagIn),
          cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn) {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
};

// include/basic_api/kernel_struct_fixpipe.h.
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };

struct FixpipeConfig {
    CO2Layout format;
    constexpr FixpipeConfig(CO2Layout format_) : format(format_) {}
    constexpr FixpipeConfig(CO2Layout format_, bool) : format(format_) {}
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
    FixpipeParamsV220() {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn)
        : nSize(nSizeIn),
          mSize(mSizeIn),
          srcStride(srcStrideIn),
          dstStride(dstStrideIn),
          reluEn(reluEnIn) {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                      const int64_t deqScalarIn, const uint16_t ndNumIn,
                      const uint16_t srcNdStrideIn, const uint16_t dstNdStrideIn,
                      const uint8_t unitFlagIn, const bool isChannelSplitIn = false)
        : nSize(nSizeIn),
          mSize(mSizeIn),
          srcStride(srcStrideIn),
          dstStride(dstStrideIn),
          quantPre(quantPreIn),
          deqScalar(static_cast<uint64_t>(deqScalarIn)),
          ndNum(ndNumIn),
          srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn),
          reluEn(reluEnIn),
          unitFlag(unitFlagIn),
          isChannelSplit(isChannelSplitIn) {}
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};

// LoadData 3D (img2col) and its feature-map registers: refused where a kernel uses them.
template <typename T>
struct LoadData3DParamsV2 {
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint16_t strideW = 1;
    uint16_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = 0;
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
    uint16_t channelSize = 0;
    uint8_t padList[4] = {0, 0, 0, 0};
    uint16_t l1H = 0;
    uint16_t l1W = 0;
};

}  // namespace AscendC

namespace recsdk::sim {

template <typename T>
constexpr bool kCubeBasicIn =
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t> || std::is_same_v<T, float>;

// The memory a local tensor is in, and its byte offset there.
template <typename T>
inline CubeMem MemOf(const AscendC::LocalTensor<T>& t) {
    return CubeMemOf(static_cast<AscendC::TPosition>(t.GetPosition()));
}
template <typename T>
inline uint64_t MemOffset(const AscendC::LocalTensor<T>& t) {
    return t.UbOffset() - CubeMemBase(*Core().launch->soc, MemOf(t));
}

template <typename T>
inline void NeedMem(const AscendC::LocalTensor<T>& t, std::initializer_list<CubeMem> mems,
                    const char* what, uint64_t align, const char* call, const SrcLoc& loc) {
    t.Validate(call, loc);
    const CubeMem m = MemOf(t);
    bool ok = false;
    std::string names;
    for (CubeMem k : mems) {
        ok = ok || k == m;
        names += std::string(names.empty() ? "" : " or ") + CubeMemName(k);
    }
    if (!ok || !t.SimInL1()) {
        Fail(call, loc,
             std::string(what) + " must be in " + names + " (a queue on TPosition " +
                 (m == CubeMem::kNone
                      ? "A1/B1/A2/B2/CO1"
                      : CubePosName(static_cast<AscendC::TPosition>(t.GetPosition()))) +
                 "), not TPosition " +
                 CubePosName(static_cast<AscendC::TPosition>(t.GetPosition())));
    }
    if (MemOffset(t) % align != 0) {
        Fail(call, loc,
             std::string(what) + " starts at " + CubeMemName(m) + " offset " +
                 std::to_string(MemOffset(t)) + ", not " + std::to_string(align) + "-byte aligned");
    }
}

template <typename T>
inline void NeedBytes(const AscendC::LocalTensor<T>& t, uint64_t bytes, const char* what,
                      const char* call, const SrcLoc& loc) {
    if (bytes > uint64_t(t.GetSize()) * sizeof(T)) {
        Fail(call, loc,
             std::string(what) + " needs " + std::to_string(bytes) + " bytes, the tensor has " +
                 std::to_string(uint64_t(t.GetSize()) * sizeof(T)));
    }
}

inline void NeedAic(const char* call, const SrcLoc& loc) {
    if (Core().core_type != kAic)
        Fail(call, loc,
             "the Cube instructions run on the AIC (guard them with `if ASCEND_IS_AIC`)");
}

// One 512-byte fractal, transposed as a 16 x 16 matrix of 2-byte elements.
inline void TransposeFractal16(uint8_t* dst, const uint8_t* src) {
    for (int r = 0; r < 16; ++r) {
        for (int c = 0; c < 16; ++c)
            std::memcpy(dst + (c * 16 + r) * 2, src + (r * 16 + c) * 2, 2);
    }
}

}  // namespace recsdk::sim

namespace AscendC {

// LoadData_2D.md, L1 (A1/B1) -> L0A (A2) / L0B (B2).
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                     const LoadData2DParams& p, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "LoadData(L1->L0A/L0B)";
    NeedAic(call, loc);
    NeedMem(dst, {CubeMem::kL0A, CubeMem::kL0B}, "the destination", 512, call, loc);
    NeedMem(src, {CubeMem::kL1}, "the source", 32, call, loc);
    if (p.ifTranspose && sizeof(T) != 2) {
        Fail(call, loc,
             "ifTranspose transposes 16 x 16 fractals of b16 types only (LoadData_2D.md); for "
             "b8/b32 use LoadDataWithTranspose");
    }
    if (p.repeatTimes == 0)
        return;
    constexpr uint64_t kFrac = 512;
    const uint64_t srcSpan =
        (uint64_t(p.startIndex) + uint64_t(p.repeatTimes - 1) * p.srcStride + 1) * kFrac;
    const uint64_t dstSpan = (uint64_t(p.repeatTimes - 1) * (1 + p.dstGap) + 1) * kFrac;
    NeedBytes(src, srcSpan, "the source fractals", call, loc);
    NeedBytes(dst, dstSpan, "the destination fractals", call, loc);
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        src.SimAccess((p.startIndex + uint64_t(i) * p.srcStride) * kFrac, kFrac, Pipe::MTE1,
                      Acc::kRead, call, loc);
    }
    for (uint32_t i = 0; i < p.repeatTimes; ++i)
        dst.SimAccess(uint64_t(i) * (1 + p.dstGap) * kFrac, kFrac, Pipe::MTE1, Acc::kWrite, call,
                      loc);
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    auto* d = reinterpret_cast<uint8_t*>(dst.SimData());
    uint8_t tmp[kFrac];
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const uint8_t* from = s + (p.startIndex + uint64_t(i) * p.srcStride) * kFrac;
        uint8_t* to = d + uint64_t(i) * (1 + p.dstGap) * kFrac;
        if (p.ifTranspose) {
            TransposeFractal16(tmp, from);
            std::memcpy(to, tmp, kFrac);
        } else {
            std::memmove(to, from, kFrac);
        }
    }
    Core().stats->l1_to_l0_bytes += uint64_t(p.repeatTimes) * kFrac;
}

// LoadData_2D.md, GM -> L0A / L0B on MTE2 (no transpose on this path).
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                     const LoadData2DParams& p, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "LoadData(GM->L0A/L0B)";
    NeedAic(call, loc);
    NeedMem(dst, {CubeMem::kL0A, CubeMem::kL0B}, "the destination", 512, call, loc);
    if (p.ifTranspose)
        Fail(call, loc, "ifTranspose is for L1 -> L0A/L0B only (LoadData_2D.md)");
    if (p.repeatTimes == 0)
        return;
    constexpr uint64_t kFrac = 512;
    const uint64_t dstSpan = (uint64_t(p.repeatTimes - 1) * (1 + p.dstGap) + 1) * kFrac;
    NeedBytes(dst, dstSpan, "the destination fractals", call, loc);
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const uint64_t at = (p.startIndex + uint64_t(i) * p.srcStride) * kFrac;
        if (at + kFrac > uint64_t(src.GetSize()) * sizeof(T)) {
            Fail(call, loc,
                 "fractal " + std::to_string(p.startIndex + uint64_t(i) * p.srcStride) +
                     " is past the end of the GlobalTensor");
        }
        CheckGm(s + at, kFrac, false, call, loc);
    }
    for (uint32_t i = 0; i < p.repeatTimes; ++i)
        dst.SimAccess(uint64_t(i) * (1 + p.dstGap) * kFrac, kFrac, Pipe::MTE2, Acc::kWrite, call,
                      loc);
    auto* d = reinterpret_cast<uint8_t*>(dst.SimData());
    for (uint32_t i = 0; i < p.repeatTimes; ++i)
        std::memcpy(d + uint64_t(i) * (1 + p.dstGap) * kFrac,
                    s + (p.startIndex + uint64_t(i) * p.srcStride) * kFrac, kFrac);
    RecsdkSimCoreStats& st = *Core().stats;
    CountGmRead(st, s, uint64_t(p.repeatTimes) * kFrac);
    st.dma_transfers += 1;
}

// LoadDataWithTranspose.md (LoadData2dTransposeParams; the byte movement of its pseudo-code,
// load_data_with_transpose.py): repeat i takes square startIndex + i * srcStride of the source
// (16 x 16 elements for b16/b32, 32 x 32 for b8) and writes its transpose as fractals of 512 bytes
// from fractal i * (1 + dstGap) of the destination, the square's fractals (1 for b16, 2 for b8
// and b32) 1 + dstFracGap fractals apart. A b16 or b8 square is row-major; a b32 square is two
// 16 x 8 fractals side by side (columns 0-7, then 8-15), and its transpose goes out as the 16 x 8
// fractals of the transposed columns 0-7 and 8-15 (the transposes of the source's rows 0-7 and
// 8-15). L1 -> L0A/L0B on MTE1.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p,
                                  recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4,
                  "LoadDataWithTranspose: b8, b16 or b32 elements (int4b_t is not emulated)");
    const char* call = "LoadDataWithTranspose";
    NeedAic(call, loc);
    NeedMem(dst, {CubeMem::kL0A, CubeMem::kL0B}, "the destination", 512, call, loc);
    NeedMem(src, {CubeMem::kL1}, "the source", 32, call, loc);
    if (p.addrMode != 0)
        Fail(call, loc, "addrMode 1 (decreasing addresses) is not emulated");
    if (p.repeatTimes == 0)
        return;
    constexpr int64_t side = sizeof(T) == 1 ? 32 : 16;  // the square's rows and columns
    constexpr int64_t fracs = sizeof(T) == 2 ? 1 : 2;   // 512-byte fractals per square
    constexpr int64_t fracElems = 512 / sizeof(T);
    constexpr uint64_t squareBytes = uint64_t(fracs) * 512;
    const uint64_t lastSquare = p.startIndex + uint64_t(p.repeatTimes - 1) * p.srcStride;
    NeedBytes(src, (lastSquare + 1) * squareBytes, "the source squares", call, loc);
    const uint64_t lastFrac =
        uint64_t(p.repeatTimes - 1) * (1 + p.dstGap) + uint64_t(fracs - 1) * (1 + p.dstFracGap);
    NeedBytes(dst, (lastFrac + 1) * 512, "the destination fractals", call, loc);
    for (uint32_t i = 0; i < p.repeatTimes; ++i)
        src.SimAccess((p.startIndex + uint64_t(i) * p.srcStride) * squareBytes, squareBytes,
                      Pipe::MTE1, Acc::kRead, call, loc);
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        for (int64_t j = 0; j < fracs; ++j)
            dst.SimAccess((uint64_t(i) * (1 + p.dstGap) + uint64_t(j) * (1 + p.dstFracGap)) * 512,
                          512, Pipe::MTE1, Acc::kWrite, call, loc);
    }
    std::vector<T> square(static_cast<size_t>(side * side));
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const T* s =
            src.SimData() + (p.startIndex + uint64_t(i) * p.srcStride) * (squareBytes / sizeof(T));
        // The square as a row-major side x side matrix.
        for (int64_t r = 0; r < side; ++r) {
            for (int64_t c = 0; c < side; ++c) {
                square[r * side + c] =
                    sizeof(T) == 4 ? s[(c / 8) * 128 + r * 8 + c % 8] : s[r * side + c];
            }
        }
        T* d = dst.SimData() + uint64_t(i) * (1 + p.dstGap) * fracElems;
        for (int64_t j = 0; j < fracs; ++j) {
            T* f = d + j * (1 + p.dstFracGap) * fracElems;
            if constexpr (sizeof(T) == 4) {  // rows c of the transpose, source rows 8j..8j+7
                for (int64_t c = 0; c < 16; ++c) {
                    for (int64_t r = 0; r < 8; ++r)
                        f[c * 8 + r] = square[(8 * j + r) * side + c];
                }
            } else {  // rows 16j.. of the transpose, each a column of the square
                for (int64_t k = 0; k < 16; ++k) {
                    for (int64_t r = 0; r < side; ++r)
                        f[k * side + r] = square[r * side + 16 * j + k];
                }
            }
        }
    }
    Core().stats->l1_to_l0_bytes += uint64_t(p.repeatTimes) * squareBytes;
}

struct LoadData2dTransposeParamsV2 {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint16_t srcFracGap = 0;
    uint8_t addrMode = 0;
};

template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>&, const LocalTensor<T>&,
                                  const LoadData2dTransposeParamsV2&,
                                  recsdk::sim::SrcLoc loc = {}) {
    static_assert(recsdk::sim::kRefused<T>,
                  "LoadDataWithTranspose with LoadData2dTransposeParamsV2 is not emulated; "
                  "LoadData2dTransposeParams is");
}

template <typename T, typename... Rest>
inline void LoadData(const LocalTensor<T>&, const LocalTensor<T>&, const LoadData3DParamsV2<T>&,
                     Rest...) {
    static_assert(recsdk::sim::kRefused<T>,
                  "LoadData with LoadData3DParamsV2 (LoadData_3D.md, img2col of a feature map "
                  "in L1) is not emulated: load matrices with LoadData2DParams");
}

template <typename... Args>
inline void SetFmatrix(Args&&...) {
    static_assert(recsdk::sim::kRefused<Args...>,
                  "SetFmatrix (the feature-map registers of LoadData 3D / img2col, SetFmatrix.md) "
                  "is not emulated: load matrices with LoadData2DParams");
}

// Mmad.md.
template <typename D, typename A, typename B>
inline void Mmad(const LocalTensor<D>& dst, const LocalTensor<A>& fm, const LocalTensor<B>& filter,
                 const MmadParams& p, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(std::is_same_v<A, B> && kCubeBasicIn<A> && std::is_same_v<D, float>,
                  "Mmad emulation: half x half, bfloat16_t x bfloat16_t or float x float into "
                  "float (Mmad.md table; int8/int4 inputs are not emulated)");
    const char* call = "Mmad";
    NeedAic(call, loc);
    NeedMem(dst, {CubeMem::kL0C}, "dst (C)", 1024, call, loc);
    NeedMem(fm, {CubeMem::kL0A}, "fm (A)", 512, call, loc);
    NeedMem(filter, {CubeMem::kL0B}, "filter (B)", 512, call, loc);
    if (p.m > 4095 || p.n > 4095 || p.k > 4095)
        Fail(call, loc, "m, n and k must be in [0, 4095] (Mmad.md)");
    if (p.cmatrixSource)
        Fail(call, loc, "cmatrixSource = true (C from the bias table) is not emulated");
    if (p.m == 0 || p.n == 0 || p.k == 0)
        return;
    constexpr int64_t k0 = 32 / sizeof(A);
    const int64_t m = p.m, n = p.n, k = p.k;
    const int64_t mB = (m + 15) / 16, nB = (n + 15) / 16, kB = (k + k0 - 1) / k0;
    const int64_t mPad = mB * 16;
    NeedBytes(fm, uint64_t(mB * kB) * 512, "A (m x k in Zz fractals)", call, loc);
    NeedBytes(filter, uint64_t(kB * nB) * 512, "B (k x n in Zn fractals)", call, loc);
    NeedBytes(dst, uint64_t(nB * mPad * 16) * sizeof(float), "C (m x n in Nz)", call, loc);
    const bool accumulate = p.isBias || !p.cmatrixInitVal;
    fm.SimAccess(0, uint64_t(mB * kB) * 512, Pipe::M, Acc::kRead, call, loc);
    filter.SimAccess(0, uint64_t(kB * nB) * 512, Pipe::M, Acc::kRead, call, loc);
    const uint64_t cBytes = uint64_t(nB * mPad * 16) * sizeof(float);
    if (accumulate)
        dst.SimAccess(0, cBytes, Pipe::M, Acc::kRead, call, loc);
    dst.SimAccess(0, cBytes, Pipe::M, Acc::kWrite, call, loc);
    const A* a = fm.SimData();
    const B* b = filter.SimData();
    float* c = dst.SimData();
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t q = 0; q < k; ++q)  // Zz: fractal (i / 16, q / k0), row-major inside
            row[q] =
                static_cast<float>(a[((i / 16) * kB + q / k0) * 16 * k0 + (i % 16) * k0 + q % k0]);
        for (int64_t j = 0; j < n; ++j) {
            float* out = c + (j / 16) * mPad * 16 + i * 16 + j % 16;
            float acc = accumulate ? *out : 0.0f;
            for (int64_t q = 0; q < k; ++q) {  // Zn: fractal (q / k0, j / 16), column-major inside
                const float bv = static_cast<float>(
                    b[((q / k0) * nB + j / 16) * k0 * 16 + (j % 16) * k0 + q % k0]);
                acc += row[q] * bv;
            }
            *out = acc;
        }
    }
    RecsdkSimCoreStats& st = *Core().stats;
    const uint64_t issued = uint64_t(mPad * nB * 16 * kB * k0);
    st.cube_macs += issued;
    st.cube_useful_macs += uint64_t(m * n * k);
    const SocInfo& soc = *Core().launch->soc;
    const uint32_t rate = std::is_same_v<A, float> ? soc.cube_macs_f32 : soc.cube_macs_b16;
    st.cube_cycles += (issued + rate - 1) / rate;
}

template <typename D, typename A, typename B, typename Bias>
inline void Mmad(const LocalTensor<D>&, const LocalTensor<A>&, const LocalTensor<B>&,
                 const LocalTensor<Bias>&, const MmadParams&, recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::Fail("Mmad", loc,
                      "Mmad with a bias tensor in the bias table (TPosition::C2) is not emulated; "
                      "add the bias to L0C first and accumulate (cmatrixInitVal = false)");
}

// Fixpipe（L0C到GM数据搬运）.md.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src,
                    const FixpipeParamsV220& p, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(std::is_same_v<U, float> && kCubeBasicIn<T>,
                  "Fixpipe emulation: a float L0C result to float, half or bfloat16_t (int32 "
                  "results and the int8 quantisations are not emulated)");
    static_assert(config.format == CO2Layout::ROW_MAJOR,
                  "Fixpipe emulation: only CFG_ROW_MAJOR (NZ2ND) output is emulated; NZ and "
                  "COLUMN_MAJOR (NZ2DN) outputs are not");
    const char* call = "Fixpipe(L0C->GM)";
    NeedAic(call, loc);
    NeedMem(src, {CubeMem::kL0C}, "the source", 64, call, loc);
    if (p.isChannelSplit)
        Fail(call, loc, "isChannelSplit is not emulated (and not with NZ2ND: Fixpipe.md)");
    QuantMode_t want = QuantMode_t::NoQuant;
    if constexpr (std::is_same_v<T, half>)
        want = QuantMode_t::F322F16;
    if constexpr (std::is_same_v<T, bfloat16_t>)
        want = QuantMode_t::F322BF16;
    if (p.quantPre != want) {
        Fail(call, loc,
             std::string("quantPre must be ") +
                 (want == QuantMode_t::NoQuant   ? "NoQuant for a float"
                  : want == QuantMode_t::F322F16 ? "F322F16 for a half"
                                                 : "F322BF16 for a bfloat16_t") +
                 " destination (Fixpipe.md: it is not derived from the types); other "
                 "quantisation modes (DEQF16, REQ8, QF322B8_PRE, ...) are not emulated");
    }
    if (p.nSize % 16 != 0)
        Fail(call, loc, "nSize " + std::to_string(p.nSize) + " must be a multiple of 16");
    if (p.mSize > 8192)
        Fail(call, loc, "mSize must be in [0, 8192] with NZ2ND");
    if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0)
        return;
    if (p.dstStride < p.nSize)
        Fail(call, loc, "dstStride (elements per ND row) is below nSize");
    const int64_t m = p.mSize, n = p.nSize, ld = p.dstStride;
    const int64_t srcRows = p.srcStride;  // column-group distance in rows of 16 (C0_Size)
    if (srcRows < m) {
        Fail(call, loc,
             "srcStride " + std::to_string(p.srcStride) +
                 " (C0_Size units) is below mSize rounded up to 16: the Nz column groups overlap");
    }
    RecsdkSimCoreStats& st = *Core().stats;
    for (uint32_t nd = 0; nd < p.ndNum; ++nd) {
        const int64_t s0 = int64_t(nd) * p.srcNdStride * 256;
        const int64_t d0 = int64_t(nd) * p.dstNdStride;
        const uint64_t span = uint64_t(s0 + ((n / 16) - 1) * srcRows * 16 + m * 16) * sizeof(float);
        NeedBytes(src, span, "the Nz source", call, loc);
        for (int64_t g = 0; g < n / 16; ++g)
            src.SimAccess(uint64_t(s0 + g * srcRows * 16) * sizeof(float), uint64_t(m * 16) * 4,
                          Pipe::FIX, Acc::kRead, call, loc);
        if (uint64_t(d0 + (m - 1) * ld + n) > dst.GetSize()) {
            Fail(call, loc,
                 "the ND result spans " + std::to_string(d0 + (m - 1) * ld + n) +
                     " elements, the GlobalTensor holds " + std::to_string(dst.GetSize()));
        }
        T* out = dst.SimData() + d0;
        for (int64_t i = 0; i < m; ++i)
            CheckGm(out + i * ld, uint64_t(n) * sizeof(T), true, call, loc);
        const float* in = src.SimData() + s0;
        for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
                float v = in[(j / 16) * srcRows * 16 + i * 16 + j % 16];
                if (p.reluEn && v < 0.0f)
                    v = 0.0f;
                out[i * ld + j] = static_cast<T>(v);
            }
        }
        const uint64_t bytes = uint64_t(m * n) * sizeof(T);
        CountGmWrite(st, out, bytes);
        st.l0c_out_bytes += bytes;
        ++st.dma_transfers;
        XcoreCubeWrote(out, m, uint64_t(n) * sizeof(T), uint64_t(ld) * sizeof(T), false, call, loc);
    }
}

// Fixpipe with a cbufWorkspace (the per-channel quantisation parameters in L1), both targets.
#define RECSDK_SIM_FIXPIPE_WORKSPACE(TENSOR)                                                    \
    template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR,              \
              typename S = uint64_t>                                                            \
    inline void Fixpipe(const TENSOR<T>&, const LocalTensor<U>&, const LocalTensor<S>&,         \
                        const FixpipeParamsV220&, recsdk::sim::SrcLoc = {}) {                   \
        static_assert(recsdk::sim::kRefused<T, U, S>,                                           \
                      "AscendC API Fixpipe with a cbufWorkspace (per-channel quantisation "     \
                      "parameters in L1) is not emulated: the int quantisation modes are not"); \
    }
RECSDK_SIM_FIXPIPE_WORKSPACE(GlobalTensor)
RECSDK_SIM_FIXPIPE_WORKSPACE(LocalTensor)
#undef RECSDK_SIM_FIXPIPE_WORKSPACE

// Fill of L0A/L0B/L1 with a constant (Fill.md's InitConstValueParams form, kernel_struct_mm.h).
template <typename T>
struct InitConstValueParams {
    InitConstValueParams() {}
    InitConstValueParams(const uint16_t repeatTimesIn, const uint16_t blockNumIn,
                         const uint16_t dstGapIn, const T initValueIn)
        : repeatTimes(repeatTimesIn),
          blockNum(blockNumIn),
          dstGap(dstGapIn),
          initValue(initValueIn) {}
    InitConstValueParams(const uint16_t repeatTimesIn, const T initValueIn)
        : repeatTimes(repeatTimesIn), initValue(initValueIn) {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue = 0;
};

template <typename T, typename U = T>
inline void Fill(const LocalTensor<T>&, const InitConstValueParams<U>&) {
    static_assert(recsdk::sim::kRefused<T, U>,
                  "AscendC API Fill of L0A/L0B/L1 with InitConstValueParams is not emulated: "
                  "clear a Cube buffer by loading zeros with LoadData");
}

template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T>&, const LocalTensor<U>&, const FixpipeParamsV220&,
                    recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::Fail("Fixpipe", loc,
                      "L0C -> L1 and L0C -> UB are not emulated (Fixpipe（L0C到UB数据搬运）.md: "
                      "the unified buffer is not a Fixpipe destination on Atlas A2/A3)");
}

}  // namespace AscendC

#endif  // RECSDK_SIM_CUBE_BASIC_H
