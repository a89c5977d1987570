"""The Python the build and verify environments are created from (``--python PATH|VERSION``).

The extension wheels are compiled for the interpreter of the build environment, so the
cluster's Python (3.10 in the user's version table) may differ from the one running
recsdk-build. ``--python`` takes a path to an interpreter, a command on PATH (``python3``), or
a version (``3.10``, ``3.10.13``) looked up as ``pythonX.Y`` on PATH and then in pyenv's
versions. Every candidate is run once to learn what it really is: pyenv puts shims for every
installed version on PATH that fail unless that version is activated, so a name on PATH
proves nothing.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from recsdk_build.errors import ToolMissingError, UsageError
from recsdk_build.proc import probe

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")

_PROBE = (
    "import json, platform, sys; print(json.dumps({"
    "'version': list(sys.version_info[:3]), 'implementation': sys.implementation.name, "
    "'machine': platform.machine(), 'sys_version': sys.version, "
    "'prefix': sys.prefix, 'base_prefix': sys.base_prefix}))"
)


@dataclass(frozen=True)
class Interpreter:
    """One Python interpreter, as it reported itself."""

    path: str  # absolute, as given or found (not resolved: a venv's python is a symlink)
    version: tuple[int, int, int]
    implementation: str  # sys.implementation.name: "cpython"
    machine: str  # platform.machine(): "x86_64", "aarch64"
    sys_version: str  # sys.version: also tells two builds of one version apart
    prefix: str
    base_prefix: str

    @property
    def short(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def tag(self) -> str:
        """The wheel tag of compiled extensions for it: ``cp310``."""
        impl = {"cpython": "cp", "pypy": "pp"}.get(self.implementation, self.implementation)
        return f"{impl}{self.version[0]}{self.version[1]}"

    @property
    def in_venv(self) -> bool:
        return self.prefix != self.base_prefix

    def describe(self) -> str:
        return f"Python {'.'.join(map(str, self.version))} ({self.path})"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "version": list(self.version), "tag": self.tag}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Interpreter:
        return cls(
            path=str(data["path"]),
            version=(int(data["version"][0]), int(data["version"][1]), int(data["version"][2])),
            implementation=str(data["implementation"]),
            machine=str(data["machine"]),
            sys_version=str(data["sys_version"]),
            prefix=str(data["prefix"]),
            base_prefix=str(data["base_prefix"]),
        )


def current() -> Interpreter:
    """The interpreter running recsdk-build (the default)."""
    return Interpreter(
        path=sys.executable,
        version=(sys.version_info[0], sys.version_info[1], sys.version_info[2]),
        implementation=sys.implementation.name,
        machine=platform.machine(),
        sys_version=sys.version,
        prefix=sys.prefix,
        base_prefix=sys.base_prefix,
    )


def examine(path: Path) -> Interpreter | None:
    """What the interpreter at ``path`` is, or None when it does not run as a Python."""
    out = probe([path, "-c", _PROBE])
    if not out:
        return None
    try:
        data = json.loads(out.strip().splitlines()[-1])
        return Interpreter.from_json({**data, "path": str(path)})
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def pyenv_roots() -> list[Path]:
    """Where pyenv keeps its versions: $PYENV_ROOT, what `pyenv root` says, ~/.pyenv."""
    roots: list[Path] = []
    if env_root := os.environ.get("PYENV_ROOT"):
        roots.append(Path(env_root))
    if shutil.which("pyenv") and (said := (probe(["pyenv", "root"]) or "").strip()):
        roots.append(Path(said))
    roots.append(Path.home() / ".pyenv")
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def _pyenv_candidates(roots: Iterable[Path], wanted: tuple[int, ...]) -> Iterator[Path]:
    """pyenv versions named exactly X.Y.Z that match ``wanted``, newest patch first."""
    found: list[tuple[Version, Path]] = []
    for root in roots:
        versions = root / "versions"
        if not versions.is_dir():
            continue
        for entry in versions.iterdir():
            m = _VERSION.match(entry.name)
            if not m or m.group(3) is None:
                continue  # 3.10-dev, miniconda3-…, virtualenvs: not a plain release
            numbers = tuple(int(g) for g in m.groups())
            if numbers[: len(wanted)] == wanted and (entry / "bin" / "python").exists():
                found.append((Version(entry.name), entry / "bin" / "python"))
    for _, path in sorted(found, key=lambda item: item[0], reverse=True):
        yield path


def _by_version(spec: str, wanted: tuple[int, ...]) -> Interpreter | None:
    me = current()
    if me.version[: len(wanted)] == wanted:
        return me
    short = f"{wanted[0]}.{wanted[1]}"
    candidates: list[Path] = []
    if on_path := shutil.which(f"python{short}"):
        candidates.append(Path(on_path))
    candidates.extend(_pyenv_candidates(pyenv_roots(), wanted))
    for candidate in candidates:
        found = examine(candidate)
        if found is not None and found.version[: len(wanted)] == wanted:
            return found
    return None


def find(spec: str, *, requires: str) -> Interpreter:
    """The interpreter ``--python spec`` names, checked against recsdk.toml's runtime.python
    (``requires``); a ToolMissingError or UsageError in one line otherwise."""
    version = _VERSION.match(spec)
    if version:
        wanted = tuple(int(g) for g in version.groups() if g is not None)
        found = _by_version(spec, wanted)
        if found is None:
            short = f"{wanted[0]}.{wanted[1]}"
            roots = ", ".join(str(r / "versions") for r in pyenv_roots())
            raise ToolMissingError(
                f"--python {spec}: no Python {spec} found (looked for python{short} on PATH "
                f"and in pyenv's {roots})",
                hint=f"install it (e.g. `pyenv install {short}`) or pass the interpreter's path",
            )
    else:
        path = Path(spec).expanduser()
        on_path = shutil.which(spec) if os.sep not in spec else None
        if on_path:  # a command name: python3
            path = Path(on_path)
        elif not path.is_absolute():
            path = Path.cwd() / path
        if not path.exists():
            raise ToolMissingError(f"--python {spec}: no such file")
        if path.is_dir():
            raise UsageError(
                f"--python {spec}: is a directory; pass the interpreter (e.g. {spec}/bin/python)"
            )
        found = examine(path)
        if found is None:
            # Python 2 runs, but not the probe (no sys.implementation): say which it is.
            said = (probe([path, "-c", "import sys; print(sys.version.split()[0])"]) or "").strip()
            if re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+\S*", said.splitlines()[-1] if said else ""):
                raise UsageError(
                    f"--python {spec} is Python {said.splitlines()[-1]}; "
                    f"recsdk-build needs Python {requires}"
                )
            raise ToolMissingError(f"--python {spec}: does not run as a Python interpreter")
    check_supported(found, requires, spec=spec)
    return found


def check_supported(found: Interpreter, requires: str, *, spec: str) -> None:
    """Refuse an interpreter outside recsdk.toml's runtime.python (too old, usually)."""
    have = Version(".".join(map(str, found.version)))
    allowed = SpecifierSet(requires)
    if have not in allowed:
        floors = [Version(s.version) for s in allowed if s.operator in (">=", ">")]
        why = "too old" if any(have < floor for floor in floors) else "not supported"
        raise UsageError(
            f"--python {spec}: {found.describe()} is {why}; recsdk.toml's runtime.python "
            f"requires {requires}",
            hint="choose another interpreter with --python",
        )


def choose(spec: str | None, *, requires: str, recorded: dict[str, Any] | None) -> Interpreter:
    """``--python`` resolved once. Without it: the interpreter the build directory was made
    for (the manifest's record), so stages run one by one agree with the build; else the
    interpreter running recsdk-build."""
    if spec is not None:
        return find(spec, requires=requires)
    if recorded:
        try:
            previous = Interpreter.from_json(recorded)
        except (KeyError, TypeError, ValueError, IndexError):
            previous = None
        if previous is not None:
            again = examine(Path(previous.path))
            if again is not None and again.sys_version == previous.sys_version:
                return again
    return current()


def wheel_misfits(wheels: Iterable[str], python: Interpreter) -> list[str]:
    """The wheel file names among ``wheels`` that ``python`` cannot install: built for another
    Python (cp311 for a 3.10 interpreter) or another architecture."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    generic = {"py3", f"py{python.version[0]}{python.version[1]}", python.tag}
    misfits = []
    for name in wheels:
        try:
            _, _, _, tags = parse_wheel_filename(Path(name).name)
        except InvalidWheelFilename:
            misfits.append(name)
            continue
        fits = (
            t.interpreter in generic
            and (t.platform == "any" or t.platform.endswith(python.machine))
            for t in tags
        )
        if not any(fits):
            misfits.append(Path(name).name)
    return misfits
