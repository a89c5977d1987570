"""The stage contract: declared inputs, intact outputs, and a run that records artifacts."""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from recsdk_build.config import Project
from recsdk_build.errors import StageInputError
from recsdk_build.hashing import sha256_file, sha256_text
from recsdk_build.options import Options
from recsdk_build.pipeline.manifest import Artifact, Manifest, StageRecord
from recsdk_build.proc import StageLog
from recsdk_build.ui import UI


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

    def output_of(self, stage: str) -> dict[str, Any]:
        """Outputs a previous stage recorded; a clear error when it has not run."""
        record = self.manifest.successful(stage)
        if record is None:
            raise StageInputError(
                f"this stage needs the output of '{stage}', which has not run successfully "
                f"in {self.paths.root}",
                hint=f"run `recsdk-build {stage}` first, or `recsdk-build all`",
            )
        return record.outputs

    def artifacts_of(self, stage: str) -> list[Artifact]:
        self.output_of(stage)
        record = self.manifest.successful(stage)
        assert record is not None
        return record.artifacts

    def require_log(self) -> StageLog:
        assert self.log is not None, "stage log is opened by the runner"
        return self.log


@dataclass
class Outcome:
    artifacts: list[Artifact] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    note: str = ""


class Stage(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]

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


def stage_code_digest(stage: Stage) -> str:
    """The stage's own implementation is an input too: a fixed builder rebuilds."""
    source = inspect.getsourcefile(type(stage))
    return sha256_file(Path(source)) if source else ""
