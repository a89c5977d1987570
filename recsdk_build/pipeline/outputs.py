"""What each stage hands to the stages after it, as typed values.

A stage's ``run`` returns one of these in its Outcome; the runner records it in the manifest as
JSON (``stages.<name>.outputs``, the same keys as the fields) and a later stage reads it back
with ``ctx.output(EnvOutput)``. A record that no longer parses (a manifest written by an older
tool) counts as "not run": the stage that needs it says which stage to run, rather than failing
on a missing key deep inside a build.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from recsdk_build.errors import StageInputError

T = TypeVar("T", bound="StageOutput")


@dataclass(frozen=True)
class StageOutput:
    stage: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls: type[T], data: dict[str, Any]) -> T:
        """Parse a recorded output; StageInputError names the stage when it does not fit."""
        known = {f.name for f in fields(cls)}
        required = {
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
        }
        missing = sorted(required - data.keys())
        if missing:
            raise StageInputError(
                f"the recorded output of '{cls.stage}' lacks {', '.join(missing)} "
                "(written by another version of recsdk-build)",
                hint=f"run `recsdk-build {cls.stage}` again",
            )
        return cls(**cls._convert({k: v for k, v in data.items() if k in known}))

    @classmethod
    def _convert(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Nested values from JSON into their types (overridden where a field is a record)."""
        return values


@dataclass(frozen=True)
class FetchOutput(StageOutput):
    stage = "fetch"
    baseline_commit: str
    source_kind: str


@dataclass(frozen=True)
class PatchOutput(StageOutput):
    stage = "patch"
    patched_commit: str
    patches: list[str]
    series_digest: str


@dataclass(frozen=True)
class OperatorBuild:
    """One operator as the ops stage built it. Paths are relative to the build directory."""

    op: str
    target: str
    soc: str
    sha256: str
    op_type: str = ""
    groups: list[str] = field(default_factory=list)
    library: str | None = None  # sim: the operator library and its C header
    header: str | None = None
    symbol: str | None = None
    package: str | None = None  # cann: the installed .run package


@dataclass(frozen=True)
class OpsOutput(StageOutput):
    stage = "ops"
    target: str
    soc: str | None = None
    dry_run: bool = False
    operators: list[OperatorBuild] = field(default_factory=list)
    runtime: str | None = None  # sim: libmxrec_sim_runtime.so
    sim_include: str | None = None  # sim: the emulation headers the libraries were built with
    opp: str | None = None  # cann: the staged OPP tree

    @classmethod
    def _convert(cls, values: dict[str, Any]) -> dict[str, Any]:
        ops = [OperatorBuild(**o) for o in values.get("operators", [])]
        return {**values, "operators": ops}


@dataclass(frozen=True)
class EnvOutput(StageOutput):
    stage = "env"
    python: str  # the build environment's interpreter
    stamp: str  # what it was built from (venvs.layer_stamp)
    # The interpreter it was created from (interpreters.Interpreter.to_json): --python.
    interpreter: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PluginOutput(StageOutput):
    stage = "plugin"
    target: str


@dataclass(frozen=True)
class WheelsOutput(StageOutput):
    stage = "wheels"
    torchrec_wheel: str


@dataclass(frozen=True)
class VerifyOutput(StageOutput):
    stage = "verify"
    summary: dict[str, Any]


def parse_recorded(kind: type[T], data: dict[str, Any]) -> T | None:
    """A recorded output, or None when it does not parse (for ``intact`` checks)."""
    try:
        return kind.from_json(data)
    except (StageInputError, TypeError):
        return None
