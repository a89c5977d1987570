// The quantised-communication codecs on the npu, which torchrec's QCommsConfig reaches through
// fbgemm_gpu.quantize_comm in its all-to-all and reduce-scatter: fbgemm's row-wise INT8 codec
// (FloatToFused8BitRowwiseQuantized / Fused8BitRowwiseQuantizedToFloat), its FP8 codec without a
// row dim (FloatToHFP8Quantized / HFP8QuantizedToFloat, CommType.FP8's default) and with one
// (FloatToFP8RowwiseQuantized / FP8RowwiseQuantizedToFloat, QCommsConfig.fp8_quantize_dim).
//
// fbgemm 1.1.0 has no autograd for them (the codec is applied inside torchrec's collectives'
// own autograd functions), so neither has the adapter. Shapes follow fbgemm's CPU op: rows of
// the last dim, leading dims kept, an input of fewer than two dims refused with its message.
// fbgemm-gpu-cpu 1.1.0 has no CPU kernel for the FP8 row-wise pair (its CPU op raises "fp8 is
// not supported by CPU"): those follow its CUDA op, shapes and dtypes included.
#include <torch/library.h>

#include <cmath>
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

// fbgemm's HFP8 ops shift and rebias on the float's bits: outside these the results are the
// compiler's and the machine's (shifts past the word, a rounding constant that overflows), not
// a format's. fbgemm itself checks nothing; the adapter refuses them with the reason.
void check_hfp8_format(const char* op, int64_t ebits, int64_t exponent_bias) {
    TORCH_CHECK_VALUE(ebits >= 1 && ebits <= 7, op,
                      ": ebits must be in [1, 7] (a sign bit, ebits exponent bits and 7 - ebits "
                      "mantissa bits), got ",
                      ebits);
    TORCH_CHECK_VALUE(exponent_bias >= 1 && exponent_bias <= 127, op,
                      ": exponent_bias must be in [1, 127], got ", exponent_bias);
}

// fbgemm's TENSOR_NDIM_EQUALS, its message word for word.
void check_2d(const at::Tensor& t) {
    TORCH_CHECK(t.dim() == 2, "Tensor 'input' must have 2 dimension(s). Found ", t.dim());
}

// Each float -> one HFP8 byte (e.g. e4m3 with bias 15 and max_pos 0.9375 for torchrec).
at::Tensor float_to_hfp8(const at::Tensor& input, int64_t ebits, int64_t exponent_bias,
                         double max_pos) {
    const char* op = "FloatToHFP8Quantized";
    check_npu(op, "input", input);
    check_2d(input);
    TORCH_CHECK(input.scalar_type() == at::kFloat, "expected scalar type Float but found ",
                input.scalar_type());
    check_hfp8_format(op, ebits, exponent_bias);
    TORCH_CHECK_VALUE(
        std::isfinite(max_pos) && static_cast<float>(max_pos) > 0.0f && max_pos < 0x1p100, op,
        ": max_pos must be positive, finite and below 2^100, got ", max_pos);
    at::Tensor out = at::empty(input.sizes(), input.options().dtype(at::kByte));
    if (input.numel() == 0)
        return out;
    backend::float_to_hfp8(input.contiguous(), ebits, exponent_bias, max_pos, out);
    return out;
}

// Each HFP8 byte -> its float.
at::Tensor hfp8_to_float(const at::Tensor& input, int64_t ebits, int64_t exponent_bias) {
    const char* op = "HFP8QuantizedToFloat";
    check_npu(op, "input", input);
    check_2d(input);
    TORCH_CHECK(input.scalar_type() == at::kByte, "expected scalar type Byte but found ",
                input.scalar_type());
    check_hfp8_format(op, ebits, exponent_bias);
    at::Tensor out = at::empty(input.sizes(), input.options().dtype(at::kFloat));
    if (input.numel() == 0)
        return out;
    backend::hfp8_to_float(input.contiguous(), ebits, exponent_bias, out);
    return out;
}

// Rows of D floats -> D HFP8 bytes (e4m3 forward, e5m2 backward) scaled to the row's largest
// magnitude, zeros to a multiple of 4, the fp32 scale and 4 zero bytes.
at::Tensor float_to_fp8_rowwise(const at::Tensor& input, bool forward) {
    const char* op = "FloatToFP8RowwiseQuantized";
    check_npu(op, "input", input);
    check_rows(input);
    // fbgemm's CUDA op reads float16 and bfloat16 through to_float: the same exact widening.
    const at::ScalarType t = input.scalar_type();
    TORCH_CHECK_TYPE(t == at::kFloat || t == at::kHalf || t == at::kBFloat16, op,
                     ": input must be float32, float16 or bfloat16, got ", t);
    const at::Tensor x = t == at::kFloat ? input.contiguous() : input.to(at::kFloat).contiguous();
    const int64_t d = input.size(-1);
    const int64_t width = (d + 3) / 4 * 4 + 8;
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = width;
    const int64_t rows = leading_rows(input);
    if (rows == 0 || d == 0)
        return at::zeros(shape, input.options().dtype(at::kByte));  // as fbgemm
    at::Tensor out = at::empty(shape, input.options().dtype(at::kByte));
    backend::float_to_fp8_rowwise(x.view({rows, d}), forward, out.view({rows, width}));
    return out;
}

// fbgemm's SparseType values of the output dtypes the FP8 row-wise decoder takes.
constexpr int64_t kSparseFp32 = 0;
constexpr int64_t kSparseFp16 = 1;
constexpr int64_t kSparseBf16 = 5;

// Rows of W bytes -> ceil4(W) - 8 floats hfp8_to_float(code) / scale, as float32, float16 or
// bfloat16 (the float32 result rounded to nearest even, as fbgemm's CUDA store).
at::Tensor fp8_rowwise_to_float(const at::Tensor& input, bool forward, int64_t output_dtype) {
    const char* op = "FP8RowwiseQuantizedToFloat";
    check_npu(op, "input", input);
    check_rows(input);
    TORCH_CHECK(input.scalar_type() == at::kByte, "expected scalar type Byte but found ",
                input.scalar_type());
    TORCH_CHECK_VALUE(
        output_dtype == kSparseFp32 || output_dtype == kSparseFp16 || output_dtype == kSparseBf16,
        op, ": output_dtype must be SparseType FP32 (0), FP16 (1) or BF16 (5), got ", output_dtype);
    const at::ScalarType dtype = output_dtype == kSparseFp16   ? at::kHalf
                                 : output_dtype == kSparseBf16 ? at::kBFloat16
                                                               : at::kFloat;
    const int64_t width = input.size(-1);
    // fbgemm's CUDA op fails here creating a tensor of negative size.
    TORCH_CHECK(width >= 5, op,
                ": rows must hold at least 5 bytes (ceil4(W) - 8 outputs per row), got a last "
                "dim of ",
                width);
    const int64_t d = (width + 3) / 4 * 4 - 8;
    std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
    shape.back() = d;
    const int64_t rows = leading_rows(input);
    if (rows == 0 || d == 0)
        return at::zeros(shape, input.options().dtype(dtype));  // as fbgemm
    at::Tensor out = at::empty(shape, input.options().dtype(at::kFloat));
    backend::fp8_rowwise_to_float(input.contiguous().view({rows, width}), forward,
                                  out.view({rows, d}));
    return dtype == at::kFloat ? out : out.to(dtype);
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("FloatToFused8BitRowwiseQuantized", &fbgemm_npu::float_to_fused8bit_rowwise);
    m.impl("Fused8BitRowwiseQuantizedToFloat", &fbgemm_npu::fused8bit_rowwise_to_float);
    m.impl("FloatToHFP8Quantized", &fbgemm_npu::float_to_hfp8);
    m.impl("HFP8QuantizedToFloat", &fbgemm_npu::hfp8_to_float);
    m.impl("FloatToFP8RowwiseQuantized", &fbgemm_npu::float_to_fp8_rowwise);
    m.impl("FP8RowwiseQuantizedToFloat", &fbgemm_npu::fp8_rowwise_to_float);
}
