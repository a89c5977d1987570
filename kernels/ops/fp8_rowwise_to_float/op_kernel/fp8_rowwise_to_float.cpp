// FP8RowwiseToFloat: each row of HFP8 bytes and its fp32 scale becomes floats
// hfp8_to_float(code) / scale.
//
// Each core decodes the 256 codes once into a UB table (hfp8_decode.h, exact); per element the
// scalar unit looks the code up and divides by the row's scale, one fp32 rounding as fbgemm's
// division (the 910B has no fp8 arithmetic, and a vector reciprocal would round twice).
//
// A stream of rows (codec_kernel.h).
#include "kernel_operator.h"
#include "codec_kernel.h"
#include "hfp8_decode.h"
#include "fp8_rowwise_to_float_tiling_data.h"

using namespace AscendC;

namespace {

class FP8RowwiseToFloat : public mxrec::CodecStream<FP8RowwiseToFloat, uint8_t, float> {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FP8RowwiseToFloatTilingData& td, TPipe* pipe) {
        fmt_ = td.format;
        InitStream(input, output, td.stream, pipe);
        pipe->InitBuffer(tableBuf_, 256 * 4);
    }

    __aicore__ inline void Prepare() {
        table_ = tableBuf_.Get<float>();
        mxrec_hfp8::FillHfp8Table(table_, fmt_.ebits, fmt_.bias);
    }

    __aicore__ inline void CodeRow(const LocalTensor<uint8_t>& in, uint32_t src,
                                   LocalTensor<float>& out, uint32_t dst) {
        const uint32_t d = static_cast<uint32_t>(rows_.outWidth);
        const float scale = mxrec::GetFloatBytes(in, src + d);  // W need not be a multiple of 4
        for (uint32_t j = 0; j < d; ++j)
            out.SetValue(dst + j, table_.GetValue(in.GetValue(src + j)) / scale);
    }

private:
    mxrec::Hfp8Format fmt_;
    TBuf<TPosition::VECCALC> tableBuf_;
    LocalTensor<float> table_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "fp8_rowwise_to_float_kernel_entry.h"
