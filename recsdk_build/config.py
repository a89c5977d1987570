"""Pins and project configuration, loaded from ``recsdk.toml``.

The file is validated on load: every problem names the key (``torchrec.commit``) and what was
expected, so a typo never surfaces later as a confusing build failure.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from recsdk_build.errors import ConfigError
from recsdk_build.stagenames import STAGE_NAMES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_NAME = "recsdk.toml"
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_LABEL = re.compile(r"^[a-z0-9]+(\.[a-z0-9]+)*$")


@dataclass(frozen=True)
class TorchrecPins:
    repository: str
    branch: str
    commit: str
    commit_time: int
    version: str
    local_label: str
    blobs: Path
    fallback_wheel: str
    patches: Path
    requires: tuple[str, ...]
    requires_python: str
    wheel_generated: tuple[str, ...]

    @property
    def wheel_version(self) -> str:
        """The version the built wheel carries, e.g. ``1.1.0+npu``."""
        return f"{self.version}+{self.local_label}"


@dataclass(frozen=True)
class RuntimePins:
    python: str
    torch: str
    torch_npu: str
    fbgemm_gpu_cpu: str
    torchmetrics: str
    extra: tuple[str, ...]

    def requirements(self, *, with_torch_npu: bool = False) -> list[str]:
        """pip requirement lines for the runtime (torchrec itself is installed separately)."""
        reqs = [
            f"torch=={self.torch}",
            f"fbgemm-gpu-cpu=={self.fbgemm_gpu_cpu}",
            f"torchmetrics=={self.torchmetrics}",
            *self.extra,
        ]
        if with_torch_npu:
            reqs.append(f"torch-npu=={self.torch_npu}")
        return reqs


@dataclass(frozen=True)
class VerifyConfig:
    suite: Path
    requirements: tuple[str, ...]
    # False only for pipelines whose suite does not need the pinned runtime (the tool's own
    # end-to-end tests use a small synthetic torchrec).
    install_runtime: bool = True


@dataclass(frozen=True)
class Project:
    """A recsdk-build checkout: its root and validated pins."""

    root: Path
    config_path: Path
    torchrec: TorchrecPins
    runtime: RuntimePins
    verify: VerifyConfig
    # The stages this project has, in pipeline order; None means every stage.
    stages: tuple[str, ...] | None
    # C++ extension packages the wheels stage builds in the pinned build environment.
    extension_packages: tuple[Path, ...] = ()
    # Sources the extension packages share, copied into each as common/ when it is built.
    extension_shared: Path | None = None

    def pins_summary(self) -> dict[str, Any]:
        """The pins as plain data, for the manifest and the verify suite."""
        t, r = self.torchrec, self.runtime
        return {
            "torchrec": {
                "repository": t.repository,
                "branch": t.branch,
                "commit": t.commit,
                "version": t.version,
                "wheel_version": t.wheel_version,
                "requires": list(t.requires),
            },
            "runtime": {
                "python": r.python,
                "torch": r.torch,
                "torch_npu": r.torch_npu,
                "fbgemm_gpu_cpu": r.fbgemm_gpu_cpu,
                "torchmetrics": r.torchmetrics,
                "extra": list(r.extra),
            },
        }


def find_project(start: Path | None = None) -> Path:
    """Walk up from ``start`` (default: cwd) to the directory holding recsdk.toml."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / CONFIG_NAME).is_file():
            return candidate
    raise ConfigError(
        f"no {CONFIG_NAME} found in {here} or any parent directory",
        hint="run recsdk-build inside a recsdk-build checkout, or pass --project DIR",
    )


def load_project(root: Path | None = None) -> Project:
    """Load and validate ``recsdk.toml`` of the project at ``root`` (searched when None)."""
    root = find_project(root) if root is None else root.resolve()
    path = root / CONFIG_NAME
    if not path.is_file():
        raise ConfigError(f"{path} does not exist", hint="pass --project pointing at a checkout")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    reader = _Reader(path, data)
    project = Project(
        root=root,
        config_path=path,
        torchrec=_torchrec(reader, root),
        runtime=_runtime(reader),
        verify=_verify(reader, root),
        stages=_stages(reader),
        extension_packages=_extension_packages(reader, root),
        extension_shared=_extension_shared(reader, root),
    )
    reader.reject_unknown()
    return project


class _Reader:
    """Typed access to the TOML table that names the key in every error."""

    _known: dict[str, set[str]]

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self._known = {}

    def table(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        if not isinstance(value, dict):
            raise self.error(name, "missing table" if value is None else "must be a table")
        self._known.setdefault(name, set())
        return value

    def get(self, table: str, key: str, kind: type, default: Any = ...) -> Any:
        self._known.setdefault(table, set()).add(key)
        section = self.table(table)
        if key not in section:
            if default is ...:
                raise self.error(f"{table}.{key}", "is required")
            return default
        value = section[key]
        if kind is int and isinstance(value, bool):
            raise self.error(f"{table}.{key}", "must be an integer")
        if not isinstance(value, kind):
            raise self.error(f"{table}.{key}", f"must be a {kind.__name__}, got {value!r}")
        return value

    def strings(self, table: str, key: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(table, key, list, default)
        if not all(isinstance(item, str) and item for item in value):
            raise self.error(f"{table}.{key}", "must be a list of non-empty strings")
        return tuple(value)

    def reject_unknown(self) -> None:
        for name, value in self.data.items():
            if name not in self._known:
                raise self.error(name, f"unknown table (known: {', '.join(sorted(self._known))})")
            for key in value if isinstance(value, dict) else ():
                if key not in self._known[name]:
                    known = ", ".join(sorted(self._known[name]))
                    raise self.error(f"{name}.{key}", f"unknown key (known: {known})")

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.path.name}: {key} {problem}", hint=f"edit {self.path}")


def _version(reader: _Reader, key: str, value: str) -> str:
    try:
        parsed = Version(value)
    except InvalidVersion as exc:
        raise reader.error(key, f"is not a valid version: {value!r}") from exc
    if parsed.local is not None:
        raise reader.error(key, f"must not carry a local label: {value!r}")
    return value


def _requirement(reader: _Reader, key: str, value: str) -> str:
    try:
        req = Requirement(value)
    except InvalidRequirement as exc:
        raise reader.error(key, f"has an invalid requirement {value!r}: {exc}") from exc
    if req.name.lower().replace("_", "-") == "fbgemm-gpu":
        raise reader.error(key, "must not require the CUDA package fbgemm-gpu; use fbgemm-gpu-cpu")
    return value


def _specifier(reader: _Reader, key: str, value: str) -> str:
    try:
        SpecifierSet(value)
    except InvalidSpecifier as exc:
        raise reader.error(key, f"is not a valid version specifier: {value!r}") from exc
    return value


def _path(reader: _Reader, root: Path, key: str, value: str, *, is_dir: bool) -> Path:
    path = (root / value).resolve()
    ok = path.is_dir() if is_dir else path.is_file()
    if not ok:
        kind = "directory" if is_dir else "file"
        raise reader.error(key, f"points at a missing {kind}: {path}")
    return path


def _torchrec(reader: _Reader, root: Path) -> TorchrecPins:
    t = "torchrec"
    commit = reader.get(t, "commit", str)
    if not _SHA1.match(commit):
        raise reader.error(f"{t}.commit", f"must be a full 40-hex-digit commit id, got {commit!r}")
    label = reader.get(t, "local_label", str)
    if not _LABEL.match(label):
        raise reader.error(f"{t}.local_label", f"is not a valid PEP 440 local label: {label!r}")
    commit_time = reader.get(t, "commit_time", int)
    if commit_time < 315532800:  # zip files cannot store times before 1980
        raise reader.error(f"{t}.commit_time", "must be a Unix time after 1980")
    requires = tuple(
        _requirement(reader, f"{t}.requires", r) for r in reader.strings(t, "requires")
    )
    fallback = reader.get(t, "fallback_wheel", str)
    _requirement(reader, f"{t}.fallback_wheel", fallback)
    return TorchrecPins(
        repository=reader.get(t, "repository", str),
        branch=reader.get(t, "branch", str),
        commit=commit,
        commit_time=commit_time,
        version=_version(reader, f"{t}.version", reader.get(t, "version", str)),
        local_label=label,
        blobs=_path(reader, root, f"{t}.blobs", reader.get(t, "blobs", str), is_dir=False),
        fallback_wheel=fallback,
        patches=_path(reader, root, f"{t}.patches", reader.get(t, "patches", str), is_dir=True),
        requires=requires,
        requires_python=_specifier(
            reader, f"{t}.requires_python", reader.get(t, "requires_python", str, ">=3.9")
        ),
        wheel_generated=reader.strings(t, "wheel_generated", []),
    )


def _runtime(reader: _Reader) -> RuntimePins:
    r = "runtime"
    return RuntimePins(
        python=_specifier(reader, f"{r}.python", reader.get(r, "python", str)),
        torch=_version(reader, f"{r}.torch", reader.get(r, "torch", str)),
        torch_npu=_version(reader, f"{r}.torch_npu", reader.get(r, "torch_npu", str)),
        fbgemm_gpu_cpu=_version(
            reader, f"{r}.fbgemm_gpu_cpu", reader.get(r, "fbgemm_gpu_cpu", str)
        ),
        torchmetrics=_version(reader, f"{r}.torchmetrics", reader.get(r, "torchmetrics", str)),
        extra=tuple(_requirement(reader, f"{r}.extra", x) for x in reader.strings(r, "extra", [])),
    )


def _stages(reader: _Reader) -> tuple[str, ...] | None:
    if "pipeline" not in reader.data:
        return None
    names = reader.strings("pipeline", "stages")
    unknown = [n for n in names if n not in STAGE_NAMES]
    if unknown:
        raise reader.error(
            "pipeline.stages", f"names unknown stages {unknown} (known: {list(STAGE_NAMES)})"
        )
    return names


def _extension_packages(reader: _Reader, root: Path) -> tuple[Path, ...]:
    if "packages" not in reader.data:
        return ()
    key = "packages.extension_wheels"
    paths = tuple(
        _path(reader, root, key, rel, is_dir=True)
        for rel in reader.strings("packages", "extension_wheels", [])
    )
    for path in paths:
        if not (path / "pyproject.toml").is_file():
            raise reader.error(key, f"names {path}, which has no pyproject.toml")
    return paths


def _extension_shared(reader: _Reader, root: Path) -> Path | None:
    rel = (
        reader.get("packages", "extension_shared", str, None) if "packages" in reader.data else None
    )
    return (
        None if rel is None else _path(reader, root, "packages.extension_shared", rel, is_dir=True)
    )


def _verify(reader: _Reader, root: Path) -> VerifyConfig:
    v = "verify"
    return VerifyConfig(
        suite=_path(reader, root, f"{v}.suite", reader.get(v, "suite", str), is_dir=True),
        requirements=tuple(
            _requirement(reader, f"{v}.requirements", x)
            for x in reader.strings(v, "requirements", [])
        ),
        install_runtime=reader.get(v, "install_runtime", bool, True),
    )
