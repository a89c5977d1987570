"""Build targets: what the ops and plugin stages need from cann or sim, one module each.

The stages own the contract (inputs, caching, the manifest); a target owns how operators and
the torch adapter are built for it. ``backend(Target.SIM)`` is the emulation (kernels compiled
with the host compiler, the simulated npu device), ``backend(Target.CANN)`` the toolkit's
operator packages and the adapter against torch_npu. A new target is a module with a class
satisfying ``TargetBackend`` and a line in ``backend``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from recsdk_build.ops.catalogue import OpSpec
from recsdk_build.options import OpsOptions, Target
from recsdk_build.pipeline.stage import Context, Outcome


@dataclass(frozen=True)
class OpsJob:
    """One ops stage run: the catalogue, the operators chosen with --only, where they go."""

    kernels: Path  # kernels/ of the project
    catalogue: dict[str, OpSpec]
    chosen: list[OpSpec]
    root: Path  # build/ops/<target>
    options: OpsOptions


class TargetBackend(Protocol):
    target: Target

    def ops_inputs(self, job: OpsJob) -> dict[str, Any]:
        """What the target's operator build depends on, beyond the stage's common inputs."""
        ...

    def build_ops(self, ctx: Context, job: OpsJob) -> Outcome:
        """Build (or, with --dry-run, describe) the chosen operators; outputs an OpsOutput."""
        ...

    def build_plugin(self, ctx: Context) -> Outcome:
        """Build the torch-side wheels from the ops stage's output; outputs a PluginOutput."""
        ...


def backend(target: Target) -> TargetBackend:
    # Imported here: each backend pulls in its own toolchain modules, needed only when chosen.
    if target is Target.SIM:
        from recsdk_build.targets.sim import SimTarget

        return SimTarget()
    from recsdk_build.targets.cann import CannTarget

    return CannTarget()


def say(ctx: Context, line: str) -> None:
    """A line to copy and paste (a dry run's commands): never wrapped, no markup."""
    ctx.ui.console.print(line, markup=False, highlight=False, soft_wrap=True)
