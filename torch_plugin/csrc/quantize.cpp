// The quantised-communication codecs on the npu: fbgemm's row-wise INT8 codec
// (FloatToFused8BitRowwiseQuantized / Fused8BitRowwiseQuantizedToFloat), which torchrec's
// QCommsConfig reaches through fbgemm_gpu.quantize_comm in its all-to-all and reduce-scatter.
//
// fbgemm 1.1.0 has no autograd for them (the codec is applied inside torchrec's collectives'
// own autograd functions), so neither has the adapter. Shapes follow fbgemm's CPU op: rows of
// the last dim, leading dims kept, an input of fewer than two dims refused with its message.
#include <torch/library.h>

#include <vector>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

// fbgemm's own check (TENSOR_NDIM_IS_GE), its message word for word.
void check_rows(const at::Tensor& t) {
    TORCH_CHECK(t.dim() >= 2, "Tensor 'input' must have >= 2 dimension(s). Found ", t.dim());
}

int64_t leading_rows(const at::Tensor& t) {
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < t.dim(); ++d)
        rows *= t.size(d);
    return rows;
}

// Rows of D floats -> rows of D bytes, the row's fp32 scale and fp32 bias (D + 8 bytes).
at::Tensor float_to_fused8bit_rowwise(const at::Tensor& input) {
    const char* op = "FloatToFused8BitRowwiseQuantized";
    check_npu(op, "input", input);
    check_rows(input);
    // fbgemm's CPU op takes any floating dtype but reads its storage as float32: a half or
    // bfloat16 tensor comes out as the wrong numbers, read past its end. Refused instead.
    TORCH_CHECK_TYPE(input.scalar_type() == at::kFloat, op,
                     ": input must be float32 (fbgemm's CPU op reads any other dtype's storage "
                     "as float32); got ",
                     input.scalar_type(), ". Convert it with .float() first");
    const int64_t d = input.size(-1);
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = d + 8;
    at::Tensor out = at::empty(shape, input.options().dtype(at::kByte));
    const int64_t rows = leading_rows(input);
    if (rows == 0)
        return out;
    backend::float_to_fused8bit_rowwise(input.contiguous().view({rows, d}),
                                        out.view({rows, d + 8}));
    return out;
}

// Rows of D bytes, fp32 scale and fp32 bias -> D floats byte * scale + bias (one rounding).
at::Tensor fused8bit_rowwise_to_float(const at::Tensor& input) {
    const char* op = "Fused8BitRowwiseQuantizedToFloat";
    check_npu(op, "input", input);
    check_rows(input);
    TORCH_CHECK(input.scalar_type() == at::kByte, "expected scalar type Byte but found ",
                input.scalar_type());
    const int64_t width = input.size(-1);
    // fbgemm's CPU op fails here with "numel: integer multiplication overflow".
    TORCH_CHECK(width >= 8, op,
                ": rows must hold at least the 8 bytes of their fp32 scale and "
                "bias, got a last dim of ",
                width);
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = width - 8;
    at::Tensor out = at::empty(shape, input.options().dtype(at::kFloat));
    const int64_t rows = leading_rows(input);
    if (rows == 0 || width == 8)
        return out;
    backend::fused8bit_rowwise_to_float(input.contiguous().view({rows, width}),
                                        out.view({rows, width - 8}));
    return out;
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("FloatToFused8BitRowwiseQuantized", &fbgemm_npu::float_to_fused8bit_rowwise);
    m.impl("Fused8BitRowwiseQuantizedToFloat", &fbgemm_npu::fused8bit_rowwise_to_float);
}
