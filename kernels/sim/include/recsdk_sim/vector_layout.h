// Data-layout vector instructions: Gatherb (gather by 32-byte block), Transpose (16 x 16 b16 and
// the enhanced NCHW <-> NHWC form) and TransDataTo5HD (vnchwconv: 16 blocks in, 16 out).
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/):
// - 离散与聚合/Gatherb(ISASI).md: repeat i, block j: the 32 bytes at src + offset[8 i + j] (a
//   byte offset, 32-byte aligned) go to dst block i * dstRepStride + j * dstBlkStride
//   (dstBlkStride 0 counts as 1); A2/A3 types uint16_t and uint32_t; repeatTime 0 is a no-op;
//   dst and src not the same memory.
// - 数据排布转换/Transpose.md: the plain form transposes one 16 x 16 matrix of int16_t /
//   uint16_t / half (src and dst may be one tensor). The enhanced form (TransposeParamsExt):
//   TRANSPOSE_ND2ND_B16 (uint16_t, hSize = wSize = 16), TRANSPOSE_NCHW2NHWC and
//   TRANSPOSE_NHWC2NCHW (8-, 16- and 32-bit types but bfloat16_t; cSize <= 4095, hSize * wSize
//   <= 4095 and a whole number of 32-byte blocks; any size 0 is a no-op; src and dst not shared;
//   sharedTmpBuffer at least (cSize + 2) resp. (2 cSize + 1) * h0 * w0 * sizeof(T) bytes, h0 = 32
//   for 8-bit types else 16, w0 = 32 / sizeof(T)); TRANSPOSE_TYPE_NONE does nothing; the other
//   types are marked unsupported ("当前不支持") and refused.
// - 数据排布转换/TransDataTo5HD.md: one repeat reads the 16 source blocks and writes the 16
//   destination blocks. b16: dst block i element k = src block k element i. b32: column j of the
//   16 source blocks (8 elements each) fills two blocks, dst 2j from sources 0-7 and dst 2j + 1
//   from sources 8-15 - the layout the page's NCHW -> NC1HWC0 recipe (C0 = 16, consecutive
//   destination blocks) produces. b8: dst block i gets, in its low or high 16 bytes
//   (dstHighHalf), byte i (srcHighHalf: i + 16) of each of the 16 source blocks; its other half is
//   untouched. Repeat r adds r * dstRepStride / srcRepStride blocks to every address, except that
//   with repeatTimes = 1 the one repeat already starts a stride on (the page's note). Three forms:
//   LocalTensor lists, uint64_t address lists (GetPhyAddr values), and two uint64_t tensors holding
//   the 16 addresses each (read by the vector unit, which the page's __in_pipe__(S) marks).
// Each instruction is one vector instruction on PIPE_V; the cost model counts its bytes in
// 256-byte repeats as the other vector instructions do.
#ifndef RECSDK_SIM_VECTOR_LAYOUT_H
#define RECSDK_SIM_VECTOR_LAYOUT_H

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "recsdk_sim/pipe.h"
#include "recsdk_sim/vector_masked.h"

namespace AscendC {

constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

struct GatherRepeatParams {
    GatherRepeatParams() {}
    GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW,
};

struct TransDataTo5HDParams {
    constexpr TransDataTo5HDParams() = default;
    constexpr TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn,
                                   const uint8_t repeatTimesIn, const uint16_t dstRepStrideIn,
                                   const uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn),
          srcHighHalf(srcHighHalfIn),
          repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

struct TransposeParamsExt {
    constexpr TransposeParamsExt() = default;
    constexpr TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn,
                                 const uint16_t hSizeIn, const uint16_t wSizeIn,
                                 const TransposeType transposeTypeIn)
        : nSize(nSizeIn),
          cSize(cSizeIn),
          hSize(hSizeIn),
          wSize(wSizeIn),
          transposeType(transposeTypeIn) {}
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

}  // namespace AscendC

namespace recsdk::sim {

// A vector instruction that moved `bytes` (of the widest operand) in whole 256-byte repeats.
inline void VecDoneBytes(uint64_t elements, uint64_t bytes) {
    auto& s = Stats();
    const uint64_t repeats = (bytes + 255) / 256;
    s.vector_elements += elements;
    s.vector_repeats += repeats;
    ++s.vector_instrs;
    ModelVector(repeats);
}

// One 32-byte block of an operand given by address: its bytes and the buffer holding it, for the
// hazard checker.
struct UbBlock {
    uint8_t* ptr = nullptr;
    BufSlot* slot = nullptr;
};

// The bytes at UB offset `off` (from a GetPhyAddr value): they must lie in a live unified-buffer
// buffer of this core, as the tensors of the other instructions must.
inline UbBlock UbBlockAt(uint64_t off, uint64_t bytes, const char* call, const SrcLoc& loc,
                         const char* what) {
    CoreState& c = Core();
    for (const auto& q : c.queues) {
        for (const auto& s : q->slots) {
            if (s->l1 || off < s->offset || off + bytes > uint64_t(s->offset) + s->bytes)
                continue;
            if (!s->is_tbuf && s->state == 0) {
                Fail(call, loc,
                     std::string(what) + " address (UB offset " + std::to_string(off) +
                         ") is in a buffer freed back to its queue");
            }
            return UbBlock{c.ub + off, s.get()};
        }
    }
    Fail(call, loc,
         std::string(what) + " address (UB offset " + std::to_string(off) + ", " +
             std::to_string(bytes) + " bytes) is not inside a buffer the TPipe allocated");
}

template <typename T>
inline UbBlock UbBlockOf(const AscendC::LocalTensor<T>& t, uint64_t byte, uint64_t bytes,
                         const char* call, const SrcLoc& loc, const char* what) {
    t.Validate(call, loc);
    t.InUb(call, loc);
    CheckUbAligned(t.SimData(), call, loc, what);
    if (byte + bytes > t.GetLength()) {
        Fail(call, loc,
             std::string(what) + ": bytes [" + std::to_string(byte) + ", " +
                 std::to_string(byte + bytes) + ") outside the " + std::to_string(t.GetLength()) +
                 "-byte tensor");
    }
    return UbBlock{reinterpret_cast<uint8_t*>(t.SimData()) + byte, t.SimSlot()};
}

inline void BlockAccess(const UbBlock& b, uint64_t bytes, Acc acc, const char* call,
                        const SrcLoc& loc) {
    if (b.slot != nullptr)
        HzAccess(b.slot->hz, b.ptr, bytes, Pipe::V, acc, call, loc);
}

// TransDataTo5HD on resolved addresses: dst[i] / src[k] are the list's blocks, `resolve(list,
// i, byte, bytes)` gives the block `byte` bytes after address i.
template <typename T, typename Resolve>
inline void TransDataTo5HDRun(const AscendC::TransDataTo5HDParams& p, Resolve&& resolve,
                              const SrcLoc& loc) {
    const char* call = "TransDataTo5HD";
    constexpr bool ok =
        (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4) && !std::is_same_v<T, bfloat16_t>;
    VecType<ok, T>(call, loc);
    if ((p.dstHighHalf || p.srcHighHalf) && sizeof(T) != 1) {
        Fail(call, loc, "dstHighHalf / srcHighHalf apply to int8_t / uint8_t only");
    }
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        // The page: with one repeat, the addresses already move by a stride.
        const uint64_t step = p.repeatTimes == 1 ? 1 : r;
        const uint64_t src_off = step * p.srcRepStride * 32, dst_off = step * p.dstRepStride * 32;
        uint8_t in[16][32];
        for (int k = 0; k < 16; ++k) {
            const UbBlock b = resolve(false, k, src_off, 32);
            BlockAccess(b, 32, Acc::kRead, call, loc);
            std::memcpy(in[k], b.ptr, 32);
        }
        uint8_t out[16][32];
        uint64_t out_at = 0, out_bytes = 32;  // the part of each dst block written
        if constexpr (sizeof(T) == 2) {
            for (int i = 0; i < 16; ++i)
                for (int k = 0; k < 16; ++k)
                    std::memcpy(&out[i][2 * k], &in[k][2 * i], 2);
        } else if constexpr (sizeof(T) == 4) {
            for (int j = 0; j < 8; ++j)
                for (int h = 0; h < 2; ++h)
                    for (int m = 0; m < 8; ++m)
                        std::memcpy(&out[2 * j + h][4 * m], &in[8 * h + m][4 * j], 4);
        } else {
            out_at = p.dstHighHalf ? 16 : 0;
            out_bytes = 16;
            const int col = p.srcHighHalf ? 16 : 0;
            for (int i = 0; i < 16; ++i)
                for (int k = 0; k < 16; ++k)
                    out[i][out_at + k] = in[k][col + i];
        }
        for (int i = 0; i < 16; ++i) {
            const UbBlock b = resolve(true, i, dst_off + out_at, out_bytes);
            BlockAccess(b, out_bytes, Acc::kWrite, call, loc);
            std::memcpy(b.ptr, &out[i][out_at], out_bytes);
        }
    }
    VecDoneBytes(uint64_t(p.repeatTimes) * 512 / sizeof(T), uint64_t(p.repeatTimes) * 512);
}

template <typename T>
inline void TransposeNchw(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                          const AscendC::LocalTensor<uint8_t>& tmp,
                          const AscendC::TransposeParamsExt& p, const SrcLoc& loc) {
    const char* call = "Transpose";
    constexpr bool ok =
        (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4) && !std::is_same_v<T, bfloat16_t>;
    VecType<ok, T>(call, loc);
    const uint64_t n = p.nSize, c = p.cSize, hw = uint64_t(p.hSize) * p.wSize;
    if (c > 4095 || hw > 4095) {
        Fail(call, loc,
             "cSize " + std::to_string(c) + " or hSize * wSize " + std::to_string(hw) +
                 " outside [0, 4095]");
    }
    if (hw * sizeof(T) % 32 != 0) {
        Fail(call, loc,
             "hSize * wSize * sizeof(T) = " + std::to_string(hw * sizeof(T)) +
                 " bytes is not a whole number of 32-byte blocks");
    }
    if (n == 0 || c == 0 || hw == 0)
        return;  // the page: nothing is computed or written
    const bool to_nhwc = p.transposeType == AscendC::TransposeType::TRANSPOSE_NCHW2NHWC;
    const uint64_t h0 = sizeof(T) == 1 ? 32 : 16, w0 = 32 / sizeof(T);
    const uint64_t need = (to_nhwc ? c + 2 : 2 * c + 1) * h0 * w0 * sizeof(T);
    const uint64_t count = n * c * hw;
    VecOperand(dst, static_cast<int32_t>(count), call, loc);
    VecOperand(src, static_cast<int32_t>(count), call, loc);
    tmp.Validate(call, loc);
    tmp.InUb(call, loc);
    CheckUbAligned(tmp.SimData(), call, loc, "sharedTmpBuffer");
    if (tmp.GetLength() < need) {
        Fail(call, loc,
             "sharedTmpBuffer holds " + std::to_string(tmp.GetLength()) +
                 " bytes; this transpose " + "needs at least " + std::to_string(need) +
                 " (Transpose.md's table)");
    }
    const auto* s0 = reinterpret_cast<const uint8_t*>(src.SimData());
    const auto* d0 = reinterpret_cast<const uint8_t*>(dst.SimData());
    if (s0 < d0 + count * sizeof(T) && d0 < s0 + count * sizeof(T))
        Fail(call, loc, "src and dst overlap (not allowed for NCHW <-> NHWC)");
    VecRead(src, count, call, loc);
    tmp.SimAccess(0, need, Pipe::V, Acc::kWrite, call, loc);
    VecWrite(dst, count, call, loc);
    const T* a = src.SimData();
    T* d = dst.SimData();
    for (uint64_t b = 0; b < n; ++b) {
        for (uint64_t ch = 0; ch < c; ++ch) {
            for (uint64_t x = 0; x < hw; ++x) {
                const uint64_t nchw = (b * c + ch) * hw + x, nhwc = (b * hw + x) * c + ch;
                if (to_nhwc)
                    d[nhwc] = a[nchw];
                else
                    d[nchw] = a[nhwc];
            }
        }
    }
    VecDoneBytes(count, count * sizeof(T));
}

template <typename T>
inline void Transpose16(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        const char* call, const SrcLoc& loc) {
    VecOperand(dst, 256, call, loc);
    VecOperand(src, 256, call, loc);
    VecReadSrc(src, dst, 256, call, loc);
    VecWrite(dst, 256, call, loc);
    T m[256];
    std::memcpy(m, src.SimData(), sizeof(m));
    T* d = dst.SimData();
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j)
            d[i * 16 + j] = m[j * 16 + i];
    VecDoneBytes(256, 256 * sizeof(T));
}

}  // namespace recsdk::sim

namespace AscendC {

template <typename T>
inline void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                    const LocalTensor<uint32_t>& offset, const uint8_t repeatTime,
                    const GatherRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "Gatherb";
    constexpr bool ok = std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t>;
    VecType<ok, T>(call, loc);
    if (repeatTime == 0)
        return;  // Gatherb(ISASI).md: a no-op
    const uint64_t blocks = uint64_t(repeatTime) * 8;
    VecOperand(offset, static_cast<int32_t>(blocks), call, loc);
    src.Validate(call, loc);
    src.InUb(call, loc);
    CheckUbAligned(src.SimData(), call, loc, "source");
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    CheckUbAligned(dst.SimData(), call, loc, "destination");
    if (static_cast<const void*>(src.SimData()) == static_cast<const void*>(dst.SimData()))
        Fail(call, loc, "dst and src are the same memory");
    VecRead(offset, blocks, call, loc);
    const uint32_t* off = offset.SimData();
    const uint64_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
    std::vector<uint8_t> got(blocks * 32);
    for (uint64_t b = 0; b < blocks; ++b) {
        if (off[b] % 32 != 0) {
            Fail(call, loc,
                 "offset[" + std::to_string(b) + "] = " + std::to_string(off[b]) +
                     " is not a multiple of 32 bytes");
        }
        const UbBlock s = UbBlockOf(src, off[b], 32, call, loc, "source block");
        BlockAccess(s, 32, Acc::kRead, call, loc);
        std::memcpy(&got[b * 32], s.ptr, 32);
    }
    for (uint64_t b = 0; b < blocks; ++b) {
        const uint64_t at = ((b / 8) * repeatParams.dstRepStride + (b % 8) * blk) * 32;
        const UbBlock d = UbBlockOf(dst, at, 32, call, loc, "destination block");
        BlockAccess(d, 32, Acc::kWrite, call, loc);
        std::memcpy(d.ptr, &got[b * 32], 32);
    }
    VecDoneBytes(blocks * 32 / sizeof(T), blocks * 32);
}

template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                      recsdk::sim::SrcLoc loc = {}) {
    constexpr bool ok =
        std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> || std::is_same_v<T, half>;
    recsdk::sim::VecType<ok, T>("Transpose", loc);
    recsdk::sim::Transpose16(dst, src, "Transpose", loc);
}

template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                      const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const TransposeParamsExt& transposeParams, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    switch (transposeParams.transposeType) {
        case TransposeType::TRANSPOSE_TYPE_NONE:
            return;  // Transpose.md: the API does nothing
        case TransposeType::TRANSPOSE_ND2ND_B16:
            VecType<std::is_same_v<T, uint16_t>, T>("Transpose", loc);
            if (transposeParams.hSize != 16 || transposeParams.wSize != 16) {
                Fail("Transpose", loc, "TRANSPOSE_ND2ND_B16 takes hSize = wSize = 16");
            }
            Transpose16(dst, src, "Transpose", loc);
            return;
        case TransposeType::TRANSPOSE_NCHW2NHWC:
        case TransposeType::TRANSPOSE_NHWC2NCHW:
            TransposeNchw(dst, src, sharedTmpBuffer, transposeParams, loc);
            return;
        default:
            Fail("Transpose", loc,
                 "TransposeType " + std::to_string(int(transposeParams.transposeType)) +
                     " is marked unsupported (当前不支持) in Transpose.md");
    }
}

template <typename T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams,
                           recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    TransDataTo5HDRun<T>(
        nchwconvParams,
        [&](bool is_dst, int i, uint64_t byte, uint64_t bytes) {
            return is_dst ? UbBlockOf(dstList[i], byte, bytes, "TransDataTo5HD", loc, "dstList")
                          : UbBlockOf(srcList[i], byte, bytes, "TransDataTo5HD", loc, "srcList");
        },
        loc);
}

template <typename T>
inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE],
                           uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams,
                           recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    TransDataTo5HDRun<T>(
        nchwconvParams,
        [&](bool is_dst, int i, uint64_t byte, uint64_t bytes) {
            const uint64_t base = is_dst ? dstList[i] : srcList[i];
            const char* what = is_dst ? "dstList" : "srcList";
            if (base % 32 != 0) {
                Fail("TransDataTo5HD", loc,
                     std::string(what) + "[" + std::to_string(i) + "] (UB offset " +
                         std::to_string(base) + ") is not 32-byte aligned");
            }
            return UbBlockAt(base + byte, bytes, "TransDataTo5HD", loc, what);
        },
        loc);
}

template <typename T>
inline void TransDataTo5HD(const LocalTensor<uint64_t>& dst, const LocalTensor<uint64_t>& src,
                           const TransDataTo5HDParams& nchwconvParams,
                           recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "TransDataTo5HD";
    uint64_t lists[2][NCHW_CONV_ADDR_LIST_SIZE];
    const LocalTensor<uint64_t>* holders[2] = {&dst, &src};
    for (int h = 0; h < 2; ++h) {
        VecOperand(*holders[h], NCHW_CONV_ADDR_LIST_SIZE, call, loc);
        VecRead(*holders[h], NCHW_CONV_ADDR_LIST_SIZE, call, loc);
        std::memcpy(lists[h], holders[h]->SimData(), sizeof(lists[h]));
    }
    TransDataTo5HD<T>(lists[0], lists[1], nchwconvParams, loc);
}

// ---- BilinearInterpolation(ISASI).md: on Atlas A2/A3 a software API, as the page's four steps
// describe it: Gatherb of hRepeat * vRepeat repeats of src0 blocks (8 byte offsets a repeat
// from src0Offset) into sharedTmpBuffer; Brcb of src1 behind them (each value filling a block);
// Mul of the two in counter mode over every gathered element (repeatMode false: all 8 blocks of
// a repeat by one src1 value; true: block b by value 8 * repeat + b); per vertical repeat, Add
// of its hRepeat products in order into the first (with the mask); Adds of 0 to place each sum
// in dst (dstBlkStride, vROffset elements between vertical repeats). The steps run as the
// emulated instructions, so each records its accesses and cost, leaves the mask registers in
// normal mode with every lane on, and rounds in half where they do.
template <typename T, typename M>
inline void BilinearInterpolationSteps(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                                       const LocalTensor<uint32_t>& src0Offset,
                                       const LocalTensor<T>& src1, M mask, uint8_t hRepeat,
                                       bool repeatMode, uint16_t dstBlkStride, uint16_t vROffset,
                                       uint8_t vRepeat, const LocalTensor<uint8_t>& sharedTmpBuffer,
                                       const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    const char* call = "BilinearInterpolation";
    VecType<std::is_same_v<T, half>, T>(call, loc);
    if (hRepeat == 0 || vRepeat == 0)
        Fail(call, loc, "hRepeat and vRepeat must be in [1, 255]");
    if (uint32_t(hRepeat) * vRepeat > 255) {
        Fail(call, loc,
             "hRepeat * vRepeat = " + std::to_string(uint32_t(hRepeat) * vRepeat) +
                 " exceeds 255: dav_c220 gathers them as one 8-bit repeat count");
    }
    if (vROffset < 128 || (uint32_t(vROffset) * sizeof(T)) % 32 != 0) {
        Fail(call, loc,
             "vROffset " + std::to_string(vROffset) +
                 " must be in [128, 65535) with vROffset * sizeof(T) a multiple of 32");
    }
    const uint64_t need = uint64_t(src0.GetSize()) * 32 + uint64_t(src1.GetSize()) * 32;
    if (sharedTmpBuffer.GetSize() < need) {
        Fail(call, loc,
             "sharedTmpBuffer holds " + std::to_string(sharedTmpBuffer.GetSize()) +
                 " bytes; the page asks src0.GetSize() * 32 + src1.GetSize() * 32 = " +
                 std::to_string(need));
    }
    constexpr uint32_t rep = 256 / sizeof(T);
    const uint32_t inner = uint32_t(hRepeat) * vRepeat;
    LocalTensor<T> tmp = sharedTmpBuffer.ReinterpretCast<T>();
    Gatherb(tmp.template ReinterpretCast<uint16_t>(), src0.template ReinterpretCast<uint16_t>(),
            src0Offset, static_cast<uint8_t>(inner), GatherRepeatParams(), loc);
    const uint32_t brcbAt = inner * rep;
    Brcb(tmp[brcbAt], src1, static_cast<uint8_t>(src1.GetSize() / 8), BrcbRepeatParams(), loc);
    PipeBarrier<PIPE_V>();
    BinaryRepeatParams mulParams;
    if (!repeatMode) {
        mulParams.src0RepStride = 1;
        mulParams.src0BlkStride = 0;
    }
    SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(0, inner * rep);
    Mul<T, false>(tmp, tmp[brcbAt], tmp, mask, static_cast<uint8_t>(inner), mulParams, loc);
    SetMaskNorm();
    ResetMask();
    PipeBarrier<PIPE_V>();
    BinaryRepeatParams addParams;
    addParams.dstRepStride = 0;
    addParams.src1RepStride = 0;
    for (uint32_t i = 0; i < vRepeat && hRepeat > 1; ++i) {
        Add(tmp[i * hRepeat * rep], tmp[(i * hRepeat + 1) * rep], tmp[i * hRepeat * rep], mask,
            static_cast<uint8_t>(hRepeat - 1), addParams, loc);
    }
    PipeBarrier<PIPE_V>();
    UnaryRepeatParams addsParams;
    addsParams.srcRepStride = static_cast<uint8_t>(hRepeat * DEFAULT_REPEAT_STRIDE);
    addsParams.dstBlkStride = dstBlkStride;
    addsParams.dstRepStride = static_cast<uint8_t>(vROffset * sizeof(T) / ONE_BLK_SIZE);
    Adds(dst, tmp, T(0.0f), mask, vRepeat, addsParams, loc);
}

template <typename T>
inline void BilinearInterpolation(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                                  const LocalTensor<uint32_t>& src0Offset,
                                  const LocalTensor<T>& src1, uint64_t mask[], uint8_t hRepeat,
                                  bool repeatMode, uint16_t dstBlkStride, uint16_t vROffset,
                                  uint8_t vRepeat, const LocalTensor<uint8_t>& sharedTmpBuffer,
                                  recsdk::sim::SrcLoc loc = {}) {
    BilinearInterpolationSteps(dst, src0, src0Offset, src1, mask, hRepeat, repeatMode, dstBlkStride,
                               vROffset, vRepeat, sharedTmpBuffer, loc);
}
template <typename T>
inline void BilinearInterpolation(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                                  const LocalTensor<uint32_t>& src0Offset,
                                  const LocalTensor<T>& src1, uint64_t mask, uint8_t hRepeat,
                                  bool repeatMode, uint16_t dstBlkStride, uint16_t vROffset,
                                  uint8_t vRepeat, const LocalTensor<uint8_t>& sharedTmpBuffer,
                                  recsdk::sim::SrcLoc loc = {}) {
    BilinearInterpolationSteps(dst, src0, src0Offset, src1, mask, hRepeat, repeatMode, dstBlkStride,
                               vROffset, vRepeat, sharedTmpBuffer, loc);
}

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_LAYOUT_H
