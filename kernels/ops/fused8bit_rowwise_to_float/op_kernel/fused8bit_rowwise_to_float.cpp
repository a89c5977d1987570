// Fused8BitRowwiseToFloat: each row of D bytes, fp32 scale and fp32 bias becomes D floats.
//
// fbgemm's CPU op computes byte * scale + bias with a fused multiply-add (_mm256_fmadd_ps on
// x86, the compiler's contraction on aarch64): one rounding. A multiply then an add rounds
// twice and differs in the last bit for about one value in ten, so the scalar unit computes
// the fused result exactly in integers (FusedByteMulAdd): the product of an 8-bit byte and a
// 24-bit mantissa fits 32 bits, and 62 bits of alignment room keep every bit that can decide
// the rounding, the rest folded into a sticky bit.
//
// Cores take even shares of the rows and move them through UB in chunks of whole rows, each
// row at a 32-byte-aligned stride; the floats leave in one DMA per chunk.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "fused8bit_rowwise_to_float_tiling_data.h"

using namespace AscendC;

namespace {

union FloatBits {
    float f;
    uint32_t u;
};

// Index of the highest set bit of v != 0 (the scalar bit instructions are not used so that the
// function reads the same on every target).
__aicore__ inline int32_t HighBit(uint64_t v) {
    int32_t n = 0;
    for (int32_t step = 32; step > 0; step >>= 1) {
        if ((v >> step) != 0) {
            v >>= step;
            n += step;
        }
    }
    return n;
}

// A finite nonzero float as mant * 2^exp with mant's top bit at bit 62.
struct Wide {
    uint64_t mant;
    int32_t exp;
    bool neg;
};

__aicore__ inline Wide Normalize(uint64_t mant, int32_t exp, bool neg) {
    const int32_t shift = 62 - HighBit(mant);
    return Wide{mant << shift, exp - shift, neg};
}

// RN(q * s + b) with a single rounding, for q in [0, 255].
__aicore__ inline float FusedByteMulAdd(uint32_t q, float s, float b) {
    FloatBits sb;
    sb.f = s;
    FloatBits bb;
    bb.f = b;
    const uint32_t sExp = (sb.u >> 23) & 0xffu;
    const uint32_t bExp = (bb.u >> 23) & 0xffu;
    const uint64_t sMant = sb.u & 0x7fffffu;
    const uint64_t bMant = bb.u & 0x7fffffu;
    // An exact product (a zero, or a mantissa product within 24 bits) or an infinite or NaN
    // operand: the unfused expression rounds once too, and propagates inf and NaN as fbgemm.
    const uint64_t sFull = sExp == 0 ? sMant : (sMant | (1u << 23));
    const uint64_t product = sFull * q;
    if (sExp == 0xffu || bExp == 0xffu || product < (1u << 24))
        return static_cast<float>(q) * s + b;
    if (bExp == 0 && bMant == 0)
        return static_cast<float>(q) * s;  // b = +-0: the product, rounded once
    const Wide p =
        Normalize(product, (sExp == 0 ? 1 : static_cast<int32_t>(sExp)) - 150, (sb.u >> 31) != 0);
    const Wide a = Normalize(bExp == 0 ? bMant : (bMant | (1u << 23)),
                             (bExp == 0 ? 1 : static_cast<int32_t>(bExp)) - 150, (bb.u >> 31) != 0);
    const Wide& x = p.exp >= a.exp ? p : a;  // the larger exponent
    const Wide& y = p.exp >= a.exp ? a : p;
    const int32_t gap = x.exp - y.exp;
    uint64_t ym = 0;
    if (gap >= 63) {
        ym = 1;  // only its sticky bit can matter
    } else {
        ym = (y.mant >> gap) | ((gap > 0 && (y.mant << (64 - gap)) != 0) ? 1u : 0u);
    }
    uint64_t r = 0;
    bool neg = x.neg;
    if (x.neg == y.neg) {
        r = x.mant + ym;  // < 2^64: both < 2^63
    } else if (x.mant >= ym) {
        r = x.mant - ym;
    } else {
        r = ym - x.mant;  // gap 0: exact
        neg = y.neg;
    }
    if (r == 0)
        return 0.0f;  // exact cancellation is +0 in round-to-nearest
    // r * 2^x.exp rounded to 24 bits, or to the subnormal grid 2^-149.
    const int32_t top = HighBit(r) + x.exp;
    const int32_t lsbExp = top - 23 > -149 ? top - 23 : -149;
    const int32_t drop = lsbExp - x.exp;
    uint64_t mant = 0;
    if (drop <= 0) {
        mant = r << (-drop);
    } else if (drop >= 64) {
        mant = 0;  // below half the smallest subnormal
    } else {
        mant = r >> drop;
        const uint64_t rest = r & ((uint64_t(1) << drop) - 1);
        const uint64_t half = uint64_t(1) << (drop - 1);
        if (rest > half || (rest == half && (mant & 1u) != 0))
            ++mant;
    }
    int32_t e = lsbExp;
    if (mant == (uint64_t(1) << 24)) {
        mant >>= 1;
        ++e;
    }
    FloatBits out;
    if (mant >= (uint64_t(1) << 23)) {
        const int32_t biased = e + 150;
        out.u = biased >= 255 ? 0x7f800000u
                              : ((static_cast<uint32_t>(biased) << 23) |
                                 static_cast<uint32_t>(mant - (uint64_t(1) << 23)));
    } else {
        out.u = static_cast<uint32_t>(mant);  // subnormal
    }
    out.u |= neg ? 0x80000000u : 0u;
    return out.f;
}

class Fused8BitRowwiseToFloat {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const Fused8BitRowwiseToFloatTilingData& td, TPipe* pipe) {
        td_ = td;
        inGm_.SetGlobalBuffer((__gm__ uint8_t*)input, td.rows * (td.dim + 8));
        outGm_.SetGlobalBuffer((__gm__ float*)output, td.rows * td.dim);
        pipe->InitBuffer(inQue_, 1, static_cast<uint32_t>(td.chunkRows * td.inRowBytes));
        if (td.rowElems > 0)
            pipe->InitBuffer(outBuf_, static_cast<uint32_t>(td.chunkRows * td.rowElems * 4));
    }

    __aicore__ inline void Process() {
        if (td_.dim == 0)
            return;  // nothing to write
        const mxrec::Span share = mxrec::SplitEven(td_.rows, td_.coreNum, GetBlockIdx());
        for (int64_t r = share.begin; r < share.end; r += td_.chunkRows)
            Chunk(r, mxrec::Min64(td_.chunkRows, share.end - r));
    }

private:
    __aicore__ inline void Chunk(int64_t row0, int64_t n) {
        const int64_t d = td_.dim;
        LocalTensor<uint8_t> in = inQue_.AllocTensor<uint8_t>();
        DataCopyExtParams load{static_cast<uint16_t>(n), static_cast<uint32_t>(d + 8), 0, 0, 0};
        DataCopyPadExtParams<uint8_t> pad{false, 0, 0, 0};
        DataCopyPad(in, inGm_[row0 * (d + 8)], load, pad);
        inQue_.EnQue(in);
        in = inQue_.DeQue<uint8_t>();
        mxrec::PipeSync<HardEvent::MTE2_S>();  // the queue orders MTE2 before V only
        LocalTensor<float> out = outBuf_.Get<float>();
        if (!first_)
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous chunk's floats have left
        first_ = false;
        for (int64_t r = 0; r < n; ++r) {
            const uint32_t src = static_cast<uint32_t>(r * td_.inRowBytes);
            const uint32_t dst = static_cast<uint32_t>(r * td_.rowElems);
            const float scale = ReadFloat(in, src + static_cast<uint32_t>(d));
            const float bias = ReadFloat(in, src + static_cast<uint32_t>(d) + 4);
            for (uint32_t j = 0; j < static_cast<uint32_t>(d); ++j)
                out.SetValue(dst + j, FusedByteMulAdd(in.GetValue(src + j), scale, bias));
        }
        inQue_.FreeTensor(in);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams store{static_cast<uint16_t>(n), static_cast<uint32_t>(d * 4), 0, 0, 0};
        DataCopyPad(outGm_[row0 * d], out, store);
    }

    // The fp32 scale and bias sit at any byte offset of the row: assembled byte by byte.
    __aicore__ inline float ReadFloat(const LocalTensor<uint8_t>& in, uint32_t at) {
        FloatBits v;
        v.u = 0;
        for (uint32_t k = 0; k < 4; ++k)
            v.u |= static_cast<uint32_t>(in.GetValue(at + k)) << (8 * k);
        return v.f;
    }

    Fused8BitRowwiseToFloatTilingData td_;
    bool first_ = true;
    GlobalTensor<uint8_t> inGm_;
    GlobalTensor<float> outGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TBuf<TPosition::VECCALC> outBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "fused8bit_rowwise_to_float_kernel_entry.h"
