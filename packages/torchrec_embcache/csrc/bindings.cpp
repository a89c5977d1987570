// Python bindings of the embcache core (module torchrec_embcache._C).
//
// The module is assembled from the bind_* functions of bindings.h. The ones defined here
// need no tensors and so include pybind11 without torch's headers, which dominate the
// compile time of the translation units that do use them. Long calls release the GIL so
// that other Python threads (lookups, the training loop) keep running.
#include <string>

#include "bindings.h"
#include "common.h"
#include "crc32c.h"
#include "host_table.h"
#include "recsdk_ext/runtime_bindings.h"

namespace py = pybind11;

namespace embcache {

namespace {

// Python exception types of torchrec_embcache.errors, registered at import time.
py::object g_error, g_checkpoint_error, g_capacity_error, g_state_error;

void translate(std::exception_ptr e) {
    auto raise = [](const py::object& type, const char* what) {
        if (type) {
            PyErr_SetString(type.ptr(), what);
        } else {
            PyErr_SetString(PyExc_RuntimeError, what);
        }
    };
    try {
        std::rethrow_exception(e);
    } catch (const CheckpointError& x) {
        raise(g_checkpoint_error, x.what());
    } catch (const CacheCapacityError& x) {
        raise(g_capacity_error, x.what());
    } catch (const StateError& x) {
        raise(g_state_error, x.what());
    } catch (const Error& x) {
        raise(g_error, x.what());
    }
}

}  // namespace

void bind_errors(py::module_& m) {
    py::register_exception_translator(&translate);
    m.def(
        "_set_error_types",
        [](py::object base, py::object checkpoint, py::object capacity, py::object state) {
            g_error = base;
            g_checkpoint_error = checkpoint;
            g_capacity_error = capacity;
            g_state_error = state;
        },
        "Registers the Python exception classes raised for core errors.");
}

void bind_runtime(py::module_& m) {
    recsdk_ext::bind_build_and_pool(m);
    m.def("crc32c", [](py::bytes b) {
        const std::string s = b;
        return crc32c(s.data(), s.size());
    });
}

void bind_configs(py::module_& m) {
    py::enum_<OptimKind>(m, "OptimKind")
        .value("SGD", OptimKind::SGD)
        .value("ADAGRAD", OptimKind::Adagrad)
        .value("ADAM", OptimKind::Adam);
    py::enum_<InitKind>(m, "InitKind")
        .value("UNIFORM", InitKind::Uniform)
        .value("NORMAL", InitKind::Normal)
        .value("TRUNCATED_NORMAL", InitKind::TruncatedNormal)
        .value("CONSTANT", InitKind::Constant);
    py::enum_<RowDtype>(m, "RowDtype")
        .value("F32", RowDtype::F32)
        .value("F16", RowDtype::F16)
        .value("BF16", RowDtype::BF16);

    py::class_<OptimConfig>(m, "OptimConfig")
        .def(py::init<>())
        .def_readwrite("kind", &OptimConfig::kind)
        .def_readwrite("lr", &OptimConfig::lr)
        .def_readwrite("eps", &OptimConfig::eps)
        .def_readwrite("beta1", &OptimConfig::beta1)
        .def_readwrite("beta2", &OptimConfig::beta2)
        .def_readwrite("initial_accumulator", &OptimConfig::initial_accumulator);
    py::class_<InitConfig>(m, "InitConfig")
        .def(py::init<>())
        .def_readwrite("kind", &InitConfig::kind)
        .def_readwrite("p0", &InitConfig::p0)
        .def_readwrite("p1", &InitConfig::p1)
        .def_readwrite("seed", &InitConfig::seed);
    py::class_<TableConfig>(m, "TableConfig")
        .def(py::init<>())
        .def_readwrite("dim", &TableConfig::dim)
        .def_readwrite("optim", &TableConfig::optim)
        .def_readwrite("init", &TableConfig::init)
        .def_readwrite("admit_threshold", &TableConfig::admit_threshold)
        .def_readwrite("admit_default", &TableConfig::admit_default)
        .def_readwrite("ttl_steps", &TableConfig::ttl_steps)
        .def_readwrite("capacity", &TableConfig::capacity)
        .def_readwrite("capacity_by_recency", &TableConfig::capacity_by_recency)
        .def_readwrite("evict_interval", &TableConfig::evict_interval)
        .def_readwrite("shard_bits", &TableConfig::shard_bits)
        .def_readwrite("dtype", &TableConfig::dtype)
        .def_readwrite("stochastic_rounding", &TableConfig::stochastic_rounding);
}

}  // namespace embcache

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "torchrec_embcache core: host table, device-cache planner, checkpoints";
    embcache::bind_errors(m);
    embcache::bind_runtime(m);
    embcache::bind_configs(m);
    embcache::bind_host_table(m);
    embcache::bind_cache_planner(m);
}
