// What the generated npu operator calls (backend_npu_ops.cpp) are made of: aclTensor views of
// npu tensors and the launch of one aclnn operator on torch_npu's current stream.
//
// The operators' prototypes come from headers generated from their specs
// (recsdk_build/ops/codegen.py aclnn_declaration, aclnn_<op>_decl.h), never from casts of
// looked-up symbols: a spec change that the adapter does not follow fails to compile instead
// of passing wrong arguments. The generated calls declare them weak, so a host whose operator
// package is missing still loads the adapter and fails the call with an error naming the
// operator (the loader makes the installed packages' op_api libraries globally visible first).
#pragma once

#ifndef FBGEMM_NPU_API_NPU
#error "the npu backend is the npu variant's: build it with FBGEMM_NPU_API_NPU defined"
#endif

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "aclnn/acl_meta.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"

namespace fbgemm_npu::backend {

struct TensorDeleter {
    void operator()(aclTensor* t) const {
        if (t != nullptr)
            aclDestroyTensor(t);
    }
};
using AclTensor = std::unique_ptr<aclTensor, TensorDeleter>;

// A view of a contiguous npu tensor; an undefined tensor (an absent optional) is nullptr.
// Defined in backend_npu.cpp.
AclTensor acl_tensor(const at::Tensor& t);

struct IntArrayDeleter {
    void operator()(aclIntArray* a) const {
        if (a != nullptr)
            aclDestroyIntArray(a);
    }
};
using AclIntArray = std::unique_ptr<aclIntArray, IntArrayDeleter>;

// An int list attribute. Inline, so only an operator with one references the CANN entry points.
inline AclIntArray acl_int_array(const std::vector<int64_t>& values) {
    aclIntArray* out = aclCreateIntArray(values.data(), values.size());
    TORCH_CHECK(out != nullptr, "npu: aclCreateIntArray failed for ", values.size(), " values");
    return AclIntArray(out);
}

// Runs one operator: the workspace size query, then the launch on the current stream.
// `get_workspace` calls aclnn<Op>GetWorkspaceSize with the operator's own typed arguments;
// `installed` says whether the operator's (weak) entry points resolved.
template <typename GetWorkspace, typename Launch>
void run(const char* op_type, const char* package, const at::Tensor& like, bool installed,
         GetWorkspace get_workspace, Launch launch) {
    TORCH_CHECK(installed, "aclnn", op_type, " is not available: the operator package ", package,
                " is not installed (or not on ASCEND_CUSTOM_OPP_PATH); reinstall "
                "fbgemm_npu_api built by recsdk-build for this host");
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = get_workspace(&workspace_size, &executor);
    TORCH_CHECK(status == 0, "aclnn", op_type, "GetWorkspaceSize failed with status ", status);
    at::Tensor workspace;
    if (workspace_size > 0) {
        workspace =
            at::empty({static_cast<int64_t>(workspace_size)}, like.options().dtype(at::kByte));
    }
    // stream() (unlike stream(false)) first drains torch_npu's task queue, so the launch is
    // ordered after every operator queued before it on this stream.
    aclrtStream stream = c10_npu::getCurrentNPUStream(like.device().index()).stream();
    const aclnnStatus launched = launch(workspace.defined() ? workspace.data_ptr() : nullptr,
                                        workspace_size, executor, stream);
    TORCH_CHECK(launched == 0, "aclnn", op_type, " failed with status ", launched);
}

}  // namespace fbgemm_npu::backend
