// The npu backend: each operator through its aclnn API (aclnn<Op>GetWorkspaceSize, then
// aclnn<Op>) on torch_npu's current stream. The per-operator calls are generated
// (backend_npu_ops.cpp); this file holds what they share (backend_npu_common.h).
#include <vector>

#include "backend.h"
#include "backend_npu_common.h"

namespace fbgemm_npu::backend {

namespace {

aclDataType acl_dtype(at::ScalarType t) {
    switch (t) {
        case at::kFloat:
            return ACL_FLOAT;
        case at::kHalf:
            return ACL_FLOAT16;
        case at::kBFloat16:
            return ACL_BF16;
        case at::kInt:
            return ACL_INT32;
        case at::kLong:
            return ACL_INT64;
        case at::kChar:
            return ACL_INT8;
        case at::kByte:
            return ACL_UINT8;
        case at::kShort:
            return ACL_INT16;
        case at::kBool:
            return ACL_BOOL;
        case at::kDouble:
            return ACL_DOUBLE;
        default:
            TORCH_CHECK_TYPE(false, "npu: no aclnn dtype for ", t);
    }
}

}  // namespace

const char* name() {
    return "npu";
}

AclTensor acl_tensor(const at::Tensor& t) {
    if (!t.defined())
        return AclTensor(nullptr);
    TORCH_INTERNAL_ASSERT(t.is_contiguous(), "npu backend got a non-contiguous tensor");
    const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    const std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
    const int64_t storage = static_cast<int64_t>(t.storage().nbytes() / t.itemsize());
    aclTensor* out = aclCreateTensor(sizes.data(), sizes.size(), acl_dtype(t.scalar_type()),
                                     strides.data(), t.storage_offset(), ACL_FORMAT_ND, &storage, 1,
                                     t.storage().data_ptr().get());
    TORCH_CHECK(out != nullptr, "npu: aclCreateTensor failed for a tensor of shape ", t.sizes());
    return AclTensor(out);
}

}  // namespace fbgemm_npu::backend
