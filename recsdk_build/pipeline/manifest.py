"""``build/manifest.json``: what every stage produced, from what, and how it was verified."""

from __future__ import annotations

import json
import platform
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from recsdk_build import __version__
from recsdk_build.hashing import sha256_file, sha256_text
from recsdk_build.pipeline.atomic import write_text_atomic
from recsdk_build.pipeline.outputs import StageOutput, parse_recorded

Out = TypeVar("Out", bound=StageOutput)

MANIFEST_NAME = "manifest.json"
SCHEMA = 1


@dataclass
class Artifact:
    """One file a stage produced. ``path`` is relative to the build directory."""

    name: str
    path: str
    sha256: str
    size: int
    target: str
    kind: str

    @classmethod
    def of(cls, build_dir: Path, path: Path, *, kind: str, target: str = "any") -> Artifact:
        return cls(
            name=path.name,
            path=str(path.relative_to(build_dir)),
            sha256=sha256_file(path),
            size=path.stat().st_size,
            target=target,
            kind=kind,
        )

    def intact(self, build_dir: Path) -> bool:
        path = build_dir / self.path
        return (
            path.is_file() and path.stat().st_size == self.size and sha256_file(path) == self.sha256
        )


@dataclass
class StageRecord:
    name: str
    status: str  # "ran" | "cached" | "failed"
    fingerprint: str
    started_at: str
    duration_s: float
    artifacts: list[Artifact] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # The digest of each input the fingerprint was made from (input_digests), so that a
    # changed input can be named (dist refuses a build whose inputs changed since).
    inputs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageRecord:
        arts = [Artifact(**a) for a in data.get("artifacts", [])]
        return cls(**{**data, "artifacts": arts})


@dataclass
class Manifest:
    path: Path
    stages: dict[str, StageRecord] = field(default_factory=dict)
    pins: dict[str, Any] = field(default_factory=dict)
    # The interpreter the build is for (--python, interpreters.Interpreter.to_json).
    python: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, build_dir: Path) -> Manifest:
        path = build_dir / MANIFEST_NAME
        manifest = cls(path=path)
        if not path.is_file():
            return manifest
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("schema") != SCHEMA:
                return manifest
            manifest.pins = data.get("pins", {})
            manifest.python = data.get("python", {})
            manifest.stages = {
                name: StageRecord.from_json(rec) for name, rec in data.get("stages", {}).items()
            }
        except (ValueError, TypeError, KeyError):
            # A manifest we cannot read only costs a rebuild; it is rewritten on save.
            return cls(path=path)
        return manifest

    def successful(self, name: str) -> StageRecord | None:
        record = self.stages.get(name)
        return record if record is not None and record.status != "failed" else None

    def recorded(self, kind: type[Out]) -> Out | None:
        """The typed output of ``kind``'s stage from its last successful run; None when it has
        not run or its record does not parse (written by another version)."""
        record = self.successful(kind.stage)
        return parse_recorded(kind, record.outputs) if record is not None else None

    def to_json(self) -> dict[str, Any]:
        artifacts = [
            {**asdict(a), "stage": rec.name}
            for rec in self.stages.values()
            if rec.status != "failed"
            for a in rec.artifacts
        ]
        return {
            "schema": SCHEMA,
            "tool": tool_versions(),
            "pins": self.pins,
            "python": self.python,
            "artifacts": artifacts,
            "stages": {name: asdict(rec) for name, rec in self.stages.items()},
        }

    def save(self) -> None:
        write_text_atomic(self.path, json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n")


def input_digests(inputs: dict[str, Any]) -> dict[str, str]:
    """The sha256 of each of a stage's inputs, as fingerprint() serializes them; a dict input
    one level down (``ops.offsets_range``, ``patches.0001-npu.patch``), so that the message
    can name the operator or file that changed."""

    def digest(value: Any) -> str:
        return sha256_text(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str))

    out: dict[str, str] = {}
    for key, value in inputs.items():
        if isinstance(value, dict) and value:
            out.update({f"{key}.{sub}": digest(v) for sub, v in value.items()})
        else:
            out[key] = digest(value)
    return out


def tool_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {
        "recsdk-build": __version__,
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
    }
    for dist in ("hatchling", "GitPython", "pip"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = "absent"
    return versions
