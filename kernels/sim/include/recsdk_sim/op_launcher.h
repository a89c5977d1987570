// The sim operator launcher: what aclnn<Op>GetWorkspaceSize + aclnn<Op> do on a CANN host, on
// host buffers. Validates tensors and attributes against the operator spec (generated from
// op.toml), runs the operator's own tiling function, allocates the workspace, registers every
// tensor as the only global memory the kernel may touch, runs the kernel variant for the dtypes
// on blockDim emulated cores and reports the counters.
#ifndef RECSDK_SIM_OP_LAUNCHER_H
#define RECSDK_SIM_OP_LAUNCHER_H

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "recsdk_sim/api.h"
#include "recsdk_sim/launch.h"
#include "recsdk_sim/mix.h"
#include "tiling_common.h"

#define RECSDK_SIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace recsdk::sim {

struct TensorSpec {
    const char* name;
    bool optional;
    bool mutable_input;  // written in place by the kernel (e.g. bounds_check_indices' indices)
    int32_t min_rank;
    int32_t max_rank;
    std::vector<int32_t> dtypes;  // allowed RecsdkSimDType values
};

struct AttrSpec {
    const char* name;
    int32_t kind;  // RecsdkSimAttrKind
};

struct OpSpec {
    const char* name;     // snake_case kernel name
    const char* op_type;  // PascalCase OpType
    std::vector<TensorSpec> inputs;
    std::vector<TensorSpec> outputs;
    std::vector<AttrSpec> attrs;
    // KERNEL_TYPE_* the kernel declares with KERNEL_TASK_TYPE_DEFAULT (recsdk_sim/mix.h; op.toml
    // [op] kernel_type once the generator writes it). With cube cores blockDim counts AI cores.
    int32_t kernel_type = 0;
};

inline bool Present(const RecsdkSimTensor& t) {
    return t.ndim >= 0;
}

inline uint64_t TensorBytes(const RecsdkSimTensor& t) {
    if (!Present(t))
        return 0;
    uint64_t n = 1;
    for (int32_t i = 0; i < t.ndim; ++i)
        n *= static_cast<uint64_t>(t.shape[i]);
    return n * static_cast<uint64_t>(mxrec::DTypeSize(static_cast<mxrec::DType>(t.dtype)));
}

inline std::string DTypeList(const std::vector<int32_t>& ds) {
    std::string s;
    for (size_t i = 0; i < ds.size(); ++i) {
        s += (i ? ", " : "") + std::string(mxrec::DTypeName(static_cast<mxrec::DType>(ds[i])));
    }
    return s;
}

inline std::string CheckTensor(const OpSpec& op, const TensorSpec& spec, const RecsdkSimTensor& t,
                               const char* role) {
    const std::string who = std::string(op.name) + ": " + role + " '" + spec.name + "'";
    if (!Present(t))
        return spec.optional ? std::string() : who + " is required";
    if (t.ndim > RECSDK_SIM_MAX_DIMS)
        return who + " has too many dimensions";
    if (t.ndim < spec.min_rank || t.ndim > spec.max_rank) {
        return who + " must have " + std::to_string(spec.min_rank) +
               (spec.max_rank != spec.min_rank ? " to " + std::to_string(spec.max_rank)
                                               : std::string()) +
               " dimension(s), got " + std::to_string(t.ndim);
    }
    for (int32_t i = 0; i < t.ndim; ++i) {
        if (t.shape[i] < 0)
            return who + " has a negative dimension";
    }
    bool ok = false;
    for (int32_t d : spec.dtypes)
        ok = ok || d == t.dtype;
    if (!ok) {
        return who + " has dtype " + mxrec::DTypeName(static_cast<mxrec::DType>(t.dtype)) +
               "; supported: " + DTypeList(spec.dtypes);
    }
    if (t.data == nullptr && TensorBytes(t) != 0)
        return who + " has no data pointer";
    return std::string();
}

inline mxrec::TensorDesc Describe(const RecsdkSimTensor& t) {
    mxrec::TensorDesc d;
    d.present = Present(t);
    if (!d.present)
        return d;
    d.dtype = static_cast<mxrec::DType>(t.dtype);
    d.ndim = t.ndim;
    for (int32_t i = 0; i < t.ndim; ++i)
        d.dims[i] = t.shape[i];
    return d;
}

// Variant dispatch, generated per operator: returns the variant index for the dtypes of the
// tensors (-1: no kernel was built for that combination) and runs one.
struct Variants {
    std::function<int(const RecsdkSimTensor*)> select;
    std::function<void(int, GM_ADDR*, GM_ADDR, GM_ADDR)> run;
};

template <typename TD>
inline int32_t LaunchOp(const OpSpec& op, const RecsdkSimTensor* tensors, int32_t num_tensors,
                        const RecsdkSimAttr* attrs, int32_t num_attrs,
                        const RecsdkSimOptions* options, RecsdkSimReport* report,
                        mxrec::TilingPlan<TD> (*tiling)(const mxrec::OpArgs&,
                                                        const mxrec::PlatformInfo&),
                        const Variants& variants) {
    if (report != nullptr)
        std::memset(report, 0, sizeof(*report));
    auto reject = [&](int32_t status, const std::string& msg) {
        if (report != nullptr) {
            report->status = status;
            SetMessage(report, msg);
        }
        return status;
    };
    try {
        if (recsdk_sim_runtime_layout() != kRuntimeLayout) {
            return reject(
                RECSDK_SIM_INTERNAL,
                std::string(op.name) +
                    ": this operator library was built against other emulation headers than the "
                    "sim runtime library (libmxrec_sim_runtime.so) it loaded; rebuild both with "
                    "`recsdk-build ops --target sim`");
        }
        const size_t n_in = op.inputs.size();
        const size_t n_out = op.outputs.size();
        if (num_tensors != static_cast<int32_t>(n_in + n_out)) {
            return reject(RECSDK_SIM_INVALID_ARGUMENT,
                          std::string(op.name) + ": expected " + std::to_string(n_in + n_out) +
                              " tensors (inputs then outputs), got " + std::to_string(num_tensors));
        }
        if (num_attrs != static_cast<int32_t>(op.attrs.size())) {
            return reject(RECSDK_SIM_INVALID_ARGUMENT,
                          std::string(op.name) + ": expected " + std::to_string(op.attrs.size()) +
                              " attributes, got " + std::to_string(num_attrs));
        }
        mxrec::OpArgs args;
        for (size_t i = 0; i < n_in + n_out; ++i) {
            const bool is_in = i < n_in;
            const TensorSpec& spec = is_in ? op.inputs[i] : op.outputs[i - n_in];
            const std::string err = CheckTensor(op, spec, tensors[i], is_in ? "input" : "output");
            if (!err.empty())
                return reject(RECSDK_SIM_INVALID_ARGUMENT, err);
            (is_in ? args.inputs : args.outputs).push_back(Describe(tensors[i]));
        }
        for (size_t i = 0; i < op.attrs.size(); ++i) {
            const RecsdkSimAttr& a = attrs[i];
            const AttrSpec& spec = op.attrs[i];
            const bool kind_ok = a.kind == spec.kind ||
                                 (spec.kind == RECSDK_ATTR_FLOAT && a.kind == RECSDK_ATTR_INT) ||
                                 (spec.kind == RECSDK_ATTR_BOOL && a.kind == RECSDK_ATTR_INT);
            if (!kind_ok) {
                return reject(RECSDK_SIM_INVALID_ARGUMENT, std::string(op.name) + ": attribute '" +
                                                               spec.name + "' has the wrong kind");
            }
            mxrec::AttrValue v;
            v.i = a.i;
            v.f = a.kind == RECSDK_ATTR_INT ? static_cast<double>(a.i) : a.f;
            if (a.kind == RECSDK_ATTR_INT_LIST) {
                if (a.count > 0 && a.ints == nullptr) {
                    return reject(
                        RECSDK_SIM_INVALID_ARGUMENT,
                        std::string(op.name) + ": attribute '" + spec.name + "' has no values");
                }
                v.ints.assign(a.ints, a.ints + (a.count > 0 ? a.count : 0));
            }
            args.attrs.push_back(v);
        }

        const char* soc_name = options != nullptr ? options->soc : nullptr;
        const SocInfo* soc = FindSoc(soc_name);
        if (soc == nullptr) {
            return reject(RECSDK_SIM_INVALID_ARGUMENT,
                          std::string("unknown SoC '") + soc_name + "'");
        }
        mxrec::PlatformInfo platform;
        // options->max_cores caps both kinds of core (a test's or benchmark's smaller chip).
        const auto capped = [options](uint32_t cores) {
            const bool cap = options != nullptr && options->max_cores > 0 &&
                             static_cast<uint32_t>(options->max_cores) < cores;
            return cap ? static_cast<uint32_t>(options->max_cores) : cores;
        };
        platform.vector_cores = capped(soc->vector_cores);
        platform.ub_bytes = soc->ub_bytes;
        platform.soc = soc->name;
        platform.cube_cores = capped(soc->cube_cores);
        platform.l1_bytes = soc->l1_bytes;
        platform.l0a_bytes = soc->l0a_bytes;
        platform.l0b_bytes = soc->l0b_bytes;
        platform.l0c_bytes = soc->l0c_bytes;
        platform.bt_bytes = soc->bt_bytes;
        uint32_t aic = 0, aiv = 1;
        if (!KernelShape(op.kernel_type, &aic, &aiv)) {
            return reject(RECSDK_SIM_INTERNAL, std::string(op.name) + ": kernel type " +
                                                   KernelTypeName(op.kernel_type) +
                                                   " is not emulated");
        }
        // blockDim counts AI cores when the kernel has cube cores (AIC-only or mixed).
        const uint32_t max_block_dim = aic > 0 ? platform.cube_cores : platform.vector_cores;
        const char* block_unit = aic > 0 ? " AI cores (AIC)" : " vector cores";
        if (options != nullptr && options->min_core_bytes > 0)
            platform.min_core_bytes = options->min_core_bytes;
        if (options != nullptr && options->ub_bytes > 0 &&
            static_cast<uint64_t>(options->ub_bytes) < soc->ub_bytes) {
            platform.ub_bytes = static_cast<uint64_t>(options->ub_bytes) / 32 * 32;
        }

        const int variant = variants.select(tensors);
        if (variant < 0) {
            std::string combo;
            for (size_t i = 0; i < n_in + n_out; ++i) {
                if (!Present(tensors[i]))
                    continue;
                combo += (combo.empty() ? "" : ", ") +
                         std::string(mxrec::DTypeName(static_cast<mxrec::DType>(tensors[i].dtype)));
            }
            return reject(RECSDK_SIM_INVALID_ARGUMENT,
                          std::string(op.name) + ": no kernel variant for the dtype combination (" +
                              combo + ")");
        }

        mxrec::TilingPlan<TD> plan = tiling(args, platform);
        if (!plan.ok())
            return reject(RECSDK_SIM_INVALID_ARGUMENT, std::string(op.name) + ": " + plan.error);
        if (plan.block_dim == 0 || plan.block_dim > max_block_dim) {
            return reject(RECSDK_SIM_INTERNAL, std::string(op.name) + ": tiling chose blockDim " +
                                                   std::to_string(plan.block_dim) +
                                                   " on a platform with " +
                                                   std::to_string(max_block_dim) + block_unit);
        }

        const bool poison = options == nullptr || options->no_poison == 0;
        KernelRun run;
        run.kernel = op.name;
        run.soc = soc;
        run.block_dim = plan.block_dim;
        run.tiling_key = plan.tiling_key;
        run.sys_workspace = soc->sys_workspace;
        run.poison_ub = poison;
        run.ub_bytes = static_cast<uint32_t>(platform.ub_bytes);
        run.kernel_type = op.kernel_type;

        std::vector<GM_ADDR> ptrs(n_in + n_out);
        for (size_t i = 0; i < n_in + n_out; ++i) {
            const bool is_in = i < n_in;
            const TensorSpec& spec = is_in ? op.inputs[i] : op.outputs[i - n_in];
            ptrs[i] = Present(tensors[i]) ? static_cast<GM_ADDR>(tensors[i].data) : nullptr;
            const uint64_t bytes = TensorBytes(tensors[i]);
            if (ptrs[i] == nullptr || bytes == 0)
                continue;
            run.regions.push_back(GmRegion{ptrs[i], bytes, !is_in || spec.mutable_input,
                                           std::string(is_in ? "input " : "output ") + spec.name});
            // Outputs hold garbage on the device before the kernel writes them.
            if (!is_in && poison)
                std::memset(ptrs[i], kPoison, bytes);
        }

        // The workspace handed to the kernel starts with the system part (GetLibApiWorkSpaceSize
        // on a device, what GetSysWorkSpacePtr returns), then the user part; both are backed and
        // registered. The system part is not poisoned: it is large (16 MiB on Atlas A2/A3), the
        // pages of a fresh allocation are only touched if a kernel uses them, and the library APIs
        // that use it write before they read.
        const uint64_t user = plan.workspace_bytes;
        const uint64_t sys = soc->sys_workspace;
        std::unique_ptr<uint8_t[]> ws_mem(new uint8_t[sys + user + 64]);
        uint8_t* sys_ptr =
            ws_mem.get() + (64 - reinterpret_cast<uintptr_t>(ws_mem.get()) % 64) % 64;
        uint8_t* user_ptr = sys_ptr + sys;
        if (poison)
            std::memset(user_ptr, kPoison, user);
        if (sys > 0)
            run.regions.push_back(GmRegion{sys_ptr, sys, true, "system workspace"});
        if (user > 0)
            run.regions.push_back(GmRegion{user_ptr, user, true, "workspace", true});
        GM_ADDR workspace = sys_ptr;
        run.sys_workspace_ptr = workspace;

        std::unique_ptr<uint8_t[]> tiling_mem(new uint8_t[sizeof(TD) + 64]);
        uint8_t* tiling_ptr =
            tiling_mem.get() + (64 - reinterpret_cast<uintptr_t>(tiling_mem.get()) % 64) % 64;
        std::memcpy(tiling_ptr, &plan.data, sizeof(TD));
        run.regions.push_back(GmRegion{tiling_ptr, sizeof(TD), false, "tiling"});

        if (report != nullptr) {
            report->workspace_bytes = user;
            report->tiling_bytes = sizeof(TD);
        }
        GM_ADDR* p = ptrs.data();
        const int32_t status =
            RunKernel(run, [&] { variants.run(variant, p, workspace, tiling_ptr); }, report);
        if (report != nullptr) {
            report->workspace_bytes = user;
            report->tiling_bytes = sizeof(TD);
        }
        return status;
    } catch (const std::exception& e) {
        return reject(RECSDK_SIM_INTERNAL, std::string(op.name) + ": " + e.what());
    }
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_OP_LAUNCHER_H
