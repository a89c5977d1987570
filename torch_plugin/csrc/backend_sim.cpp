// The sim backend: the operators' sim libraries (mxrec_opp_<op>_sim.so, linked at build time)
// called through their generated typed wrappers. The per-operator calls are generated
// (backend_sim_ops.cpp); this file holds what they share (backend_sim_common.h).
#include <cstring>
#include <memory>
#include <string>

#include "backend.h"
#include "backend_sim_common.h"

namespace fbgemm_npu::backend {

namespace {

int32_t sim_dtype(at::ScalarType t) {
    switch (t) {
        case at::kFloat:
            return RECSDK_DT_FLOAT32;
        case at::kHalf:
            return RECSDK_DT_FLOAT16;
        case at::kBFloat16:
            return RECSDK_DT_BFLOAT16;
        case at::kInt:
            return RECSDK_DT_INT32;
        case at::kLong:
            return RECSDK_DT_INT64;
        case at::kChar:
            return RECSDK_DT_INT8;
        case at::kByte:
            return RECSDK_DT_UINT8;
        case at::kShort:
            return RECSDK_DT_INT16;
        case at::kBool:
            return RECSDK_DT_BOOL;
        case at::kDouble:
            return RECSDK_DT_FLOAT64;
        default:
            TORCH_CHECK_TYPE(false, "npu (sim): no operator dtype for ", t);
    }
}

}  // namespace

const char* name() {
    return "sim";
}

RecsdkSimTensor sim_tensor(const at::Tensor& t) {
    RecsdkSimTensor s{};
    if (!t.defined()) {
        s.data = nullptr;
        s.ndim = -1;
        return s;
    }
    // Registrations pass contiguous tensors; a strided one here is an adapter bug.
    TORCH_INTERNAL_ASSERT(t.is_contiguous(), "sim backend got a non-contiguous tensor");
    TORCH_CHECK(t.dim() <= RECSDK_SIM_MAX_DIMS, "npu (sim): tensors have at most ",
                RECSDK_SIM_MAX_DIMS, " dims");
    s.data = t.data_ptr();
    s.dtype = sim_dtype(t.scalar_type());
    s.ndim = static_cast<int32_t>(t.dim());
    for (int64_t d = 0; d < t.dim(); ++d)
        s.shape[d] = t.size(d);
    return s;
}

Launch::Launch() : report(std::make_unique<RecsdkSimReport>()) {
    std::memset(report.get(), 0, sizeof(RecsdkSimReport));
}

// A trap is the kernel's device-side assert (an invalid index); torch raises for those, so it
// surfaces as a RuntimeError naming the operator (unless the operator's [host] trap_error says
// what its trap means: the generated call raises that first).
void Launch::check(const char* op, int32_t status) const {
    if (status == RECSDK_SIM_OK)
        return;
    const std::string message(report->message);
    switch (status) {
        case RECSDK_SIM_TRAP:
            TORCH_CHECK(false, op,
                        ": the npu kernel stopped on invalid input (device-side "
                        "assert): ",
                        message);
        case RECSDK_SIM_INVALID_ARGUMENT:
            TORCH_CHECK_VALUE(false, op, ": the operator rejected its arguments: ", message);
        default:
            TORCH_CHECK(false, op, ": the npu (sim) kernel failed (status ", status,
                        "): ", message);
    }
}

}  // namespace fbgemm_npu::backend
