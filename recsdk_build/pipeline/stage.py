"""The stage contract: declared inputs, intact outputs, and a run that records artifacts."""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, TypeVar

from recsdk_build import __version__
from recsdk_build.config import Project
from recsdk_build.errors import StageInputError
from recsdk_build.hashing import combine, sha256_file, sha256_text
from recsdk_build.options import Options
from recsdk_build.pipeline.manifest import Artifact, Manifest, StageRecord
from recsdk_build.pipeline.outputs import StageOutput, parse_recorded
from recsdk_build.proc import StageLog
from recsdk_build.ui import UI

Out = TypeVar("Out", bound=StageOutput)


@dataclass
class BuildPaths:
    root: Path

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def source(self) -> Path:
        """The torchrec git tree: baseline commit plus the patch series as commits."""
        return self.root / "src" / "torchrec"

    @property
    def dist(self) -> Path:
        return self.root / "dist"

    @property
    def verify(self) -> Path:
        return self.root / "verify"

    @property
    def build_env(self) -> Path:
        """The pinned environment C++ torch extensions are compiled in."""
        return self.root / "env" / "venv"

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"


@dataclass
class Context:
    project: Project
    paths: BuildPaths
    manifest: Manifest
    ui: UI
    options: Options
    log: StageLog | None = None

    def output(self, kind: type[Out]) -> Out:
        """What a previous stage produced; a clear error when it has not run."""
        record = self.manifest.successful(kind.stage)
        if record is None:
            raise StageInputError(
                f"this stage needs the output of '{kind.stage}', which has not run successfully "
                f"in {self.paths.root}",
                hint=f"run `recsdk-build {kind.stage}` first, or `recsdk-build all`",
            )
        return kind.from_json(record.outputs)

    def recorded(self, kind: type[Out]) -> Out | None:
        """The last successful output of ``kind``'s stage if it parses, else None."""
        record = self.manifest.successful(kind.stage)
        return parse_recorded(kind, record.outputs) if record is not None else None

    def artifacts_of(self, kind: type[StageOutput]) -> list[Artifact]:
        self.output(kind)
        record = self.manifest.successful(kind.stage)
        assert record is not None
        return record.artifacts

    def require_log(self) -> StageLog:
        assert self.log is not None, "stage log is opened by the runner"
        return self.log


@dataclass
class Outcome:
    artifacts: list[Artifact] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    outputs: StageOutput | None = None
    note: str = ""


class Stage(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    # What the stage reads from earlier stages, and the output type it records.
    needs: ClassVar[tuple[type[StageOutput], ...]] = ()
    produces: ClassVar[type[StageOutput]]
    # Modules besides the stage's own whose code its outputs depend on (generators, builders).
    helpers: ClassVar[tuple[ModuleType, ...]] = ()

    def requires(self, ctx: Context) -> tuple[type[StageOutput], ...]:
        """The outputs this run reads (``needs``, unless the project makes one optional)."""
        return self.needs

    @abstractmethod
    def inputs(self, ctx: Context) -> dict[str, Any]:
        """Everything the outputs depend on. Equal inputs + intact outputs = cached."""

    @abstractmethod
    def intact(self, ctx: Context, record: StageRecord) -> bool:
        """Whether the outputs recorded in ``record`` are still on disk unchanged."""

    @abstractmethod
    def run(self, ctx: Context) -> Outcome: ...


def fingerprint(inputs: dict[str, Any]) -> str:
    return sha256_text(json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str))


def code_files(stage: Stage) -> list[Path]:
    """The stage's module and the helper modules it declares."""
    modules = [inspect.getmodule(type(stage)), *stage.helpers]
    return [Path(src) for m in modules if m and (src := inspect.getsourcefile(m))]


def stage_code_digest(stage: Stage) -> str:
    """The tool's version and the code that produces the outputs are inputs of every stage: a
    fixed builder (or a changed generator it uses) rebuilds. Added by the runner."""
    return combine(__version__, *(sha256_file(path) for path in code_files(stage)))
