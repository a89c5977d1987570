"""``torch.npu``: the device module of the simulated device.

The names follow torch's device-module conventions (those of ``torch.cuda`` that
``torch_npu`` also provides), so code written against ``torch.get_device_module(device)``
works unchanged. The device runs synchronously, so streams and events are always complete.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from npu_sim import _C

DeviceLike = int | str | torch.device | None


def _index(device: DeviceLike) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    dev = torch.device(device)
    if dev.type != "npu":
        raise ValueError(f"expected an npu device, got {dev}")
    return dev.index if dev.index is not None else current_device()


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def init() -> None:
    """Nothing to initialise; kept for code that calls it."""


def _lazy_init() -> None:
    """Nothing to initialise lazily; torch internals call it on device modules."""


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return int(_C.device_count())


def current_device() -> int:
    return int(_C.current_device())


def set_device(device: DeviceLike) -> None:
    _C.set_device(_index(device))


def get_device_name(device: DeviceLike = None) -> str:
    return f"npu_sim:{_index(device)} (simulated Ascend NPU on host memory)"


def synchronize(device: DeviceLike = None) -> None:
    """Work is complete when each call returns; nothing to wait for."""


class device:  # torch's device modules name this context manager `device`
    """Context manager that makes ``idx`` the current npu device."""

    def __init__(self, idx: DeviceLike) -> None:
        self.idx = _index(idx)
        self.prev = -1

    def __enter__(self) -> None:
        self.prev = current_device()
        set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        set_device(self.prev)


class Stream(torch.Stream):
    """A stream of the simulated device; work on it is complete on return."""

    def __new__(cls, device: DeviceLike = None, priority: int = 0, **kwargs: Any) -> Stream:
        return super().__new__(
            cls, device=torch.device("npu", _index(device)), priority=priority, **kwargs
        )

    def wait_stream(self, stream: torch.Stream) -> None:
        """Ordering is already guaranteed: each operation completes before the next."""

    def wait_event(self, event: torch.Event) -> None:
        """Events are complete when recorded."""

    def record_event(self, event: torch.Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event  # type: ignore[return-value]

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Nothing is pending."""


class Event(torch.Event):
    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> Event:
        return super().__new__(
            cls,
            device=torch.device("npu", current_device()),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


_current_streams: dict[int, torch.Stream] = {}


def current_stream(device: DeviceLike = None) -> torch.Stream:
    index = _index(device)
    return _current_streams.get(index) or default_stream(index)


def default_stream(device: DeviceLike = None) -> torch.Stream:
    return Stream(_index(device))


def set_stream(stream: torch.Stream) -> None:
    _current_streams[stream.device_index] = stream


@contextlib.contextmanager
def stream(stream: torch.Stream | None) -> Iterator[None]:
    """Make ``stream`` current inside the block (None leaves the current stream)."""
    if stream is None:
        yield
        return
    index = stream.device_index
    previous = _current_streams.get(index)
    _current_streams[index] = stream
    try:
        yield
    finally:
        if previous is None:
            _current_streams.pop(index, None)
        else:
            _current_streams[index] = previous


# Random numbers: npu operators that draw random numbers run on the CPU through the fallback
# and use the CPU generator, so seeding the device seeds that generator. (Not through
# torch.manual_seed, which itself seeds every device module and would recurse.)
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def seed() -> None:
    torch.default_generator.seed()


def seed_all() -> None:
    torch.default_generator.seed()


def initial_seed() -> int:
    return torch.default_generator.initial_seed()


def get_rng_state(device: DeviceLike = None) -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device: DeviceLike = None) -> None:
    torch.set_rng_state(new_state)


def memory_stats(device: DeviceLike = None) -> dict[str, int]:
    return dict(_C.memory_stats(_index(device)))


def memory_allocated(device: DeviceLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: DeviceLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: DeviceLike = None) -> int:
    """No caching allocator: reserved memory is allocated memory."""
    return memory_allocated(device)


def max_memory_reserved(device: DeviceLike = None) -> int:
    return max_memory_allocated(device)


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    _C.reset_peak_memory_stats(_index(device))


def empty_cache() -> None:
    """No caching allocator: freed memory is returned to the host at once."""
