// The thin CANN side of tiling: fill mxrec::OpArgs from a gert::TilingContext, call the
// operator's pure tiling function (the same one the sim launcher calls), and hand its plan back
// to the framework. Compiled only by the CANN toolkit, inside the generated operator project.
//
// Inputs are read by IR index. op.toml requires optional inputs to come after the required ones,
// so GetInputShape(i) of a required input and GetOptionalInputShape(i) of an optional input
// both see the IR order.
#ifndef MXREC_CANN_TILING_GLUE_H
#define MXREC_CANN_TILING_GLUE_H

#include <cstdint>
#include <string>

#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling_common.h"

namespace mxrec::cann {

inline bool FromGe(ge::DataType t, DType* out) {
    switch (t) {
        case ge::DT_FLOAT:
            *out = DType::kFloat32;
            return true;
        case ge::DT_FLOAT16:
            *out = DType::kFloat16;
            return true;
        case ge::DT_BF16:
            *out = DType::kBFloat16;
            return true;
        case ge::DT_INT32:
            *out = DType::kInt32;
            return true;
        case ge::DT_INT64:
            *out = DType::kInt64;
            return true;
        case ge::DT_INT8:
            *out = DType::kInt8;
            return true;
        case ge::DT_UINT8:
            *out = DType::kUInt8;
            return true;
        case ge::DT_INT16:
            *out = DType::kInt16;
            return true;
        case ge::DT_BOOL:
            *out = DType::kBool;
            return true;
        case ge::DT_DOUBLE:
            *out = DType::kFloat64;
            return true;
        default:
            return false;
    }
}

inline bool Describe(const gert::StorageShape* shape, const gert::CompileTimeTensorDesc* desc,
                     TensorDesc* out) {
    out->present = shape != nullptr && desc != nullptr;
    if (!out->present)
        return true;
    if (!FromGe(desc->GetDataType(), &out->dtype))
        return false;
    const gert::Shape& s = shape->GetStorageShape();
    out->ndim = static_cast<int32_t>(s.GetDimNum());
    if (out->ndim > 8)
        return false;
    for (int32_t i = 0; i < out->ndim; ++i)
        out->dims[i] = s.GetDim(i);
    return true;
}

// kAttrKinds: 0 int, 1 float, 2 bool, 3 int list; onCube: op.toml's kernel_type runs Cube cores
// (both generated from op.toml into <op>_op_spec.h).
template <typename TD>
inline ge::graphStatus RunTiling(gert::TilingContext* ctx,
                                 TilingPlan<TD> (*tiling)(const OpArgs&, const PlatformInfo&),
                                 int32_t numInputs, const int32_t* inputOptional,
                                 int32_t numOutputs, int32_t numAttrs, const int32_t* attrKinds,
                                 bool onCube) {
    OpArgs args;
    for (int32_t i = 0; i < numInputs; ++i) {
        TensorDesc d;
        const bool ok =
            inputOptional[i]
                ? Describe(ctx->GetOptionalInputShape(i), ctx->GetOptionalInputDesc(i), &d)
                : Describe(ctx->GetInputShape(i), ctx->GetInputDesc(i), &d);
        if (!ok)
            return ge::GRAPH_FAILED;
        args.inputs.push_back(d);
    }
    for (int32_t i = 0; i < numOutputs; ++i) {
        TensorDesc d;
        if (!Describe(ctx->GetOutputShape(i), ctx->GetOutputDesc(i), &d))
            return ge::GRAPH_FAILED;
        args.outputs.push_back(d);
    }
    const gert::RuntimeAttrs* attrs = ctx->GetAttrs();
    for (int32_t i = 0; i < numAttrs; ++i) {
        AttrValue v;
        if (attrs == nullptr)
            return ge::GRAPH_FAILED;
        switch (attrKinds[i]) {
            case 0: {
                const int64_t* p = attrs->GetAttrPointer<int64_t>(i);
                if (p == nullptr)
                    return ge::GRAPH_FAILED;
                v.i = *p;
                v.f = static_cast<double>(*p);
                break;
            }
            case 1: {
                const float* p = attrs->GetAttrPointer<float>(i);
                if (p == nullptr)
                    return ge::GRAPH_FAILED;
                v.f = *p;
                break;
            }
            case 2: {
                const bool* p = attrs->GetAttrPointer<bool>(i);
                if (p == nullptr)
                    return ge::GRAPH_FAILED;
                v.i = *p ? 1 : 0;
                break;
            }
            default: {
                const gert::ContinuousVector* p = attrs->GetAttrPointer<gert::ContinuousVector>(i);
                if (p == nullptr)
                    return ge::GRAPH_FAILED;
                const int64_t* data = static_cast<const int64_t*>(p->GetData());
                v.ints.assign(data, data + p->GetSize());
                break;
            }
        }
        args.attrs.push_back(v);
    }
    auto ascendc = platform_ascendc::PlatformAscendC(ctx->GetPlatformInfo());
    PlatformInfo platform;
    platform.vector_cores = ascendc.GetCoreNumAiv();
    uint64_t ub = 0;
    ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    platform.ub_bytes = ub;
    // A mixed Cube/Vector operator counts blockDim in AI cores and sizes its Matmul tiles by
    // the Cube unit's buffers (PlatformAscendC/GetCoreNumAic.md, GetCoreMemSize.md). Vector-only
    // tilings leave cube_cores unread.
    if (onCube) {
        platform.cube_cores = ascendc.GetCoreNumAic();
        ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, platform.l1_bytes);
        ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, platform.l0a_bytes);
        ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, platform.l0b_bytes);
        ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, platform.l0c_bytes);
    }
    TilingPlan<TD> plan = tiling(args, platform);
    if (!plan.ok())
        return ge::GRAPH_FAILED;
    *ctx->GetTilingData<TD>() = plan.data;
    ctx->SetBlockDim(plan.block_dim);
    ctx->SetTilingKey(plan.tiling_key);
    size_t* workspace = ctx->GetWorkspaceSizes(1);
    workspace[0] = static_cast<size_t>(ascendc.GetLibApiWorkSpaceSize() + plan.workspace_bytes);
    return ge::GRAPH_SUCCESS;
}

}  // namespace mxrec::cann

#endif  // MXREC_CANN_TILING_GLUE_H
