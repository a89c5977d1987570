// Python bindings of the core (module hybrid_torchrec._C).
//
// Tensors are checked here and the core sees raw pointers. The Python layer has already
// moved ids to the CPU, widened them to int64 and made them contiguous, so a failed check
// below means a caller bypassed it. Every call that does real work releases the GIL, so a
// pipeline thread can map batch i+1 while Python runs batch i.
#include <torch/extension.h>
#include <torch/version.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bucketize.h"
#include "common.h"
#include "dedup.h"
#include "id_mapper.h"
#include "recsdk_ext/runtime_bindings.h"

namespace py = pybind11;

namespace hybrid {

namespace {

// The Python class raised for CapacityError; set once at import and never released (a
// py::object destroyed after the interpreter has shut down would crash at exit).
PyObject* g_capacity_error = nullptr;

void check_ids(const at::Tensor& t, const char* name) {
    if (!t.device().is_cpu() || t.scalar_type() != at::kLong || t.dim() != 1 ||
        !t.is_contiguous()) {
        throw std::invalid_argument(std::string(name) +
                                    " must be a contiguous 1-D int64 CPU tensor, got " +
                                    std::string(c10::toString(t.scalar_type())) + " of shape " +
                                    c10::str(t.sizes()) + " on " + t.device().str());
    }
}

at::Tensor to_tensor(Int64Array&& a) {
    int64_t* data = a.data.release();
    return at::from_blob(
        data, {a.size}, [](void* p) { delete[] static_cast<int64_t*>(p); },
        at::TensorOptions().dtype(at::kLong));
}

at::Tensor to_tensor(std::vector<int64_t>&& v) {
    const int64_t n = static_cast<int64_t>(v.size());
    if (n == 0)
        return at::empty({0}, at::kLong);
    auto* owner = new std::vector<int64_t>(std::move(v));
    return at::from_blob(
        owner->data(), {n}, [owner](void*) { delete owner; }, at::TensorOptions().dtype(at::kLong));
}

std::vector<int64_t> to_vector(const at::Tensor& t, const char* name) {
    check_ids(t, name);
    const int64_t* p = t.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + t.numel());
}

py::tuple result_tuple(MapResult&& r) {
    return py::make_tuple(to_tensor(std::move(r.unique_ids)), to_tensor(std::move(r.rows)),
                          to_tensor(std::move(r.counts)), to_tensor(std::move(r.inverse)),
                          to_tensor(std::move(r.evicted_ids)), to_tensor(std::move(r.evicted_rows)),
                          r.num_new);
}

void bind_runtime(py::module_& m) {
    recsdk_ext::bind_build_and_pool(m);
    m.def("_set_error_types",
          [](py::object capacity_error) { g_capacity_error = capacity_error.release().ptr(); });
    py::register_exception_translator([](std::exception_ptr e) {
        try {
            if (e)
                std::rethrow_exception(e);
        } catch (const CapacityError& x) {
            PyErr_SetString(g_capacity_error != nullptr ? g_capacity_error : PyExc_RuntimeError,
                            x.what());
        }
    });
}

void bind_unique(py::module_& m) {
    m.def(
        "unique",
        [](const at::Tensor& ids, bool sorted, bool return_counts) {
            check_ids(ids, "ids");
            const int64_t n = ids.numel();
            Int64Array unique, counts, inverse;
            {
                py::gil_scoped_release nogil;
                // One workspace per calling thread, kept for the next batch of that thread.
                thread_local DedupWorkspace w;
                dedup(ids.data_ptr<int64_t>(), n, dedup_log2_parts(n), w);
                unique.allocate(w.num_unique);
                counts.allocate(w.num_unique);
                inverse.allocate(n);
                number_distinct(w, unique.data.get(), counts.data.get(), nullptr);
                write_inverse(w, inverse.data.get());
                if (sorted) {
                    sort_unique(w.num_unique, unique.data.get(), counts.data.get(), n,
                                inverse.data.get());
                }
            }
            py::object c = py::none();
            if (return_counts)
                c = py::cast(to_tensor(std::move(counts)));
            return py::make_tuple(to_tensor(std::move(unique)), to_tensor(std::move(inverse)), c);
        },
        py::arg("ids"), py::arg("sorted"), py::arg("return_counts"));
}

void bind_bucketize(py::module_& m) {
    m.def(
        "bucketize",
        [](const at::Tensor& lengths, const at::Tensor& ids, int64_t num_buckets,
           const std::vector<int64_t>& batch_size_per_feature, int routing,
           const c10::optional<at::Tensor>& block_sizes, bool keep_ids, bool ids_are_32_bit,
           bool want_permute) {
            check_ids(lengths, "lengths");
            check_ids(ids, "ids");
            BucketizeInput in;
            in.lengths = lengths.data_ptr<int64_t>();
            in.num_bags = lengths.numel();
            in.feature_begin.assign(1, 0);
            for (int64_t b : batch_size_per_feature) {
                if (b < 0)
                    throw std::invalid_argument("negative batch size");
                in.feature_begin.push_back(in.feature_begin.back() + b);
            }
            in.ids = ids.data_ptr<int64_t>();
            in.num_ids = ids.numel();
            in.num_buckets = num_buckets;
            in.routing = static_cast<Routing>(routing);
            in.keep_ids = keep_ids;
            in.ids_are_32_bit = ids_are_32_bit;
            if (in.routing == Routing::kBlock) {
                if (!block_sizes.has_value()) {
                    throw std::invalid_argument("block routing needs block_sizes");
                }
                check_ids(*block_sizes, "block_sizes");
                if (block_sizes->numel() != static_cast<int64_t>(batch_size_per_feature.size())) {
                    throw std::invalid_argument("one block size per feature");
                }
                in.block_sizes = block_sizes->data_ptr<int64_t>();
            }
            BucketizeOutput out;
            {
                py::gil_scoped_release nogil;
                bucketize(in, out, want_permute);
            }
            py::object permute = py::none();
            if (want_permute)
                permute = py::cast(to_tensor(std::move(out.permute)));
            return py::make_tuple(to_tensor(std::move(out.lengths)), to_tensor(std::move(out.ids)),
                                  permute);
        },
        py::arg("lengths"), py::arg("ids"), py::arg("num_buckets"),
        py::arg("batch_size_per_feature"), py::arg("routing"), py::arg("block_sizes"),
        py::arg("keep_ids"), py::arg("ids_are_32_bit"), py::arg("want_permute"));
}

void bind_mapper(py::module_& m) {
    py::class_<IdMapper, std::shared_ptr<IdMapper>>(m, "IdMapper")
        .def(py::init([](int64_t capacity, int policy, int64_t protect_batches, int64_t ttl_steps,
                         std::string name) {
                 if (policy < 0 || policy > 2)
                     throw std::invalid_argument("unknown policy");
                 return std::make_shared<IdMapper>(capacity, static_cast<Policy>(policy),
                                                   protect_batches, ttl_steps, std::move(name));
             }),
             py::arg("capacity"), py::arg("policy"), py::arg("protect_batches"),
             py::arg("ttl_steps"), py::arg("name"))
        .def_property_readonly("capacity", &IdMapper::capacity)
        .def_property_readonly("size", &IdMapper::size)
        .def_property_readonly("step", &IdMapper::step)
        .def_property_readonly("policy", [](const IdMapper& x) { return policy_name(x.policy()); })
        .def_property_readonly("protect_batches", &IdMapper::protect_batches)
        .def_property_readonly("ttl_steps", &IdMapper::ttl_steps)
        .def_property_readonly("name", &IdMapper::name)
        .def_property_readonly("num_partitions",
                               [](const IdMapper& x) { return 1 << x.log2_partitions(); })
        .def_property_readonly("memory_bytes", &IdMapper::memory_bytes)
        .def(
            "map",
            [](IdMapper& x, const at::Tensor& ids, bool insert) {
                check_ids(ids, "ids");
                MapResult r;
                {
                    py::gil_scoped_release nogil;
                    r = x.map(ids.data_ptr<int64_t>(), ids.numel(), insert);
                }
                return result_tuple(std::move(r));
            },
            py::arg("ids"), py::arg("insert"))
        .def(
            "lookup",
            [](const IdMapper& x, const at::Tensor& ids) {
                check_ids(ids, "ids");
                at::Tensor rows = at::empty({ids.numel()}, at::kLong);
                py::gil_scoped_release nogil;
                x.lookup(ids.data_ptr<int64_t>(), ids.numel(), rows.data_ptr<int64_t>());
                return rows;
            },
            py::arg("ids"))
        .def(
            "remove",
            [](IdMapper& x, const at::Tensor& ids) {
                check_ids(ids, "ids");
                at::Tensor rows = at::empty({ids.numel()}, at::kLong);
                py::gil_scoped_release nogil;
                x.remove(ids.data_ptr<int64_t>(), ids.numel(), rows.data_ptr<int64_t>());
                return rows;
            },
            py::arg("ids"))
        .def("export_state",
             [](const IdMapper& x) {
                 MappingState s;
                 {
                     py::gil_scoped_release nogil;
                     s = x.export_state();
                 }
                 return py::make_tuple(to_tensor(std::move(s.ids)), to_tensor(std::move(s.rows)),
                                       to_tensor(std::move(s.counts)),
                                       to_tensor(std::move(s.last_used)), s.step);
             })
        .def(
            "load_state",
            [](IdMapper& x, const at::Tensor& ids, const at::Tensor& rows, const at::Tensor& counts,
               const at::Tensor& last_used, int64_t step) {
                MappingState s;
                s.ids = to_vector(ids, "ids");
                s.rows = to_vector(rows, "rows");
                s.counts = to_vector(counts, "counts");
                s.last_used = to_vector(last_used, "last_used");
                s.step = step;
                py::gil_scoped_release nogil;
                x.load_state(s);
            },
            py::arg("ids"), py::arg("rows"), py::arg("counts"), py::arg("last_used"),
            py::arg("step"))
        .def("clear", &IdMapper::clear, py::call_guard<py::gil_scoped_release>());

    m.def(
        "map_tables",
        [](const std::vector<std::shared_ptr<IdMapper>>& mappers,
           const std::vector<at::Tensor>& ids, bool insert) {
            std::vector<IdMapper*> raw;
            std::vector<const int64_t*> ptrs;
            std::vector<int64_t> sizes;
            for (const auto& x : mappers)
                raw.push_back(x.get());
            for (const at::Tensor& t : ids) {
                check_ids(t, "ids");
                ptrs.push_back(t.data_ptr<int64_t>());
                sizes.push_back(t.numel());
            }
            std::vector<MapResult> results;
            {
                py::gil_scoped_release nogil;
                results = map_tables(raw, ptrs, sizes, insert);
            }
            py::list out;
            for (MapResult& r : results)
                out.append(result_tuple(std::move(r)));
            return out;
        },
        py::arg("mappers"), py::arg("ids"), py::arg("insert"));
}

}  // namespace

}  // namespace hybrid

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "hybrid_torchrec's C++ core: id mapping, de-duplication and bucketization";
    hybrid::bind_runtime(m);
    hybrid::bind_unique(m);
    hybrid::bind_bucketize(m);
    hybrid::bind_mapper(m);
}
