// HFP8 decoding of one byte, fbgemm's hfp8_to_float built on the bits.
//
// fbgemm places the byte's exponent and mantissa bits in an fp32 word and multiplies by
// 2^(127 - bias): the product is exact (an HFP8 value is always an fp32 value for ebits 1..7
// and bias 1..127), so the float is assembled directly here, subnormal HFP8 values normalised,
// with no float multiply (and no dependence on the scalar unit's handling of fp32 subnormals).
// Shared by hfp8_to_float and fp8_rowwise_to_float.
#ifndef MXREC_HFP8_DECODE_H
#define MXREC_HFP8_DECODE_H

#include <cstdint>

namespace mxrec_hfp8 {

union DecodedBits {
    float f;
    uint32_t u;
};

__aicore__ inline float DecodeHfp8(uint32_t code, int32_t ebits, int32_t bias) {
    const int32_t mbits = 7 - ebits;
    const uint32_t mag = code & 0x7fu;
    const uint32_t expField = mag >> mbits;
    const uint32_t mant = mag & ((1u << mbits) - 1u);
    DecodedBits out;
    if (expField != 0) {
        // 2^(e - bias) * 1.mant: fp32 exponent field e - bias + 127, in [1, 253].
        out.u = (static_cast<uint32_t>(static_cast<int32_t>(expField) - bias + 127) << 23) |
                (mant << (23 - mbits));
    } else if (mant == 0) {
        out.u = 0;
    } else {
        // mant * 2^(1 - bias - mbits): normalise on mant's top bit.
        int32_t top = 0;
        while ((mant >> (top + 1)) != 0)
            ++top;
        const int32_t e = top + 1 - bias - mbits;  // the value is 2^e * 1.xxx
        if (e >= -126) {
            out.u = (static_cast<uint32_t>(e + 127) << 23) | ((mant << (23 - top)) & 0x7fffffu);
        } else {
            out.u = mant << (150 - bias - mbits);  // an fp32 subnormal: units of 2^-149
        }
    }
    out.u |= (code & 0x80u) << 24;
    return out.f;
}

// Every code's float into table[0, 256) (a UB LocalTensor<float>), which a decoder then indexes.
template <typename Table>
__aicore__ inline void FillHfp8Table(Table& table, int32_t ebits, int32_t bias) {
    for (uint32_t code = 0; code < 256; ++code)
        table.SetValue(code, DecodeHfp8(code, ebits, bias));
}

}  // namespace mxrec_hfp8

#endif  // MXREC_HFP8_DECODE_H
