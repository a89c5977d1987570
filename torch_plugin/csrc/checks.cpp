#include "checks.h"

#include <sstream>
#include <string>

namespace fbgemm_npu {

namespace {

std::string dtype_list(c10::ArrayRef<at::ScalarType> allowed) {
    std::ostringstream out;
    bool first = true;
    for (auto t : allowed) {
        out << (first ? "" : ", ") << t;
        first = false;
    }
    return out.str();
}

}  // namespace

void check_npu(const char* op, const char* name, const at::Tensor& t) {
    TORCH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
    TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, op, ": ", name,
                " must be an npu tensor, got a tensor on ", t.device());
}

void check_same_device(const char* op, const at::Tensor& first,
                       std::initializer_list<const at::Tensor*> others) {
    for (const at::Tensor* t : others) {
        if (t == nullptr || !t->defined())
            continue;
        TORCH_CHECK(t->device() == first.device(), op,
                    ": all tensors must be on one npu device, got ", first.device(), " and ",
                    t->device());
    }
}

void check_dtype(const char* op, const char* name, const at::Tensor& t,
                 c10::ArrayRef<at::ScalarType> allowed) {
    for (auto dt : allowed) {
        if (t.scalar_type() == dt)
            return;
    }
    TORCH_CHECK_TYPE(false, op, ": ", name, " must have dtype ", dtype_list(allowed), ", got ",
                     t.scalar_type());
}

void check_dim(const char* op, const char* name, const at::Tensor& t, int64_t min_dim,
               int64_t max_dim) {
    TORCH_CHECK_VALUE(t.dim() >= min_dim && t.dim() <= max_dim, op, ": ", name, " must be ",
                      min_dim == max_dim
                          ? std::to_string(min_dim)
                          : std::to_string(min_dim) + "-D or " + std::to_string(max_dim),
                      "-D, got shape ", t.sizes());
}

at::Tensor check_offsets(const char* op, const char* name, const at::Tensor& offsets) {
    check_dim(op, name, offsets, 1, 1);
    TORCH_CHECK_VALUE(offsets.size(0) >= 1, op, ": ", name,
                      " must hold at least one entry (B + 1 offsets), got an empty tensor");
    // One device-to-host copy; the kernels assume valid offsets, so this is where a bad one
    // is caught.
    at::Tensor host = offsets.to(at::kCPU, at::kLong).contiguous();
    const int64_t* p = host.data_ptr<int64_t>();
    const int64_t n = host.size(0);
    TORCH_CHECK_VALUE(p[0] >= 0, op, ": ", name, "[0] must be >= 0, got ", p[0]);
    for (int64_t i = 1; i < n; ++i) {
        TORCH_CHECK_VALUE(p[i] >= p[i - 1], op, ": ", name,
                          " must be non-decreasing (monotonic), but ", name, "[", i, "] = ", p[i],
                          " < ", name, "[", i - 1, "] = ", p[i - 1]);
    }
    return host;
}

const at::Tensor& single_offsets(const char* op, at::TensorList offsets) {
    TORCH_CHECK_VALUE(offsets.size() == 1, op,
                      ": exactly one offsets tensor (one jagged dimension) is supported, got ",
                      offsets.size());
    return offsets[0];
}

}  // namespace fbgemm_npu
