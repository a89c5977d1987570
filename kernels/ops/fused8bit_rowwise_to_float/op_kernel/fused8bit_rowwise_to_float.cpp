// Fused8BitRowwiseToFloat: each row of D bytes, fp32 scale and fp32 bias becomes D floats.
//
// fbgemm's CPU op computes byte * scale + bias with a fused multiply-add (_mm256_fmadd_ps on
// x86, the compiler's contraction on aarch64): one rounding. A multiply then an add rounds
// twice and differs in the last bit for about one value in ten, so the scalar unit computes
// the fused result exactly in integers (FusedByteMulAdd): the product of an 8-bit byte and a
// 24-bit mantissa fits 32 bits, and 62 bits of alignment room keep every bit that can decide
// the rounding, the rest folded into a sticky bit.
//
// A stream of rows (codec_kernel.h), decoded on the scalar unit.
#include "kernel_operator.h"
#include "codec_kernel.h"
#include "fused8bit_rowwise_to_float_tiling_data.h"

using namespace AscendC;

namespace {

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
    mxrec::CodecWord sb;
    sb.f = s;
    mxrec::CodecWord bb;
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
    mxrec::CodecWord out;
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

class Fused8BitRowwiseToFloat : public mxrec::CodecStream<Fused8BitRowwiseToFloat, uint8_t, float> {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const Fused8BitRowwiseToFloatTilingData& td, TPipe* pipe) {
        InitStream(input, output, td.stream, pipe);
    }

    __aicore__ inline void CodeRow(const LocalTensor<uint8_t>& in, uint32_t src,
                                   LocalTensor<float>& out, uint32_t dst) {
        const uint32_t d = static_cast<uint32_t>(rows_.outWidth);
        const float scale = mxrec::GetFloatBytes(in, src + d);
        const float bias = mxrec::GetFloatBytes(in, src + d + 4);
        for (uint32_t j = 0; j < d; ++j)
            out.SetValue(dst + j, FusedByteMulAdd(in.GetValue(src + j), scale, bias));
    }
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "fused8bit_rowwise_to_float_kernel_entry.h"
