// The `hccl` process-group backend of the simulated device.
//
// Collectives run on gloo over the host memory that backs npu tensors: every npu tensor is
// handed to gloo as a CPU view of the same memory, so gloo's results land directly in the npu
// tensors and no copy back is needed. Semantics, including uneven all_to_all splits, are
// gloo's; only the device check differs, reduce_scatter, which gloo lacks, is an all-reduce
// of which each rank keeps its chunk, and an allgather of uneven sizes, which gloo refuses,
// is one broadcast per rank.
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "npu_sim.h"

namespace npu_sim {
namespace {

std::vector<at::Tensor> views(const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> out;
    out.reserve(tensors.size());
    for (const auto& t : tensors) {
        TORCH_CHECK(t.is_contiguous() || t.numel() == 0,
                    "hccl (npu_sim): collectives need contiguous tensors, got strides ",
                    t.strides());
        out.push_back(host_view(t));
    }
    return out;
}

std::vector<std::vector<at::Tensor>> views(const std::vector<std::vector<at::Tensor>>& lists) {
    std::vector<std::vector<at::Tensor>> out;
    out.reserve(lists.size());
    for (const auto& l : lists)
        out.push_back(views(l));
    return out;
}

at::Tensor view1(const at::Tensor& t) {
    return views(std::vector<at::Tensor>{t})[0];
}

class HostCollectives final : public c10d::Backend {
public:
    HostCollectives(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size)
        : c10d::Backend(rank, size), gloo_(std::move(gloo)) {}

    const std::string getBackendName() const override { return "hccl"; }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const c10d::BroadcastOptions& opts) override {
        auto v = views(tensors);
        return gloo_->broadcast(v, opts);
    }
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const c10d::AllreduceOptions& opts) override {
        auto v = views(tensors);
        return gloo_->allreduce(v, opts);
    }
    c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
        std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
        auto v = views(tensors);
        return gloo_->allreduce_coalesced(v, opts);
    }
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                          const c10d::ReduceOptions& opts) override {
        auto v = views(tensors);
        return gloo_->reduce(v, opts);
    }
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const c10d::AllgatherOptions& opts) override {
        auto o = views(outputs);
        auto i = views(inputs);
        bool uneven = false;
        if (o.size() == 1 && i.size() == 1)
            for (const auto& t : o[0])
                uneven = uneven || t.sizes() != i[0].sizes();
        if (!uneven)
            return gloo_->allgather(o, i, opts);
        // gloo's allgather needs equal sizes (HCCL's does not, and torchrec's all_gather_v
        // gathers uneven ones): one broadcast from each rank. Synchronous; the returned work is
        // complete.
        TORCH_CHECK(o[0].size() == static_cast<size_t>(getSize()),
                    "hccl (npu_sim): allgather needs one output per rank, got ", o[0].size());
        o[0][getRank()].copy_(i[0].view_as(o[0][getRank()]));
        c10::intrusive_ptr<c10d::Work> work;
        for (int r = 0; r < getSize(); ++r) {
            std::vector<at::Tensor> piece{o[0][r]};
            c10d::BroadcastOptions from;
            from.rootRank = r;
            from.timeout = opts.timeout;
            work = gloo_->broadcast(piece, from);
            work->wait();
        }
        return work;
    }
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const c10d::AllgatherOptions& opts) override {
        auto o = view1(output);
        auto i = view1(input);
        return gloo_->_allgather_base(o, i, opts);
    }
    c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
        std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
        const c10d::AllgatherOptions& opts) override {
        auto o = views(outputs);
        auto i = views(inputs);
        return gloo_->allgather_into_tensor_coalesced(o, i, opts);
    }
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::GatherOptions& opts) override {
        auto o = views(outputs);
        auto i = views(inputs);
        return gloo_->gather(o, i, opts);
    }
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const c10d::ScatterOptions& opts) override {
        auto o = views(outputs);
        auto i = views(inputs);
        return gloo_->scatter(o, i, opts);
    }
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                  const c10d::ReduceScatterOptions& opts) override {
        // gloo has no reduce_scatter (HCCL has, and torchrec's reduce_scatter_v takes it with
        // uneven chunks): an all-reduce of the chunks laid end to end, of which this rank keeps
        // its own. Synchronous; the returned work is complete.
        TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1 &&
                        inputs[0].size() == static_cast<size_t>(getSize()),
                    "hccl (npu_sim): reduce_scatter takes one output and one list of ", getSize(),
                    " inputs");
        const auto chunks = views(inputs[0]);
        std::vector<at::Tensor> flat;
        int64_t start = 0;
        for (int r = 0; r < getSize(); ++r) {
            flat.push_back(chunks[r].reshape({-1}));
            if (r < getRank())
                start += chunks[r].numel();
        }
        at::Tensor out = view1(outputs[0]);
        TORCH_CHECK(out.numel() == chunks[getRank()].numel(),
                    "hccl (npu_sim): reduce_scatter output has ", out.numel(),
                    " elements, this rank's input chunk ", chunks[getRank()].numel());
        std::vector<at::Tensor> all{at::cat(flat)};
        c10d::AllreduceOptions reduce;
        reduce.reduceOp = opts.reduceOp;
        reduce.timeout = opts.timeout;
        auto work = gloo_->allreduce(all, reduce);
        work->wait();
        out.copy_(all[0].narrow(0, start, out.numel()).view_as(out));
        return work;
    }
    c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
        at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
        auto o = view1(output);
        auto i = view1(input);
        return gloo_->_reduce_scatter_base(o, i, opts);
    }
    c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
        std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
        const c10d::ReduceScatterOptions& opts) override {
        auto o = views(outputs);
        auto i = views(inputs);
        return gloo_->reduce_scatter_tensor_coalesced(o, i, opts);
    }
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& output_splits,
                                                 std::vector<int64_t>& input_splits,
                                                 const c10d::AllToAllOptions& opts) override {
        auto o = view1(output);
        auto i = view1(input);
        return gloo_->alltoall_base(o, i, output_splits, input_splits, opts);
    }
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                            std::vector<at::Tensor>& inputs,
                                            const c10d::AllToAllOptions& opts) override {
        auto o = views(outputs);
        auto i = views(inputs);
        return gloo_->alltoall(o, i, opts);
    }
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst,
                                        int tag) override {
        auto v = views(tensors);
        return gloo_->send(v, dst, tag);
    }
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src,
                                        int tag) override {
        auto v = views(tensors);
        return gloo_->recv(v, src, tag);
    }
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
        return gloo_->barrier(opts);
    }
    void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override {
        gloo_->monitoredBarrier(opts, wait_all_ranks);
    }
    void setSequenceNumberForGroup() override { gloo_->setSequenceNumberForGroup(); }
    uint64_t getSequenceNumberForGroup() override { return gloo_->getSequenceNumberForGroup(); }

private:
    c10::intrusive_ptr<c10d::Backend> gloo_;
};

}  // namespace

c10::intrusive_ptr<c10d::Backend> make_hccl_backend(c10::intrusive_ptr<c10d::Backend> gloo,
                                                    int64_t rank, int64_t size) {
    return c10::make_intrusive<HostCollectives>(std::move(gloo), static_cast<int>(rank),
                                                static_cast<int>(size));
}

}  // namespace npu_sim
