// Python binding of HostTable, group by group.
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "host_table.h"
#include "recsdk_ext/id_hash.h"
#include "tensor_args.h"

namespace py = pybind11;

namespace embcache {

namespace {

using PyHostTable = py::class_<HostTable, std::shared_ptr<HostTable>>;

void def_table_properties(PyHostTable& cls) {
    cls.def(py::init<const TableConfig&>())
        .def_property_readonly("config", &HostTable::config)
        .def_property_readonly("dim", &HostTable::dim)
        .def_property_readonly("row_width", &HostTable::row_width)
        .def_property_readonly("embedding_units", &HostTable::embedding_units)
        .def_property_readonly("num_shards", &HostTable::num_shards)
        .def_property_readonly("size", &HostTable::size)
        .def_property_readonly("pending_size", &HostTable::pending_size)
        .def_property_readonly("admitted_total", &HostTable::admitted_total)
        .def_property_readonly("evicted_total", &HostTable::evicted_total)
        .def_property_readonly("step", &HostTable::step)
        .def_property_readonly("optimizer_step", &HostTable::optimizer_step)
        .def_property_readonly("memory_bytes", &HostTable::memory_bytes)
        .def_property_readonly("checkpoint_id", &HostTable::checkpoint_id)
        .def_property("learning_rate", &HostTable::learning_rate, &HostTable::set_learning_rate);
}

// [ids, width] floats filled by a read-only table call on the ids.
template <class Read>
at::Tensor rows_of(const HostTable& t, const at::Tensor& ids, int64_t width, Read read) {
    const int64_t* p = ids_ptr(ids, "ids");
    at::Tensor out = at::empty({ids.numel(), width}, at::kFloat);
    float* o = out.data_ptr<float>();
    {
        py::gil_scoped_release nogil;
        (t.*read)(p, ids.numel(), o);
    }
    return out;
}

// Batch lookups and row transfers (the training and device-cache paths).
void def_table_batches(PyHostTable& cls) {
    cls.def(
           "prepare",
           [](HostTable& t, const at::Tensor& ids, bool train, bool gather, int64_t max_unique) {
               const int64_t* p = ids_ptr(ids, "ids");
               PreparedBatch b;
               {
                   py::gil_scoped_release nogil;
                   b = t.prepare(p, ids.numel(), train, gather, max_unique);
               }
               const int64_t u = static_cast<int64_t>(b.unique_ids.size());
               py::object rows = py::none();
               if (gather)
                   rows = py::cast(to_tensor(std::move(b.rows), at::kFloat, {u, t.dim()}));
               return py::make_tuple(ids_tensor(std::move(b.unique_ids)),
                                     ids_tensor(std::move(b.inverse)),
                                     to_tensor(std::move(b.has_row), at::kBool, {u}), rows,
                                     ids_tensor(std::move(b.evicted)), b.step);
           },
           py::arg("ids"), py::arg("train"), py::arg("gather"), py::arg("max_unique") = -1)
        .def(
            "lookup",
            [](const HostTable& t, const at::Tensor& ids, const c10::optional<at::Tensor>& out) {
                if (!out.has_value())
                    return rows_of(t, ids, t.dim(), &HostTable::lookup);
                // Into the caller's buffer: no allocation, no first-touch page faults.
                const int64_t* p = ids_ptr(ids, "ids");
                float* o = const_cast<float*>(floats_ptr(*out, "out", ids.numel(), t.dim()));
                {
                    py::gil_scoped_release nogil;
                    t.lookup(p, ids.numel(), o);
                }
                return *out;
            },
            py::arg("ids"), py::arg("out") = py::none())
        .def("read_rows",
             [](const HostTable& t, const at::Tensor& ids) {
                 return rows_of(t, ids, t.row_width(), &HostTable::read_rows);
             })
        .def("write_rows", [](HostTable& t, const at::Tensor& ids, const at::Tensor& rows) {
            const int64_t* p = ids_ptr(ids, "ids");
            const float* r = floats_ptr(rows, "rows", ids.numel(), t.row_width());
            py::gil_scoped_release nogil;
            t.write_rows(p, ids.numel(), r);
        });
}

// Sparse optimiser steps, on host rows or on rows held elsewhere.
void def_table_updates(PyHostTable& cls) {
    cls.def(
           "apply_gradients",
           [](HostTable& t, const at::Tensor& ids, const at::Tensor& grads,
              const c10::optional<at::Tensor>& has_row) {
               const int64_t* p = ids_ptr(ids, "ids");
               const float* g = floats_ptr(grads, "grads", ids.numel(), t.dim());
               const uint8_t* m = mask_ptr(has_row, ids.numel(), "has_row");
               py::gil_scoped_release nogil;
               t.apply_gradients(p, ids.numel(), g, m);
           },
           py::arg("ids"), py::arg("grads"), py::arg("has_row") = py::none())
        .def(
            "apply_gradients_to",
            [](HostTable& t, const at::Tensor& rows, const at::Tensor& slots,
               const at::Tensor& grads, const c10::optional<at::Tensor>& mask,
               const c10::optional<at::Tensor>& ids) {
                check_cpu(rows, "rows");
                if (rows.scalar_type() != at::kFloat || rows.dim() != 2 ||
                    rows.size(1) != t.row_width()) {
                    throw std::invalid_argument("rows must be a float32 [slots, " +
                                                std::to_string(t.row_width()) + "] tensor");
                }
                const int64_t* s = ids_ptr(slots, "slots");
                const int64_t n = slots.numel();
                for (int64_t i = 0; i < n; ++i) {
                    if (s[i] < 0 || s[i] >= rows.size(0))
                        throw std::invalid_argument("slot out of range");
                }
                const float* g = floats_ptr(grads, "grads", n, t.dim());
                const uint8_t* m = mask_ptr(mask, n, "mask");
                const int64_t* k = nullptr;
                if (ids.has_value()) {
                    k = ids_ptr(*ids, "ids");
                    if (ids->numel() != n)
                        throw std::invalid_argument("ids must have one entry per slot");
                }
                float* r = rows.data_ptr<float>();
                py::gil_scoped_release nogil;
                t.apply_gradients_to(r, t.row_width(), s, k, n, g, m);
            },
            py::arg("rows"), py::arg("slots"), py::arg("grads"), py::arg("mask") = py::none(),
            py::arg("ids") = py::none())
        .def("next_optimizer_step", &HostTable::next_optimizer_step);
}

// Which ids have rows, and removing them.
void def_table_membership(PyHostTable& cls) {
    cls.def("contains",
            [](const HostTable& t, const at::Tensor& ids) {
                const int64_t* p = ids_ptr(ids, "ids");
                std::vector<uint8_t> v;
                {
                    py::gil_scoped_release nogil;
                    v = t.contains(p, ids.numel());
                }
                return to_tensor(std::move(v), at::kBool, {ids.numel()});
            })
        .def("erase",
             [](HostTable& t, const at::Tensor& ids) {
                 const int64_t* p = ids_ptr(ids, "ids");
                 py::gil_scoped_release nogil;
                 return t.erase(p, ids.numel());
             })
        .def("evict_now",
             [](HostTable& t) {
                 std::vector<int64_t> v;
                 {
                     py::gil_scoped_release nogil;
                     v = t.evict_now();
                 }
                 return ids_tensor(std::move(v));
             })
        .def("clear", &HostTable::clear, py::call_guard<py::gil_scoped_release>());
}

// Rows and counters out as tensors (state_dict, export).
void def_table_dumps(PyHostTable& cls) {
    cls.def(
           "dump",
           [](const HostTable& t, bool only_modified) {
               RowDump d;
               {
                   py::gil_scoped_release nogil;
                   d = t.dump(only_modified);
               }
               const int64_t n = static_cast<int64_t>(d.keys.size());
               at::Tensor last_seen = u32_to_long(d.last_seen);
               at::Tensor count = u32_to_long(d.count);
               return py::make_tuple(ids_tensor(std::move(d.keys)), last_seen, count,
                                     to_tensor(std::move(d.rows), at::kFloat, {n, t.row_width()}));
           },
           py::arg("only_modified") = false)
        .def("dump_pending", [](const HostTable& t) {
            PendingDump d = t.dump_pending();
            at::Tensor count = u32_to_long(d.count);
            at::Tensor last_seen = u32_to_long(d.last_seen);
            return py::make_tuple(ids_tensor(std::move(d.keys)), count, last_seen);
        });
}

// Rows and counters back in (state_dict loading).
void def_table_restores(PyHostTable& cls) {
    cls.def("upsert",
            [](HostTable& t, const at::Tensor& keys, const at::Tensor& last_seen,
               const at::Tensor& count, const at::Tensor& rows) {
                const int64_t* k = ids_ptr(keys, "keys");
                const int64_t n = keys.numel();
                const int64_t* ls = ids_ptr(last_seen, "last_seen");
                const int64_t* c = ids_ptr(count, "count");
                if (last_seen.numel() != n || count.numel() != n) {
                    throw std::invalid_argument(
                        "keys, last_seen and count must have the same length");
                }
                const float* r = floats_ptr(rows, "rows", n, t.row_width());
                RowDump d;
                d.keys.assign(k, k + n);
                d.last_seen.resize(n);
                d.count.resize(n);
                for (int64_t i = 0; i < n; ++i) {
                    if (ls[i] < 0 || ls[i] > 0xffffffffLL || c[i] < 0 || c[i] > 0xffffffffLL) {
                        throw std::invalid_argument(
                            "last_seen and count must fit in 32 unsigned bits");
                    }
                    d.last_seen[i] = static_cast<uint32_t>(ls[i]);
                    d.count[i] = static_cast<uint32_t>(c[i]);
                }
                d.rows.assign(r, r + n * t.row_width());
                py::gil_scoped_release nogil;
                t.upsert(d);
            })
        .def("upsert_pending",
             [](HostTable& t, const at::Tensor& keys, const at::Tensor& count,
                const at::Tensor& last_seen) {
                 const int64_t* k = ids_ptr(keys, "keys");
                 const int64_t* c = ids_ptr(count, "count");
                 const int64_t* ls = ids_ptr(last_seen, "last_seen");
                 const int64_t n = keys.numel();
                 if (count.numel() != n || last_seen.numel() != n) {
                     throw std::invalid_argument(
                         "keys, count and last_seen must have the same length");
                 }
                 PendingDump d;
                 d.keys.assign(k, k + n);
                 for (int64_t i = 0; i < n; ++i) {
                     if (c[i] < 1 || c[i] > 0xffffffffLL || ls[i] < 0 || ls[i] > 0xffffffffLL) {
                         throw std::invalid_argument(
                             "admission count must be in [1, 2^32) and last_seen in [0, 2^32)");
                     }
                     d.count.push_back(static_cast<uint32_t>(c[i]));
                     d.last_seen.push_back(static_cast<uint32_t>(ls[i]));
                 }
                 t.upsert_pending(d);
             })
        .def("restore_counters", &HostTable::restore_counters, py::arg("step"),
             py::arg("optimizer_step"));
}

void def_table_checkpoints(PyHostTable& cls) {
    cls.def("save", &HostTable::save, py::arg("path"), py::arg("incremental") = false,
            py::call_guard<py::gil_scoped_release>())
        .def("snapshot", &HostTable::snapshot, py::arg("incremental") = false,
             py::call_guard<py::gil_scoped_release>())
        .def_static(
            "load",
            [](const TableConfig& cfg, const std::vector<std::string>& paths) {
                std::unique_ptr<HostTable> t;
                {
                    py::gil_scoped_release nogil;
                    t = HostTable::load(cfg, paths);
                }
                return std::shared_ptr<HostTable>(std::move(t));
            },
            py::arg("config"), py::arg("paths"));
}

}  // namespace

void bind_host_table(py::module_& m) {
    m.def(
        "bucket_of",
        [](const at::Tensor& ids, int64_t num_buckets) {
            const int64_t* p = ids_ptr(ids, "ids");
            if (num_buckets < 1) {
                throw std::invalid_argument("num_buckets must be positive, got " +
                                            std::to_string(num_buckets));
            }
            at::Tensor out = at::empty({ids.numel()}, at::kLong);
            int64_t* o = out.data_ptr<int64_t>();
            const auto n = static_cast<uint64_t>(num_buckets);
            for (int64_t i = 0; i < ids.numel(); ++i)
                o[i] = static_cast<int64_t>(recsdk_ext::hash_bucket(p[i], n));
            return out;
        },
        py::arg("ids"), py::arg("num_buckets"),
        "The bucket of every id of a 1-D int64 CPU tensor (recsdk_ext::hash_bucket).");
    py::class_<CheckpointSnapshot, std::shared_ptr<CheckpointSnapshot>>(
        m, "CheckpointSnapshot",
        "A checkpoint file's contents taken from a table (HostTable.snapshot); write() puts it "
        "on disk atomically without the table's lock and returns the checkpoint id.")
        .def_readonly("id", &CheckpointSnapshot::id)
        .def_property_readonly("bytes", &CheckpointSnapshot::bytes)
        .def("write", &CheckpointSnapshot::write, py::arg("path"),
             py::call_guard<py::gil_scoped_release>());
    PyHostTable cls(m, "HostTable");
    def_table_properties(cls);
    def_table_batches(cls);
    def_table_updates(cls);
    def_table_membership(cls);
    def_table_dumps(cls);
    def_table_restores(cls);
    def_table_checkpoints(cls);
}

}  // namespace embcache
