// HFP8ToFloat: each HFP8 byte becomes its float (hfp8_decode.h: fbgemm's hfp8_to_float).
//
// A byte has 256 values: each core decodes them all once into a UB table on the scalar unit,
// then the vector unit does the rest per chunk: bytes -> half -> int32 (exact), times 4 (the
// table's byte offsets), and a Gather of the floats. A stream of rows of one element
// (codec_kernel.h): bytes in through a queue, floats out in one DMA per chunk.
#include "kernel_operator.h"
#include "codec_kernel.h"
#include "hfp8_decode.h"
#include "hfp8_to_float_tiling_data.h"

using namespace AscendC;

namespace {

class HFP8ToFloat : public mxrec::CodecStream<HFP8ToFloat, uint8_t, float, true> {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const HFP8ToFloatTilingData& td, TPipe* pipe) {
        fmt_ = td.format;
        InitStream(input, output, td.stream, pipe);
        const uint32_t n = static_cast<uint32_t>(ChunkElems(1));
        pipe->InitBuffer(halfBuf_, n * 2);
        pipe->InitBuffer(offBuf_, n * 4);
        pipe->InitBuffer(tableBuf_, 256 * 4);
    }

    __aicore__ inline void Prepare() {
        LocalTensor<float> table = tableBuf_.Get<float>();
        mxrec_hfp8::FillHfp8Table(table, fmt_.ebits, fmt_.bias);
    }

    __aicore__ inline void CodeRows(const LocalTensor<uint8_t>& in, LocalTensor<float>& out,
                                    int64_t n) {
        const uint32_t count = static_cast<uint32_t>(n);
        LocalTensor<half> h = halfBuf_.Get<half>();
        LocalTensor<int32_t> off = offBuf_.Get<int32_t>();
        Cast(h, in, RoundMode::CAST_NONE, count);  // 0..255 are exact in half
        Cast(off, h, RoundMode::CAST_RINT, count);
        Muls(off, off, static_cast<int32_t>(sizeof(float)), static_cast<int32_t>(count));
        Gather(out, tableBuf_.Get<float>(), off.ReinterpretCast<uint32_t>(), 0u, count);
    }

private:
    mxrec::Hfp8Format fmt_;
    TBuf<TPosition::VECCALC> halfBuf_;
    TBuf<TPosition::VECCALC> offBuf_;
    TBuf<TPosition::VECCALC> tableBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "hfp8_to_float_kernel_entry.h"
