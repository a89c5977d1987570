// The host side of tiling, shared by both targets.
//
// An operator's tiling is a pure function
//     mxrec::TilingPlan<TD> <Op>Tiling(const mxrec::OpArgs&, const mxrec::PlatformInfo&)
// of the shapes, dtypes and attributes (never of tensor contents, which live on the device).
// The CANN op_host fills OpArgs from gert::TilingContext (cann_tiling_glue.h); the sim launcher
// fills it from the caller's tensors. Either way the same function decides blockDim, the tiling
// key, the user workspace and the tiling struct the kernel reads with GET_TILING_DATA.
#ifndef MXREC_TILING_COMMON_H
#define MXREC_TILING_COMMON_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mxrec_common.h"

namespace mxrec {

// Same numbering as RecsdkSimDType (kernels/sim/include/recsdk_sim/api.h).
enum class DType : int32_t {
    kFloat32 = 0,
    kFloat16 = 1,
    kBFloat16 = 2,
    kInt32 = 3,
    kInt64 = 4,
    kInt8 = 5,
    kUInt8 = 6,
    kInt16 = 7,
    kBool = 8,
    kFloat64 = 9,
};

// Indexed by DType's value: one row per dtype, so a new dtype cannot get a size without a name.
struct DTypeInfo {
    const char* name;
    int64_t size;
};
inline constexpr DTypeInfo kDTypeInfo[] = {
    {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"int32", 4}, {"int64", 8},
    {"int8", 1},    {"uint8", 1},   {"int16", 2},    {"bool", 1},  {"float64", 8},
};

inline const DTypeInfo* FindDType(DType t) {
    const auto i = static_cast<size_t>(t);
    return i < sizeof(kDTypeInfo) / sizeof(kDTypeInfo[0]) ? &kDTypeInfo[i] : nullptr;
}

inline int64_t DTypeSize(DType t) {
    const DTypeInfo* info = FindDType(t);
    return info != nullptr ? info->size : 1;
}

inline const char* DTypeName(DType t) {
    const DTypeInfo* info = FindDType(t);
    return info != nullptr ? info->name : "?";
}

struct TensorDesc {
    bool present = false;
    DType dtype = DType::kFloat32;
    int32_t ndim = 0;
    int64_t dims[8] = {0, 0, 0, 0, 0, 0, 0, 0};

    int64_t Dim(int32_t i) const { return (i >= 0 && i < ndim) ? dims[i] : 1; }
    int64_t Numel() const {
        int64_t n = 1;
        for (int32_t i = 0; i < ndim; ++i)
            n *= dims[i];
        return n;
    }
    std::string Shape() const {
        std::string s = "[";
        for (int32_t i = 0; i < ndim; ++i)
            s += (i ? ", " : "") + std::to_string(dims[i]);
        return s + "]";
    }
};

struct AttrValue {
    int64_t i = 0;
    double f = 0.0;
    std::vector<int64_t> ints;
};

struct OpArgs {
    std::vector<TensorDesc> inputs;
    std::vector<TensorDesc> outputs;
    std::vector<AttrValue> attrs;
};

struct PlatformInfo {
    uint32_t vector_cores = 1;
    uint64_t ub_bytes = 192 * 1024;
    std::string soc;
    // Work (bytes moved) below which starting another core does not pay; tilings use it to
    // choose blockDim for small inputs. Only tests change it (to 1: every core gets work).
    int64_t min_core_bytes = 16 * 1024;
    // Cube cores (AIC) and their buffers, for operators that use the Cube (matmul_tiling.h). An
    // operator launched with cube cores picks blockDim <= cube_cores (AI cores, 2 AIV each).
    uint32_t cube_cores = 0;
    uint64_t l1_bytes = 0;
    uint64_t l0a_bytes = 0;
    uint64_t l0b_bytes = 0;
    uint64_t l0c_bytes = 0;
    uint64_t bt_bytes = 1024;  // BiasTable; PlatformAscendC has no CoreMemType for it
};

template <typename TD>
struct TilingPlan {
    TD data{};
    uint32_t block_dim = 1;
    uint64_t tiling_key = 0;
    uint64_t workspace_bytes = 0;  // user workspace; the system part is added by the framework
    std::string error;             // non-empty: the arguments are invalid

    bool ok() const { return error.empty(); }
};

// A refused tiling, whatever the operator's tiling struct: `return Reject("why");`.
struct Rejection {
    std::string why;
    template <typename TD>
    operator TilingPlan<TD>() const {  // NOLINT(google-explicit-constructor): returned as a plan
        TilingPlan<TD> p;
        p.error = why;
        return p;
    }
};

inline Rejection Reject(const std::string& why) {
    return Rejection{why};
}

}  // namespace mxrec

#endif  // MXREC_TILING_COMMON_H
