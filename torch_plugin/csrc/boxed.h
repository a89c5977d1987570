// The arguments of a boxed kernel, read by their names in the operator's schema.
//
// fbgemm's own callers reach most of the operators we implement through typed handles whose
// C++ signatures (std::vector<Tensor> offsets, SymInt sizes, Tensor& arguments) an unboxed
// kernel of ours would have to repeat exactly: a mismatch aborts loading or fails the call.
// fbgemm registers its CPU kernels of these operators boxed, so ours are boxed too: a boxed
// kernel has no C++ signature that can drift. Reading by name rather than by position keeps it
// that way: a schema that grows an argument (another fbgemm build) still dispatches here, and
// one that loses an argument we need fails naming it instead of reading the wrong slot.
//
// An Args views the stack: read every argument before dropping them.
#pragma once

#include <torch/library.h>

#include <optional>
#include <vector>

namespace fbgemm_npu {

class Args {
public:
    Args(const c10::OperatorHandle& op, torch::jit::Stack* stack)
        : schema_(op.schema()), values_(torch::jit::last(*stack, op.schema().arguments().size())) {}

    const c10::IValue& get(const char* name) const {
        const auto index = schema_.argumentIndexWithName(name);
        TORCH_CHECK(index.has_value(), schema_.name(), ": the npu kernel needs argument '", name,
                    "', which this schema lacks: ", schema_);
        return values_[static_cast<size_t>(*index)];
    }

    bool has(const char* name) const { return schema_.argumentIndexWithName(name).has_value(); }

    // A Tensor or Tensor? argument; None is an undefined tensor.
    at::Tensor tensor(const char* name) const {
        const c10::IValue& v = get(name);
        return v.isNone() ? at::Tensor() : v.toTensor();
    }

    std::optional<at::Tensor> optional_tensor(const char* name) const {
        return get(name).toOptional<at::Tensor>();
    }

    std::vector<at::Tensor> tensor_list(const char* name) const {
        return get(name).toTensorVector();
    }

    std::optional<std::vector<at::Tensor>> optional_tensor_list(const char* name) const {
        const c10::IValue& v = get(name);
        if (v.isNone())
            return std::nullopt;
        return v.toTensorVector();
    }

    // An int or SymInt argument (a symbolic one is specialised to its value).
    int64_t integer(const char* name) const { return to_int(get(name)); }

    std::optional<int64_t> optional_integer(const char* name) const {
        const c10::IValue& v = get(name);
        if (v.isNone())
            return std::nullopt;
        return to_int(v);
    }

    // An int[] or SymInt[] argument.
    std::vector<int64_t> int_list(const char* name) const {
        const c10::IValue& v = get(name);
        if (v.isIntList())
            return v.toIntVector();
        std::vector<int64_t> out;
        for (const c10::SymInt& s : v.toSymIntVector()) {
            out.push_back(s.guard_int(__FILE__, __LINE__));
        }
        return out;
    }

    double real(const char* name) const { return get(name).toDouble(); }
    bool flag(const char* name) const { return get(name).toBool(); }

    // An argument fbgemm may drop or add in other versions: its value, or `fallback`.
    int64_t integer_or(const char* name, int64_t fallback) const {
        return has(name) ? integer(name) : fallback;
    }
    double real_or(const char* name, double fallback) const {
        return has(name) ? real(name) : fallback;
    }

    const char* op() const { return schema_.name().c_str(); }
    // How many arguments the call put on the stack (to drop once they are read).
    size_t size() const { return values_.size(); }

private:
    static int64_t to_int(const c10::IValue& v) {
        return v.isSymInt() ? v.toSymInt().guard_int(__FILE__, __LINE__) : v.toInt();
    }

    const c10::FunctionSchema& schema_;
    c10::ArrayRef<c10::IValue> values_;
};

}  // namespace fbgemm_npu
