"""The npu device itself: tensors, training, the device module and hccl collectives.

These run wherever an npu device is registered: through npu_sim on any host, through
torch_npu on Ascend hosts. References are the same computation on the CPU, or values worked
out by hand.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.requires_npu


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool]
)
def test_round_trip_cpu_npu_cpu(dtype: torch.dtype) -> None:
    source = (torch.arange(24) % 7).to(dtype).view(4, 6)
    on_npu = source.to("npu")
    assert on_npu.device.type == "npu"
    assert on_npu.dtype == dtype
    assert torch.equal(on_npu.cpu(), source)
    # Non-contiguous views survive the trip too.
    assert torch.equal(on_npu.t().cpu(), source.t())
    assert torch.equal(on_npu[1:, ::2].cpu(), source[1:, ::2])


def test_copies_between_devices_and_empty_tensors() -> None:
    if torch.npu.device_count() < 2:
        pytest.skip("needs two npu devices")
    x = torch.tensor([1.0, 2.0, 3.0], device="npu:0")
    y = x.to("npu:1")
    assert y.device == torch.device("npu", 1)
    assert y.cpu().tolist() == [1.0, 2.0, 3.0]
    assert torch.empty(0, device="npu").cpu().numel() == 0


def _train(device: str) -> list[float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(
        device
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=generator)
    y = (x.sum(dim=1, keepdim=True) > 0).float()
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            model(x.to(device)), y.to(device)
        )
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_mlp_trains_on_npu_with_the_cpu_losses() -> None:
    cpu, npu = _train("cpu"), _train("npu")
    assert npu == pytest.approx(cpu, rel=1e-5, abs=1e-6)
    assert npu[-1] < npu[0]  # it actually learned


def test_device_module_api() -> None:
    module = torch.get_device_module("npu")
    assert module is torch.npu
    assert module.is_available() and module.device_count() >= 1
    previous = module.current_device()
    module.set_device(0)
    assert module.current_device() == 0
    stream = module.Stream(priority=-1)
    with module.stream(stream):
        t = torch.ones(4, device="npu") * 3
    module.current_stream().wait_stream(stream)
    t.record_stream(module.current_stream())
    event = module.Event()
    event.record()
    event.synchronize()
    module.synchronize()
    before = module.memory_allocated()
    big = torch.empty(1 << 20, dtype=torch.uint8, device="npu")
    assert module.memory_allocated() >= before + (1 << 20)
    del big
    assert module.max_memory_allocated() >= before + (1 << 20)
    module.manual_seed(7)
    module.set_device(previous)
    assert t.cpu().tolist() == [3.0] * 4


def test_pinned_host_memory_for_the_npu() -> None:
    """pin_memory() gives page-locked host memory for the npu (DDP's reducer asserts it, and
    TorchRec's pinned copies rely on it); ordinary CPU tensors are not pinned."""
    plain = torch.arange(6, dtype=torch.float32)
    assert not plain.is_pinned()
    pinned = plain.pin_memory()
    assert pinned.is_pinned() and torch.equal(pinned, plain)
    assert torch.empty(5, pin_memory=True).is_pinned()
    on_npu = pinned.to("npu", non_blocking=True)
    torch.npu.synchronize()  # type: ignore[attr-defined]
    assert torch.equal(on_npu.cpu(), plain)


_COLLECTIVES = textwrap.dedent(
    """
    import os, sys
    import torch, torch.distributed as dist
    import torch.multiprocessing as mp

    def work(rank, world, port, out_dir):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        try:
            import torch_npu  # noqa: F401  (real Ascend host)
        except ImportError:
            import npu_sim  # noqa: F401
        torch.npu.set_device(rank)
        dist.init_process_group("hccl", rank=rank, world_size=world)
        dev = f"npu:{rank}"
        t = torch.full((3,), float(rank + 1), device=dev)
        dist.all_reduce(t)
        # Uneven splits: rank 0 sends 1 element to itself and 2 to rank 1; rank 1 sends 3
        # to rank 0 and 1 to itself.
        in_splits = [[1, 2], [3, 1]][rank]
        out_splits = [[1, 3], [2, 1]][rank]
        inp = torch.arange(sum(in_splits), device=dev) + 100 * rank
        out = torch.empty(sum(out_splits), dtype=inp.dtype, device=dev)
        dist.all_to_all_single(out, inp, out_splits, in_splits)
        # Asynchronous, with the caller's input gone before the work completes (torchrec's
        # split exchange does this): the collective must still send the input's values.
        if rank == 1:
            import time
            time.sleep(0.5)  # rank 0's work is still waiting for rank 1
        pending = torch.empty(2, dtype=torch.int64, device=dev)
        work = dist.all_to_all_single(
            pending, torch.tensor([10 * rank + 1, 10 * rank + 2], device=dev), async_op=True
        )
        reuse = torch.full((2,), -7, dtype=torch.int64, device=dev)  # may recycle the memory
        work.wait()
        # Reduce-scatter of uneven chunks (torchrec's reduce_scatter_v, in table-row-wise
        # sharding's output): rank 0 keeps the sum of the first element, rank 1 of the rest.
        chunks = list(torch.split(torch.arange(3.0, device=dev) * (rank + 1), [1, 2]))
        scattered = torch.empty(chunks[rank].shape, device=dev)
        dist.reduce_scatter(scattered, chunks)
        # All-gather of uneven pieces (torchrec's all_gather_v, its backward): rank r gives
        # r + 1 elements.
        gathered = [torch.empty(n, device=dev) for n in (1, 2)]
        dist.all_gather(gathered, torch.full((rank + 1,), 5.0 * (rank + 1), device=dev))
        with open(os.path.join(out_dir, f"rank{rank}.txt"), "w") as fh:
            fh.write(repr((str(t.device), t.cpu().tolist(), str(out.device), out.cpu().tolist(),
                           pending.cpu().tolist(), reuse.cpu().tolist(),
                           scattered.cpu().tolist(), [g.cpu().tolist() for g in gathered])))
        dist.barrier()
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(work, args=(2, int(sys.argv[1]), sys.argv[2]), nprocs=2)
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_hccl_all_reduce_and_all_to_all_uneven_and_async(tmp_path: Path) -> None:
    script = tmp_path / "collectives.py"
    script.write_text(_COLLECTIVES)
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    subprocess.run(
        [sys.executable, str(script), str(_free_port()), str(tmp_path)],
        check=True,
        timeout=300,
        env=env,
    )
    rank0 = eval((tmp_path / "rank0.txt").read_text())
    rank1 = eval((tmp_path / "rank1.txt").read_text())
    assert rank0 == (
        "npu:0",
        [3.0, 3.0, 3.0],
        "npu:0",
        [0, 100, 101, 102],
        [1, 11],
        [-7, -7],
        [0.0],
        [[5.0], [10.0, 10.0]],
    )
    assert rank1 == (
        "npu:1",
        [3.0, 3.0, 3.0],
        "npu:1",
        [1, 2, 103],
        [2, 12],
        [-7, -7],
        [3.0, 6.0],
        [[5.0], [10.0, 10.0]],
    )


def test_library_operators_never_fall_back_to_cpu_kernels() -> None:
    import fbgemm_gpu  # noqa: F401

    # fbgemm operators with a CPU kernel only (no composite that would decompose into npu
    # kernels): one the adapter does not implement must fail loudly on npu, never run fbgemm's
    # CPU kernel behind the device's back. The first without an npu kernel is the probe, so a
    # new npu kernel moves the probe instead of silencing the test.
    offsets = torch.tensor([0, 2, 4], device="npu")
    perm = torch.tensor([1, 0], device="npu")
    candidates = {
        "permute_duplicate_pooled_embs": lambda: torch.ops.fbgemm.permute_duplicate_pooled_embs(
            torch.ones(2, 4, device="npu"), offsets, perm, offsets, perm
        ),
        "offsets_range": lambda: torch.ops.fbgemm.offsets_range(offsets, 4),
        "FloatToFused8BitRowwiseQuantized": lambda: (
            torch.ops.fbgemm.FloatToFused8BitRowwiseQuantized(torch.ones(2, 4, device="npu"))
        ),
        "FloatToFP8RowwiseQuantized": lambda: torch.ops.fbgemm.FloatToFP8RowwiseQuantized(
            torch.ones(2, 4, device="npu"), True
        ),
        "FloatToHFP8Quantized": lambda: torch.ops.fbgemm.FloatToHFP8Quantized(
            torch.ones(2, 4, device="npu"), 4, 7, 448.0
        ),
    }
    free = [
        name
        for name in candidates
        if not torch._C._dispatch_has_kernel_for_dispatch_key(f"fbgemm::{name}", "PrivateUse1")
    ]
    if not free:
        pytest.skip(f"the adapter has npu kernels for every probe ({', '.join(candidates)})")
    with pytest.raises(NotImplementedError, match="no npu kernel"):
        candidates[free[0]]()


def test_npu_sim_refuses_to_load_next_to_torch_npu(tmp_path: Path) -> None:
    pytest.importorskip("npu_sim", reason="this checks the simulated device")
    fake = tmp_path / "torch_npu"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('not importable here')\n")
    result = subprocess.run(
        [sys.executable, "-c", "import npu_sim"],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert result.returncode != 0
    assert "refuses to load" in result.stderr
