"""Options, resolved once into typed, frozen objects (one per stage that takes any).

The CLI calls ``compute_options`` with what the user typed; every stage then reads only its own
dataclass (``ctx.options.ops.soc``), never a loose dict. The build target is resolved here and
only here: ``auto`` becomes cann or sim once, and ops and plugin see the same answer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from recsdk_build import interpreters
from recsdk_build.errors import ToolMissingError, UsageError
from recsdk_build.interpreters import Interpreter
from recsdk_build.ops.cann_check import HeaderTree, NoHeaders, find_headers
from recsdk_build.ops.cannproject import DEFAULT_SOC, check_soc
from recsdk_build.toolchain import DEFAULT_CANN_ROOTS, find_cann


class Target(str, Enum):
    """What operators and the adapter are built for."""

    CANN = "cann"  # real operator packages, by the CANN toolkit
    SIM = "sim"  # the same kernels against the AscendC emulation, on the simulated npu device

    # What differs between the targets past the build, asked by name so that no module outside
    # this one and targets/ compares target strings.
    @property
    def adapter_variant(self) -> str:
        """The adapter's variant, as its wheel's local version names it (+npu, +sim)."""
        return "npu" if self is Target.CANN else "sim"

    @property
    def ships_operator_packages(self) -> bool:
        """Whether the build has .run operator packages for the toolkit's OPP tree (sim's
        operators are libraries inside the adapter wheel)."""
        return self is Target.CANN

    @property
    def needs_torch_npu(self) -> bool:
        """Whether the runtime has the real torch_npu, and so needs the toolkit at install."""
        return self is Target.CANN

    @property
    def device_module(self) -> str:
        """The module that gives torch its npu device."""
        return "torch_npu" if self is Target.CANN else "npu_sim"

    @property
    def other_device_module(self) -> str:
        """The other target's device module, which must not be in the same environment."""
        return "npu_sim" if self is Target.CANN else "torch_npu"


# The target recorded for a build without the ops and plugin stages (nothing target-specific in
# it; test projects): bundles and install records carry it as a string.
ANY_TARGET = "any"
RECORDED_TARGETS: tuple[str, ...] = (*(t.value for t in Target), ANY_TARGET)


def recorded_target(value: str) -> Target | None:
    """A target as a manifest, bundle or install record stores it; None for ``any``."""
    if value == ANY_TARGET:
        return None
    try:
        return Target(value)
    except ValueError:
        raise UsageError(
            f"unknown target {value!r}; one of {', '.join(RECORDED_TARGETS)}"
        ) from None


# What --target accepts: a target, or auto (cann where the toolkit is found, else sim).
TARGETS: tuple[str, ...] = ("auto", *(t.value for t in Target))


@dataclass(frozen=True)
class TargetChoice:
    requested: str  # what the user asked for: auto, cann or sim
    target: Target

    @property
    def why(self) -> str:
        if self.requested != "auto":
            return ""
        return (
            " (auto: CANN toolkit found)"
            if self.target is Target.CANN
            else (" (auto: no CANN toolkit found)")
        )


def resolve_target(requested: str, *, require_toolkit: bool = True) -> TargetChoice:
    """The one place ``--target`` is decided: ``auto`` is cann where the CANN toolkit is found,
    else sim. ``require_toolkit=False`` answers cann for an explicit ``--target cann`` without a
    toolkit (a dry run only writes and prints the projects; doctor reports what is missing)."""
    if requested not in TARGETS:
        raise UsageError(f"unknown target {requested!r}; choose one of {', '.join(TARGETS)}")
    if requested == Target.SIM.value:
        return TargetChoice(requested, Target.SIM)
    found = find_cann() is not None
    if requested == "auto":
        return TargetChoice(requested, Target.CANN if found else Target.SIM)
    if not found and require_toolkit:
        raise ToolMissingError(
            "--target cann needs the CANN toolkit, which was not found "
            "(looked at $ASCEND_TOOLKIT_HOME, $ASCEND_HOME_PATH and "
            f"{', '.join(DEFAULT_CANN_ROOTS)})",
            hint="source <cann>/set_env.sh first, or build with --target sim",
        )
    return TargetChoice(requested, Target.CANN)


def default_jobs() -> int:
    # Every CPU, as make -j$(nproc) and ninja do: the build is what the machine is for here;
    # --jobs shares it.
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class FetchOptions:
    source: str | None = None  # git URL, clone, bundle or torchrec wheel; None: the pin
    fallback: bool = True  # the registry wheel when the repository cannot be reached
    discard_local: bool = False


@dataclass(frozen=True)
class PatchOptions:
    discard_local: bool = False


@dataclass(frozen=True)
class OpsOptions:
    target: TargetChoice
    soc: str = DEFAULT_SOC
    only: tuple[str, ...] | None = None  # operator or group names; None: every operator
    jobs: int = field(default_factory=default_jobs)
    dry_run: bool = False
    # The AscendC headers every kernel is type-checked against before it is built
    # (--ascendc-headers, else $ASCEND_HOME_PATH, else the pinned export beside the project),
    # or why there are none: then the check is reported as not run.
    headers: HeaderTree | NoHeaders = field(
        default_factory=lambda: NoHeaders("no AscendC header tree was looked for")
    )


@dataclass(frozen=True)
class EnvOptions:
    fresh: bool = False


@dataclass(frozen=True)
class PluginOptions:
    target: TargetChoice


@dataclass(frozen=True)
class VerifyOptions:
    fresh: bool = False


@dataclass(frozen=True)
class Options:
    fetch: FetchOptions
    patch: PatchOptions
    ops: OpsOptions
    env: EnvOptions
    plugin: PluginOptions
    verify: VerifyOptions
    # The interpreter the build and verify environments are created from (--python): one for
    # the whole build, because env, wheels, verify and dist must agree on it.
    python: Interpreter = field(default_factory=interpreters.current)


def compute_options(
    *,
    source: str | None = None,
    fallback: bool = True,
    discard_local: bool = False,
    fresh_env: bool = False,
    target: str = "auto",
    soc: str | None = None,
    only: list[str] | tuple[str, ...] | None = None,
    jobs: int | None = None,
    dry_run: bool = False,
    ascendc_headers: str | None = None,
    project_root: Path | None = None,
    python: str | None = None,
    python_requires: str = ">=3.10",
    python_recorded: dict[str, Any] | None = None,
) -> Options:
    """Every stage's options from the command line's words, validated and resolved once.

    ``python`` is --python (a path or a version); ``python_requires`` recsdk.toml's
    runtime.python; ``python_recorded`` the interpreter the build directory was made for,
    the default when --python is not given. ``ascendc_headers`` is --ascendc-headers;
    ``project_root`` the checkout, beside which the pinned header export is looked for."""
    chosen_soc = soc or DEFAULT_SOC
    check_soc(chosen_soc)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: must be at least 1")
    choice = resolve_target(target, require_toolkit=not dry_run)
    explicit = Path(ascendc_headers).expanduser() if ascendc_headers else None
    headers: HeaderTree | NoHeaders = (
        find_headers(explicit, project_root)
        if project_root is not None or explicit is not None
        else NoHeaders("no project to look for AscendC headers beside")
    )
    return Options(
        fetch=FetchOptions(source=source, fallback=fallback, discard_local=discard_local),
        patch=PatchOptions(discard_local=discard_local),
        ops=OpsOptions(
            target=choice,
            soc=chosen_soc,
            only=tuple(only) if only else None,
            jobs=jobs or default_jobs(),
            dry_run=dry_run,
            headers=headers,
        ),
        env=EnvOptions(fresh=fresh_env),
        plugin=PluginOptions(target=choice),
        verify=VerifyOptions(fresh=fresh_env),
        python=interpreters.choose(python, requires=python_requires, recorded=python_recorded),
    )
