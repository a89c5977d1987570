"""The cost model's verdict on a launch, from the per-core figures the emulator fills
(recsdk_sim/model.h): each core's modelled time (its pipe timelines, at least its busiest pipe)
and the launch's memory floor (all cores' bytes over the HBM and L2 bandwidths)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PIPES = ("s", "v", "m", "mte1", "mte2", "mte3", "fix")


@dataclass(frozen=True)
class Timeline:
    seconds: float  # the launch's modelled time
    bound: str  # the pipe of the slowest core that was busiest ("S", "V", ... "MTE2"), or "HBM/L2"
    core: int  # that core's index in the report, -1 for the memory floor
    core_seconds: list[float]  # each core's modelled time


def timeline(result: Any) -> Timeline:
    """The modelled time of a simrun.LaunchResult."""
    clock = result.model.peak["clock_hz"]
    cores = [c["model_core"] / 1000.0 / clock for c in result.cores]
    floor = max((c["model_floor"] for c in result.cores), default=0) / 1000.0 / clock
    slowest = max(range(len(cores)), key=cores.__getitem__) if cores else -1
    if slowest < 0 or floor > cores[slowest]:
        return Timeline(floor, "HBM/L2", -1, cores)
    c = result.cores[slowest]
    busiest = max(PIPES, key=lambda p: c[f"model_busy_{p}"])
    return Timeline(cores[slowest], busiest.upper(), slowest, cores)
