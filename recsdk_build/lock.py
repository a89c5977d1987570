"""The runtime lock: exactly the distributions the verification suite ran against, with the
sha256 of each file, in pip's ``--require-hashes`` format.

``verify`` writes it from its own environment after the suite ran: the closure of the runtime
requirements over the installed distributions' metadata (what the runtime needs, not the
suite's tools), each as ``name==version``; the hashes are those of the files pip installed for
exactly those versions, as pip's ``--report`` of the environment's install recorded them (the
sha256 the index gives for the file, which pip checked, or that of the local file), else those
of the files ``pip download --no-deps`` fetches with the environment's interpreter (the same
index, platform and tags). ``dist`` ships the lock and ``install`` runs ``pip install
--require-hashes --no-deps -r runtime.lock``: every dependency is pinned (nothing floats: tqdm,
iopath and the like come at the verified versions) and a file whose bytes differ from the
verified one is refused by pip itself.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from recsdk_build.errors import RecsdkError
from recsdk_build.proc import StageLog, run_pip

LOCK = "runtime.lock"

# Run with the environment's interpreter: the runtime's closure over installed metadata.
# pip's vendored packaging is used because the environment need not have its own.
_CLOSURE = r"""
import json, sys
from importlib import metadata
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name
dists = {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()}
seen, missing = {}, []
todo = [(Requirement(r), "") for r in json.loads(sys.argv[1])]
while todo:
    req, extra = todo.pop()
    if req.marker is not None and not req.marker.evaluate({"extra": extra}):
        continue
    name = canonicalize_name(req.name)
    dist = dists.get(name)
    if dist is None:
        missing.append(name)
        continue
    extras = sorted(req.extras)
    key = (name, tuple(extras))
    if key in seen:
        continue
    seen[key] = dist.version
    for line in dist.requires or []:
        for e in extras or [""]:
            todo.append((Requirement(line), e))
print(json.dumps({"found": sorted({k[0]: v for k, v in seen.items()}.items()),
                  "missing": sorted(set(missing))}))
"""

_LINE = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)"
    r"(?P<hashes>(?:\s+--hash=sha256:[0-9a-f]{64})+)"
)


@dataclass(frozen=True)
class Locked:
    name: str  # canonical
    version: str
    hashes: tuple[str, ...]

    def line(self) -> str:
        return f"{self.name}=={self.version} " + " ".join(f"--hash=sha256:{h}" for h in self.hashes)


class LockError(RecsdkError):
    """The runtime lock cannot be made, or a lock is malformed."""


def closure(
    log: StageLog, python: str | Path, roots: Sequence[str], error: type[RecsdkError]
) -> list[tuple[str, str]]:
    """(name, version) of every distribution ``roots`` need in ``python``'s environment."""
    if not roots:
        return []
    result = log.run(
        [python, "-c", _CLOSURE, json.dumps(list(roots))],
        error=error,
        what="listing the runtime's distributions",
    )
    data = json.loads(result.stdout.strip().splitlines()[-1])
    if data["missing"]:
        raise error(
            "the verified environment lacks runtime distributions: " + ", ".join(data["missing"])
        )
    return [(str(n), str(v)) for n, v in data["found"]]


def hashes_from_report(report: Path) -> dict[str, list[str]]:
    """``name==version`` -> [sha256] of the files a ``pip install --report`` installed (names
    canonical, as the closure gives them). A file the report gives no sha256 for (a local
    directory, a VCS checkout) is left out; an unreadable report gives nothing."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        items = list(data.get("install", []))
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
    found: dict[str, list[str]] = {}
    for item in items:
        try:
            meta = item["metadata"]
            digest = item["download_info"]["archive_info"]["hashes"]["sha256"]
        except (KeyError, TypeError):
            continue
        if isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest):
            found[f"{canonicalize_name(meta['name'])}=={meta['version']}"] = [digest]
    return found


def make_lock(
    log: StageLog,
    python: str | Path,
    roots: Sequence[str],
    scratch: Path,
    error: type[RecsdkError],
    *,
    cache: Path | None = None,
    report: Path | None = None,
) -> list[Locked]:
    """The lock of ``roots`` in ``python``'s environment (see the module's docstring).

    ``report`` is pip's ``--report`` of the environment's install: its hashes are taken as
    they are. ``cache`` (JSON, ``name==version`` -> hashes) keeps the hashes of earlier runs: a
    version's files do not change on an index, and the runtime is gigabytes to fetch again."""
    pins = closure(log, python, roots, error)
    if not pins:
        return []
    known: dict[str, list[str]] = {}
    if cache is not None and cache.is_file():
        try:
            known = dict(json.loads(cache.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            known = {}
    if report is not None:
        known.update(hashes_from_report(report))
    wanted = [f"{n}=={v}" for n, v in pins if f"{n}=={v}" not in known]
    if wanted:
        where = Path(tempfile.mkdtemp(prefix="lock-", dir=scratch))
        try:
            run_pip(
                log,
                python,
                "download",
                "--no-deps",
                "--dest",
                where,
                *wanted,
                error=error,
                what="fetching the runtime's files to hash them",
            )
            files: dict[str, list[str]] = {}
            for path in sorted(where.iterdir()):
                files.setdefault(_dist_name(path.name), []).append(_sha256(path))
        finally:
            shutil.rmtree(where, ignore_errors=True)
        for name, version in pins:
            if f"{name}=={version}" in wanted:
                if name not in files:
                    raise error(f"pip download gave no file for {name}=={version}")
                known[f"{name}=={version}"] = sorted(files[name])
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
    return [Locked(n, v, tuple(known[f"{n}=={v}"])) for n, v in pins]


def render(locked: Sequence[Locked]) -> str:
    head = "# The runtime as verified: pip install --require-hashes --no-deps -r runtime.lock\n"
    return head + "".join(entry.line() + "\n" for entry in locked)


def parse(text: str, *, where: str) -> list[Locked]:
    """A lock written by ``render``; anything else (a pip option, a URL, an unpinned or
    unhashed line) is refused."""
    out: list[Locked] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise LockError(f"{where}: line {number} is not `name==version --hash=...`: {raw!r}")
        try:
            Version(match["version"])
        except InvalidVersion:
            raise LockError(
                f"{where}: line {number}: invalid version {match['version']!r}"
            ) from None
        hashes = tuple(h.split(":", 1)[1] for h in match["hashes"].split())
        out.append(Locked(canonicalize_name(match["name"]), match["version"], hashes))
    names = [e.name for e in out]
    if len(set(names)) != len(names):
        raise LockError(f"{where}: a distribution is listed twice")
    return out


def _dist_name(filename: str) -> str:
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[0])
        return str(parse_sdist_filename(filename)[0])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return canonicalize_name(filename.split("-", 1)[0])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
