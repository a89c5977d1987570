// Python bindings of the device-cache planner: CachePlanner, and the SwapPlan its
// PlanHandle hands out.
#include <memory>
#include <vector>

#include "bindings.h"
#include "cache_planner.h"
#include "host_table.h"
#include "tensor_args.h"

namespace py = pybind11;

namespace embcache {

namespace {

struct PySwapPlan {
    int64_t seq, step;
    at::Tensor unique_ids, inverse, unique_slots, has_row, out_ids, out_slots, in_ids, in_slots,
        in_rows, evicted;
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

struct PyPlanHandle {
    std::shared_ptr<PlanHandle> handle;
    int64_t row_width;
    bool taken = false;
};

void bind_swap_plan(py::module_& m) {
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

    py::class_<PyPlanHandle>(m, "PlanHandle")
        .def("ready", [](PyPlanHandle& h) { return h.handle->ready(); })
        .def("wait", [](PyPlanHandle& h) {
            // The plan's buffers move into the returned tensors, so a plan is handed out once.
            if (h.taken)
                throw StateError("this swap plan was already taken");
            std::shared_ptr<SwapPlan> p;
            {
                py::gil_scoped_release nogil;
                p = h.handle->wait();
            }
            h.taken = true;
            return wrap(std::move(*p), h.row_width);
        });
}

}  // namespace

void bind_cache_planner(py::module_& m) {
    bind_swap_plan(m);
    py::class_<CachePlanner, std::shared_ptr<CachePlanner>>(m, "CachePlanner")
        .def(py::init<std::shared_ptr<HostTable>, int64_t>(), py::arg("table"),
             py::arg("num_slots"))
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
                 return py::make_tuple(ids_tensor(std::move(e.unique_ids)),
                                       ids_tensor(std::move(e.inverse)),
                                       to_tensor(std::move(e.rows), at::kFloat, {u, dim}),
                                       ids_tensor(std::move(e.slots)));
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
        .def("slots_of",
             [](CachePlanner& c, const at::Tensor& ids) {
                 const int64_t* p = ids_ptr(ids, "ids");
                 return ids_tensor(c.slots_of(p, ids.numel()));
             })
        .def("resident_ids", [](CachePlanner& c) { return ids_tensor(c.resident_ids()); })
        .def("restore", [](CachePlanner& c, const at::Tensor& ids) {
            const int64_t* p = ids_ptr(ids, "ids");
            std::vector<int64_t> kept, slots;
            c.restore(p, ids.numel(), &kept, &slots);
            return py::make_tuple(ids_tensor(std::move(kept)), ids_tensor(std::move(slots)));
        });
}

}  // namespace embcache
