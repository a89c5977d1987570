// Python bindings of the embcache core (module torchrec_embcache._C).
//
// This is the only translation unit that sees torch: tensors are validated and unwrapped
// here and the core works on raw pointers. Vectors produced by the core become tensors
// without a copy (the tensor owns the vector). Long calls release the GIL so that other
// Python threads (lookups, the training loop) keep running.
#include <torch/extension.h>
#include <torch/version.h>

#include <memory>
#include <string>
#include <vector>

#include "cache_planner.h"
#include "common.h"
#include "crc32c.h"
#include "host_table.h"
#include "thread_pool.h"

namespace py = pybind11;
using namespace embcache;

#ifndef EMBCACHE_VERSION
#error "EMBCACHE_VERSION must be defined by the build (setup.py passes the package version)"
#endif
#define EMBCACHE_STR2(x) #x
#define EMBCACHE_STR(x) EMBCACHE_STR2(x)

namespace {

// Python exception types of torchrec_embcache.errors, registered at import time.
py::object g_error, g_checkpoint_error, g_capacity_error, g_state_error;

template <class T>
at::Tensor to_tensor(std::vector<T>&& v, at::ScalarType st, std::vector<int64_t> shape) {
  if (v.empty()) return at::empty(shape, at::TensorOptions().dtype(st));
  auto* holder = new std::vector<T>(std::move(v));
  return at::from_blob(
      holder->data(), shape, [holder](void*) { delete holder; }, at::TensorOptions().dtype(st));
}

at::Tensor ids_tensor(std::vector<int64_t>&& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return to_tensor(std::move(v), at::kLong, {n});
}

at::Tensor u32_to_long(const std::vector<uint32_t>& v) {
  at::Tensor t = at::empty({static_cast<int64_t>(v.size())}, at::kLong);
  int64_t* p = t.data_ptr<int64_t>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return t;
}

void check_cpu(const at::Tensor& t, const char* name) {
  if (!t.device().is_cpu()) {
    throw std::invalid_argument(std::string(name) + " must be a CPU tensor here, got one on " + t.device().str());
  }
  if (!t.is_contiguous()) throw std::invalid_argument(std::string(name) + " must be contiguous");
}

const int64_t* ids_ptr(const at::Tensor& t, const char* name) {
  check_cpu(t, name);
  if (t.scalar_type() != at::kLong) {
    throw py::type_error(std::string(name) + " must be int64, got " + std::string(c10::toString(t.scalar_type())));
  }
  if (t.dim() != 1) throw std::invalid_argument(std::string(name) + " must be 1-D");
  return t.data_ptr<int64_t>();
}

const float* floats_ptr(const at::Tensor& t, const char* name, int64_t rows, int64_t cols) {
  check_cpu(t, name);
  if (t.scalar_type() != at::kFloat) {
    throw py::type_error(std::string(name) + " must be float32, got " + std::string(c10::toString(t.scalar_type())));
  }
  if (t.dim() != 2 || t.size(0) != rows || t.size(1) != cols) {
    throw std::invalid_argument(std::string(name) + " must have shape [" + std::to_string(rows) + ", " +
                                std::to_string(cols) + "], got " + c10::str(t.sizes()));
  }
  return t.data_ptr<float>();
}

const uint8_t* mask_ptr(const c10::optional<at::Tensor>& t, int64_t n, const char* name) {
  if (!t.has_value()) return nullptr;
  check_cpu(*t, name);
  if (t->scalar_type() != at::kBool || t->dim() != 1 || t->size(0) != n) {
    throw std::invalid_argument(std::string(name) + " must be a bool tensor of length " + std::to_string(n));
  }
  return reinterpret_cast<const uint8_t*>(t->data_ptr<bool>());
}

struct PySwapPlan {
  int64_t seq, step;
  at::Tensor unique_ids, inverse, unique_slots, has_row, out_ids, out_slots, in_ids, in_slots, in_rows, evicted;
};

PySwapPlan wrap(SwapPlan&& p, int64_t row_width) {
  PySwapPlan o;
  o.seq = p.seq;
  o.step = p.step;
  const int64_t n_in = static_cast<int64_t>(p.in_ids.size());
  const int64_t u = static_cast<int64_t>(p.has_row.size());
  o.unique_ids = ids_tensor(std::move(p.unique_ids));
  o.inverse = ids_tensor(std::move(p.inverse));
  o.unique_slots = ids_tensor(std::move(p.unique_slots));
  o.has_row = to_tensor(std::move(p.has_row), at::kBool, {u});
  o.out_ids = ids_tensor(std::move(p.out_ids));
  o.out_slots = ids_tensor(std::move(p.out_slots));
  o.in_ids = ids_tensor(std::move(p.in_ids));
  o.in_slots = ids_tensor(std::move(p.in_slots));
  o.in_rows = to_tensor(std::move(p.in_rows), at::kFloat, {n_in, row_width});
  o.evicted = ids_tensor(std::move(p.evicted));
  return o;
}

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

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchrec_embcache core: host table, device-cache planner, checkpoints";

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

  py::dict info;
  info["version"] = EMBCACHE_STR(EMBCACHE_VERSION);
  info["torch_version"] = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
                          std::to_string(TORCH_VERSION_PATCH);
  info["cxx11_abi"] = static_cast<int>(_GLIBCXX_USE_CXX11_ABI);
  info["compiler"] = __VERSION__;
  m.attr("build_info") = info;

  m.def("set_num_threads", [](int n) { ThreadPool::global().set_num_threads(n); },
        "Threads used by batched table operations (the caller included).");
  m.def("get_num_threads", [] { return ThreadPool::global().num_threads(); });
  m.def("crc32c", [](py::bytes b) {
    const std::string s = b;
    return crc32c(s.data(), s.size());
  });

  py::enum_<OptimKind>(m, "OptimKind")
      .value("SGD", OptimKind::SGD)
      .value("ADAGRAD", OptimKind::Adagrad)
      .value("ADAM", OptimKind::Adam);
  py::enum_<InitKind>(m, "InitKind")
      .value("UNIFORM", InitKind::Uniform)
      .value("NORMAL", InitKind::Normal)
      .value("TRUNCATED_NORMAL", InitKind::TruncatedNormal)
      .value("CONSTANT", InitKind::Constant);

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
      .def_readwrite("evict_interval", &TableConfig::evict_interval)
      .def_readwrite("shard_bits", &TableConfig::shard_bits);

  py::class_<HostTable, std::shared_ptr<HostTable>>(m, "HostTable")
      .def(py::init<const TableConfig&>())
      .def_property_readonly("config", &HostTable::config)
      .def_property_readonly("dim", &HostTable::dim)
      .def_property_readonly("row_width", &HostTable::row_width)
      .def_property_readonly("num_shards", &HostTable::num_shards)
      .def_property_readonly("size", &HostTable::size)
      .def_property_readonly("pending_size", &HostTable::pending_size)
      .def_property_readonly("step", &HostTable::step)
      .def_property_readonly("optimizer_step", &HostTable::optimizer_step)
      .def_property_readonly("memory_bytes", &HostTable::memory_bytes)
      .def_property_readonly("checkpoint_id", &HostTable::checkpoint_id)
      .def_property("learning_rate", &HostTable::learning_rate, &HostTable::set_learning_rate)
      .def(
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
            if (gather) rows = py::cast(to_tensor(std::move(b.rows), at::kFloat, {u, t.dim()}));
            return py::make_tuple(ids_tensor(std::move(b.unique_ids)), ids_tensor(std::move(b.inverse)),
                                  to_tensor(std::move(b.has_row), at::kBool, {u}), rows,
                                  ids_tensor(std::move(b.evicted)), b.step);
          },
          py::arg("ids"), py::arg("train"), py::arg("gather"), py::arg("max_unique") = -1)
      .def("lookup",
           [](const HostTable& t, const at::Tensor& ids) {
             const int64_t* p = ids_ptr(ids, "ids");
             at::Tensor out = at::empty({ids.numel(), t.dim()}, at::kFloat);
             float* o = out.data_ptr<float>();
             {
               py::gil_scoped_release nogil;
               t.lookup(p, ids.numel(), o);
             }
             return out;
           })
      .def("read_rows",
           [](const HostTable& t, const at::Tensor& ids) {
             const int64_t* p = ids_ptr(ids, "ids");
             at::Tensor out = at::empty({ids.numel(), t.row_width()}, at::kFloat);
             float* o = out.data_ptr<float>();
             {
               py::gil_scoped_release nogil;
               t.read_rows(p, ids.numel(), o);
             }
             return out;
           })
      .def("write_rows",
           [](HostTable& t, const at::Tensor& ids, const at::Tensor& rows) {
             const int64_t* p = ids_ptr(ids, "ids");
             const float* r = floats_ptr(rows, "rows", ids.numel(), t.row_width());
             py::gil_scoped_release nogil;
             t.write_rows(p, ids.numel(), r);
           })
      .def(
          "apply_gradients",
          [](HostTable& t, const at::Tensor& ids, const at::Tensor& grads, const c10::optional<at::Tensor>& has_row) {
            const int64_t* p = ids_ptr(ids, "ids");
            const float* g = floats_ptr(grads, "grads", ids.numel(), t.dim());
            const uint8_t* m = mask_ptr(has_row, ids.numel(), "has_row");
            py::gil_scoped_release nogil;
            t.apply_gradients(p, ids.numel(), g, m);
          },
          py::arg("ids"), py::arg("grads"), py::arg("has_row") = py::none())
      .def(
          "apply_gradients_to",
          [](HostTable& t, const at::Tensor& rows, const at::Tensor& slots, const at::Tensor& grads,
             const c10::optional<at::Tensor>& mask) {
            check_cpu(rows, "rows");
            if (rows.scalar_type() != at::kFloat || rows.dim() != 2 || rows.size(1) != t.row_width()) {
              throw std::invalid_argument("rows must be a float32 [slots, " + std::to_string(t.row_width()) +
                                          "] tensor");
            }
            const int64_t* s = ids_ptr(slots, "slots");
            const int64_t n = slots.numel();
            for (int64_t i = 0; i < n; ++i) {
              if (s[i] < 0 || s[i] >= rows.size(0)) throw std::invalid_argument("slot out of range");
            }
            const float* g = floats_ptr(grads, "grads", n, t.dim());
            const uint8_t* m = mask_ptr(mask, n, "mask");
            float* r = rows.data_ptr<float>();
            py::gil_scoped_release nogil;
            t.apply_gradients_to(r, t.row_width(), s, n, g, m);
          },
          py::arg("rows"), py::arg("slots"), py::arg("grads"), py::arg("mask") = py::none())
      .def("next_optimizer_step", &HostTable::next_optimizer_step)
      .def("contains",
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
      .def("clear", &HostTable::clear, py::call_guard<py::gil_scoped_release>())
      .def(
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
      .def("dump_pending",
           [](const HostTable& t) {
             PendingDump d = t.dump_pending();
             at::Tensor count = u32_to_long(d.count);
             at::Tensor last_seen = u32_to_long(d.last_seen);
             return py::make_tuple(ids_tensor(std::move(d.keys)), count, last_seen);
           })
      .def("upsert",
           [](HostTable& t, const at::Tensor& keys, const at::Tensor& last_seen, const at::Tensor& count,
              const at::Tensor& rows) {
             const int64_t* k = ids_ptr(keys, "keys");
             const int64_t n = keys.numel();
             const int64_t* ls = ids_ptr(last_seen, "last_seen");
             const int64_t* c = ids_ptr(count, "count");
             if (last_seen.numel() != n || count.numel() != n) {
               throw std::invalid_argument("keys, last_seen and count must have the same length");
             }
             const float* r = floats_ptr(rows, "rows", n, t.row_width());
             RowDump d;
             d.keys.assign(k, k + n);
             d.last_seen.resize(n);
             d.count.resize(n);
             for (int64_t i = 0; i < n; ++i) {
               if (ls[i] < 0 || ls[i] > 0xffffffffLL || c[i] < 0 || c[i] > 0xffffffffLL) {
                 throw std::invalid_argument("last_seen and count must fit in 32 unsigned bits");
               }
               d.last_seen[i] = static_cast<uint32_t>(ls[i]);
               d.count[i] = static_cast<uint32_t>(c[i]);
             }
             d.rows.assign(r, r + n * t.row_width());
             py::gil_scoped_release nogil;
             t.upsert(d);
           })
      .def("upsert_pending",
           [](HostTable& t, const at::Tensor& keys, const at::Tensor& count, const at::Tensor& last_seen) {
             const int64_t* k = ids_ptr(keys, "keys");
             const int64_t* c = ids_ptr(count, "count");
             const int64_t* ls = ids_ptr(last_seen, "last_seen");
             const int64_t n = keys.numel();
             if (count.numel() != n || last_seen.numel() != n) {
               throw std::invalid_argument("keys, count and last_seen must have the same length");
             }
             PendingDump d;
             d.keys.assign(k, k + n);
             for (int64_t i = 0; i < n; ++i) {
               if (c[i] < 1 || c[i] > 0xffffffffLL || ls[i] < 0 || ls[i] > 0xffffffffLL) {
                 throw std::invalid_argument("admission count must be in [1, 2^32) and last_seen in [0, 2^32)");
               }
               d.count.push_back(static_cast<uint32_t>(c[i]));
               d.last_seen.push_back(static_cast<uint32_t>(ls[i]));
             }
             t.upsert_pending(d);
           })
      .def("restore_counters", &HostTable::restore_counters, py::arg("step"), py::arg("optimizer_step"))
      .def("save", &HostTable::save, py::arg("path"), py::arg("incremental") = false,
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

  py::class_<PySwapPlan>(m, "SwapPlan")
      .def_readonly("seq", &PySwapPlan::seq)
      .def_readonly("step", &PySwapPlan::step)
      .def_readonly("unique_ids", &PySwapPlan::unique_ids)
      .def_readonly("inverse", &PySwapPlan::inverse)
      .def_readonly("unique_slots", &PySwapPlan::unique_slots)
      .def_readonly("has_row", &PySwapPlan::has_row)
      .def_readonly("out_ids", &PySwapPlan::out_ids)
      .def_readonly("out_slots", &PySwapPlan::out_slots)
      .def_readonly("in_ids", &PySwapPlan::in_ids)
      .def_readonly("in_slots", &PySwapPlan::in_slots)
      .def_readonly("in_rows", &PySwapPlan::in_rows)
      .def_readonly("evicted", &PySwapPlan::evicted);

  struct PyPlanHandle {
    std::shared_ptr<PlanHandle> handle;
    int64_t row_width;
    bool taken = false;
  };
  py::class_<PyPlanHandle>(m, "PlanHandle")
      .def("ready", [](PyPlanHandle& h) { return h.handle->ready(); })
      .def("wait", [](PyPlanHandle& h) {
        // The plan's buffers move into the returned tensors, so a plan is handed out once.
        if (h.taken) throw StateError("this swap plan was already taken");
        std::shared_ptr<SwapPlan> p;
        {
          py::gil_scoped_release nogil;
          p = h.handle->wait();
        }
        h.taken = true;
        return wrap(std::move(*p), h.row_width);
      });

  py::class_<CachePlanner, std::shared_ptr<CachePlanner>>(m, "CachePlanner")
      .def(py::init<std::shared_ptr<HostTable>, int64_t>(), py::arg("table"), py::arg("num_slots"))
      .def_property_readonly("num_slots", &CachePlanner::num_slots)
      .def_property_readonly("default_slot", &CachePlanner::default_slot)
      .def_property_readonly("usable_slots", &CachePlanner::usable_slots)
      .def_property_readonly("outstanding", &CachePlanner::outstanding)
      .def_property_readonly("resident_count", &CachePlanner::resident_count)
      .def("submit",
           [](CachePlanner& c, const at::Tensor& ids) {
             const int64_t* p = ids_ptr(ids, "ids");
             std::vector<int64_t> v(p, p + ids.numel());
             return PyPlanHandle{c.submit(std::move(v)), c.table().row_width()};
           })
      .def("written_back", &CachePlanner::written_back)
      .def("lookup_eval",
           [](CachePlanner& c, const at::Tensor& ids) {
             const int64_t* p = ids_ptr(ids, "ids");
             const int64_t dim = c.table().dim();
             EvalLookup e;
             {
               py::gil_scoped_release nogil;
               e = c.lookup_eval(p, ids.numel());
             }
             const int64_t u = static_cast<int64_t>(e.unique_ids.size());
             return py::make_tuple(ids_tensor(std::move(e.unique_ids)), ids_tensor(std::move(e.inverse)),
                                   to_tensor(std::move(e.rows), at::kFloat, {u, dim}), ids_tensor(std::move(e.slots)));
           })
      .def("dirty_rows",
           [](CachePlanner& c) {
             std::vector<int64_t> ids, slots;
             c.dirty_rows(&ids, &slots);
             return py::make_tuple(ids_tensor(std::move(ids)), ids_tensor(std::move(slots)));
           })
      .def("mark_clean", &CachePlanner::mark_clean)
      .def("reset", &CachePlanner::reset)
      .def("forget",
           [](CachePlanner& c, const at::Tensor& ids) {
             const int64_t* p = ids_ptr(ids, "ids");
             c.forget(p, ids.numel());
           })
      .def("slots_of", [](CachePlanner& c, const at::Tensor& ids) {
        const int64_t* p = ids_ptr(ids, "ids");
        return ids_tensor(c.slots_of(p, ids.numel()));
      });
}
