// A stand-in for the CANN host headers, declaring only the API surface the mxrec op_host
// sources use, with the signatures of CANN 9 (register/op_def_registry.h, exe_graph contexts).
// Compiling op_host sources against it (-fsyntax-only) catches typos and type errors in code
// this machine cannot build for real; it says nothing about the toolkit's behaviour.
#ifndef FAKE_CANN_OP_DEF_REGISTRY_H
#define FAKE_CANN_OP_DEF_REGISTRY_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
enum DataType {
    DT_FLOAT,
    DT_FLOAT16,
    DT_BF16,
    DT_INT32,
    DT_INT64,
    DT_INT8,
    DT_UINT8,
    DT_INT16,
    DT_BOOL,
    DT_DOUBLE
};
enum Format { FORMAT_ND };
}  // namespace ge

namespace gert {
class Shape {
public:
    size_t GetDimNum() const;
    int64_t GetDim(size_t index) const;
    void SetDimNum(size_t num);
    void SetDim(size_t index, int64_t value);
    int64_t GetShapeSize() const;
};
class StorageShape {
public:
    const Shape& GetStorageShape() const;
    const Shape& GetOriginShape() const;
};
class CompileTimeTensorDesc {
public:
    ge::DataType GetDataType() const;
};
class ContinuousVector {
public:
    const void* GetData() const;
    size_t GetSize() const;
};
class RuntimeAttrs {
public:
    template <typename T>
    const T* GetAttrPointer(size_t index) const;
};
class TilingContext {
public:
    const StorageShape* GetInputShape(size_t index) const;
    const StorageShape* GetOptionalInputShape(size_t irIndex) const;
    const CompileTimeTensorDesc* GetInputDesc(size_t index) const;
    const CompileTimeTensorDesc* GetOptionalInputDesc(size_t irIndex) const;
    const StorageShape* GetOutputShape(size_t index) const;
    const CompileTimeTensorDesc* GetOutputDesc(size_t index) const;
    const RuntimeAttrs* GetAttrs() const;
    template <typename T>
    T* GetTilingData();
    void SetBlockDim(uint32_t blockDim);
    void SetTilingKey(uint64_t key);
    size_t* GetWorkspaceSizes(size_t num);
    struct PlatFormInfos* GetPlatformInfo() const;
};
class InferShapeContext {
public:
    const Shape* GetInputShape(size_t index) const;
    const Shape* GetOptionalInputShape(size_t irIndex) const;
    Shape* GetOutputShape(size_t index);
    const RuntimeAttrs* GetAttrs() const;
};
class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t index) const;
    void SetOutputDataType(size_t index, ge::DataType type);
};
}  // namespace gert

namespace ops {
enum Option { REQUIRED, OPTIONAL, DYNAMIC };
class OpParamDef {
public:
    OpParamDef& ParamType(Option type);
    OpParamDef& DataType(std::vector<ge::DataType> types);
    OpParamDef& Format(std::vector<ge::Format> formats);
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format> formats);
};
class OpAttrDef {
public:
    OpAttrDef& AttrType(Option type);
    OpAttrDef& Int();
    OpAttrDef& Int(int64_t value);
    OpAttrDef& Float();
    OpAttrDef& Float(float value);
    OpAttrDef& Bool();
    OpAttrDef& Bool(bool value);
    OpAttrDef& ListInt();
    OpAttrDef& ListInt(std::vector<int64_t> value);
};
class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(ge::graphStatus (*func)(gert::TilingContext*));
    OpAICoreDef& AddConfig(const char* soc);
};
class OpDef {
public:
    explicit OpDef(const char* type);
    OpParamDef& Input(const char* name);
    OpParamDef& Output(const char* name);
    OpAttrDef& Attr(const char* name);
    OpDef& SetInferShape(ge::graphStatus (*func)(gert::InferShapeContext*));
    OpDef& SetInferDataType(ge::graphStatus (*func)(gert::InferDataTypeContext*));
    OpAICoreDef& AICore();
};
}  // namespace ops

#define OP_ADD(opType) static ops::opType g_##opType##_registration(#opType)

#endif  // FAKE_CANN_OP_DEF_REGISTRY_H
