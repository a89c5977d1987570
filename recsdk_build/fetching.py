"""Fetching the pinned torchrec source as a git tree with a verified baseline commit.

Sources, in order of preference:
- a git remote (the pinned repository by default): shallow fetch of the pinned commit;
- ``--source`` naming a local clone, a bare repository, a git bundle or a torchrec wheel;
- when the default remote cannot be reached, the registry's ``torchrec==<version>`` wheel,
  accepted only if every file's git blob id equals the pinned commit's.

A library: the fetch stage decides which source and where the tree goes.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git

from recsdk_build import gitutil
from recsdk_build.blobs import BlobList, compare, git_blob_id
from recsdk_build.config import TorchrecPins
from recsdk_build.downloads import download_wheel
from recsdk_build.errors import SourceError
from recsdk_build.hashing import sha256_file
from recsdk_build.proc import StageLog


@dataclass(frozen=True)
class SourceSpec:
    kind: str  # remote | clone | bare | bundle | wheel | registry
    location: str
    explicit: bool


def classify_source(source: str | None, default_remote: str) -> SourceSpec:
    if source is None:
        return SourceSpec("remote", default_remote, explicit=False)
    if "://" in source or source.startswith("git@"):
        return SourceSpec("remote", source, explicit=True)
    path = Path(source).expanduser()
    if not path.exists():
        raise SourceError(
            f"--source {source}: no such file or directory",
            hint="pass a git URL, a local clone, a bare repository, a .bundle or a torchrec .whl",
        )
    path = path.resolve()
    if path.is_file() and path.suffix == ".whl":
        return SourceSpec("wheel", str(path), explicit=True)
    if path.is_file():
        with path.open("rb") as fh:
            head = fh.read(20)
        if head.startswith(b"# v2 git bundle") or head.startswith(b"# v3 git bundle"):
            return SourceSpec("bundle", str(path), explicit=True)
        raise SourceError(f"--source {source}: not a git bundle or a .whl file")
    if (path / ".git").exists():
        return SourceSpec("clone", str(path), explicit=True)
    if gitutil.is_git_dir(path):
        return SourceSpec("bare", str(path), explicit=True)
    raise SourceError(f"--source {source}: directory is not a git repository")


def from_git(
    pin: TorchrecPins,
    spec: SourceSpec,
    tree: Path,
    pinned: BlobList,
    log: StageLog,
    *,
    config_name: str,
) -> dict[str, Any]:
    """Fetch the pinned commit from ``spec`` into a new repository at ``tree``, check every
    file's blob id against ``pinned`` and tag it as the baseline; returns the provenance."""
    t = pin
    repo = gitutil.init_repo(tree)
    with log.ui.status(f"fetching {t.commit[:12]} from {spec.location}"):
        shallow = _try_fetch(repo, spec.location, ["--depth", "1", spec.location, t.commit], log)
        if not shallow:
            # Servers that refuse to serve a commit by id: fetch the branch, then look for it.
            _fetch_or_raise(
                repo,
                spec.location,
                [spec.location, "+refs/heads/*:refs/remotes/source/*", "+refs/tags/*:refs/tags/*"],
                log,
            )
    if gitutil.rev(repo, t.commit) is None:
        raise SourceError(
            f"{spec.location} does not contain the pinned commit {t.commit}",
            hint=f"the pin is torchrec.commit in {config_name}",
        )
    gitutil.run_git(repo, "checkout", "--quiet", "-B", "main", t.commit, what="checkout")
    head = gitutil.rev(repo, "HEAD")
    if head != t.commit:
        raise SourceError(f"HEAD is {head} after checkout, but the pin is {t.commit}")
    found = {p: sha for p, (sha, _) in gitutil.ls_tree(repo, head).items()}
    problems = compare(found, pinned)
    missing = sorted(set(pinned.entries) - set(found))
    if problems or missing:
        listed = [str(p) for p in problems[:10]] + [f"{m}: missing" for m in missing[:10]]
        raise SourceError(
            "the pinned commit's files disagree with the blob list "
            f"{t.blobs.name}:\n  " + "\n  ".join(listed)
        )
    gitutil.run_git(repo, "tag", "-f", gitutil.BASELINE_TAG, head, what="tagging the baseline")
    # Drop the remote-tracking refs: the tree carries exactly baseline + series.
    for ref in repo.git.for_each_ref("--format=%(refname)", "refs/remotes").splitlines():
        repo.git.update_ref("-d", ref)
    return {
        "source_kind": "git" if spec.kind == "remote" else spec.kind,
        "location": spec.location,
        "commit": head,
        "shallow": shallow,
        "files_verified": len(found),
        "verification": f"HEAD equals the pin {t.commit[:12]}; all {len(found)} blob ids "
        f"equal the pinned list",
    }


def _try_fetch(repo: git.Repo, location: str, args: list[str], log: StageLog) -> bool:
    try:
        _fetch_or_raise(repo, location, args, log)
        return True
    except SourceError as exc:
        if _unreachable(exc.message):
            raise
        return False


def _fetch_or_raise(repo: git.Repo, location: str, args: list[str], log: StageLog) -> None:
    cmd = ["fetch", "--no-tags", "--quiet", *args]
    log.write("$ git " + " ".join(cmd))
    try:
        repo.git.execute(["git", *cmd])
    except git.GitCommandError as exc:
        detail = (exc.stderr or "").strip().replace("stderr: ", "").strip("'\n ")
        log.write(detail)
        raise SourceError(f"git fetch from {location} failed:\n{detail}") from exc


def _unreachable(message: str) -> bool:
    markers = (
        "Could not resolve host",
        "unable to access",
        "Connection refused",
        "Connection timed out",
        "Network is unreachable",
        "Could not read from remote",
        "does not appear to be a git repository",
        "Failed to connect",
    )
    return any(m in message for m in markers)


def download_fallback_wheel(pin: TorchrecPins, staging: Path, log: StageLog) -> Path:
    """The registry's torchrec wheel of the pinned version (verified by from_wheel)."""
    return download_wheel(
        log,
        pin.fallback_wheel,
        staging / "wheel",
        error=SourceError,
        why="the verified fallback source",
    )


def from_wheel(
    pin: TorchrecPins, wheel: Path, tree: Path, pinned: BlobList, *, kind: str
) -> dict[str, Any]:
    """A baseline commit at ``tree`` from a torchrec wheel, accepted only if every file's git
    blob id is the pinned commit's; returns the provenance."""
    t = pin
    files, dropped = _read_wheel(wheel, t.wheel_generated)
    found = {path: git_blob_id(data) for path, data in files.items()}
    problems = compare(found, pinned)
    if problems:
        shown = "\n  ".join(str(p) for p in problems[:10])
        more = f"\n  … and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise SourceError(
            f"{wheel.name} does not match the pinned commit {t.commit[:12]}; refused:\n  "
            f"{shown}{more}",
            hint="the file was corrupted or tampered with; delete it (or your pip cache entry) "
            "and fetch again",
        )
    if not files:
        raise SourceError(f"{wheel.name} contains no torchrec files")
    repo = gitutil.init_repo(tree)
    for path, data in files.items():
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if pinned.entries[path][1] == "100755" else 0o644)
    gitutil.run_git(repo, "add", "--all", what="staging the wheel's files")
    message = (
        f"torchrec {t.commit[:12]}: {len(files)} package files from {wheel.name}\n\n"
        f"Every file's git blob id equals pytorch/torchrec@{t.commit}.\n"
        "Test, build and documentation files are not shipped in the wheel.\n"
    )
    gitutil.run_git(
        repo,
        "commit",
        "--quiet",
        "--no-verify",
        "-m",
        message,
        env=gitutil.git_env_for_date(t.commit_time),
        what="baseline commit",
    )
    head = gitutil.rev(repo, "HEAD")
    assert head is not None
    gitutil.run_git(repo, "tag", "-f", gitutil.BASELINE_TAG, head, what="tagging the baseline")
    return {
        "source_kind": kind,
        "location": str(wheel) if kind == "wheel" else t.fallback_wheel,
        "wheel": wheel.name,
        "wheel_sha256": sha256_file(wheel),
        "commit": t.commit,
        "baseline_commit": head,
        "files_verified": len(files),
        "files_in_pinned_commit": len(pinned.entries),
        "generated_files_dropped": dropped,
        "verification": f"all {len(files)} files of {wheel.name} have the pinned commit's "
        "git blob ids",
    }


def _read_wheel(wheel: Path, generated: tuple[str, ...]) -> tuple[dict[str, bytes], list[str]]:
    """Repository files carried by a wheel, and the build-generated files left out.

    The package modules keep their paths; the license, which setuptools copies into the
    .dist-info directory, is the repository's LICENSE. Other metadata is not source.
    """
    files: dict[str, bytes] = {}
    dropped: list[str] = []
    try:
        with zipfile.ZipFile(wheel) as zf:
            for name in sorted(n for n in zf.namelist() if not n.endswith("/")):
                if name in generated:
                    dropped.append(name)
                    continue
                if ".dist-info/" in name:
                    if name.endswith(".dist-info/LICENSE"):
                        files["LICENSE"] = _read_member(zf, wheel, name)
                    continue
                files[name] = _read_member(zf, wheel, name)
    except zipfile.BadZipFile as exc:
        raise SourceError(f"{wheel}: not a valid wheel ({exc})") from exc
    return files, dropped


def _read_member(zf: zipfile.ZipFile, wheel: Path, name: str) -> bytes:
    try:
        return zf.read(name)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        # zipfile checks each member's CRC while reading: a flipped byte ends up here.
        raise SourceError(f"{wheel.name}: {name} is corrupt ({exc}); refused") from exc
