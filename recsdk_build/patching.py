"""The patch series as a library: parse it, apply it in a scratch worktree, check it, and
refresh it from a source tree's commits. The patch stage and ``recsdk-build patch check|refresh``
call it; nothing here knows about stages or the build's manifest.

A series is ``patches/<torchrec>/series`` (application order) plus one ``NNNN-concern.patch`` per
concern, as ``git format-patch`` mail or a plain diff.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import git

from recsdk_build import gitutil
from recsdk_build.errors import PatchError
from recsdk_build.hashing import combine, sha256_text
from recsdk_build.pipeline.atomic import new_staging_dir, write_text_atomic
from recsdk_build.proc import StageLog

# How a commit becomes a patch file: no commit hash, git-version signature or [PATCH n/m]
# numbering, so the same commit always gives the same bytes and refresh rewrites nothing that
# did not change; full blob ids in the index lines.
FORMAT_PATCH = (
    "format-patch",
    "-k",
    "--zero-commit",
    "--no-signature",
    "--no-numbered",
    "--full-index",
)
SERIES = "series"
_NAME = re.compile(r"^(\d{4})-([a-z0-9][a-z0-9-]*)\.patch$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_FAILED_AT = re.compile(r"error: patch failed: (.+?):(\d+)")
_NO_FILE = re.compile(r"error: (.+?): (does not exist in index|No such file or directory)")
_ALREADY = re.compile(r"error: (.+?): already exists in (index|working directory)")


@dataclass(frozen=True)
class Hunk:
    file: str
    index: int  # 1-based within the file
    old_start: int
    header: str


@dataclass(frozen=True)
class PatchFile:
    path: Path
    text: str  # line endings normalised

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def is_mail(self) -> bool:
        return self.text.startswith("From ")

    def files(self) -> list[str]:
        return re.findall(r"^diff --git a/(\S+) b/\S+$", self.text, flags=re.M)

    def hunks(self) -> list[Hunk]:
        hunks: list[Hunk] = []
        current = None
        count = 0
        for line in self.text.splitlines():
            if line.startswith("diff --git "):
                current = line.split(" b/", 1)[-1]
                count = 0
            elif current and (m := _HUNK.match(line)):
                count += 1
                hunks.append(Hunk(current, count, int(m.group(1)), line))
        return hunks

    def stat(self) -> tuple[int, int]:
        added = removed = 0
        in_body = False
        for line in self.text.splitlines():
            if line.startswith("diff --git "):
                in_body = True
            elif in_body and line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif in_body and line.startswith("-") and not line.startswith("---"):
                removed += 1
        return added, removed


def normalise(text: str) -> str:
    """CRLF and CR line endings become LF; patches written on Windows apply the same."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") else text + "\n"


def read_series(patch_dir: Path) -> list[PatchFile]:
    series = patch_dir / SERIES
    if not series.is_file():
        raise PatchError(f"{series} does not exist", hint="list the patch files there, in order")
    names: list[str] = []
    for number, raw in enumerate(series.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line in names:
            raise PatchError(f"{series}:{number}: {line} is listed twice")
        if not _NAME.match(line):
            raise PatchError(
                f"{series}:{number}: {line!r} is not named NNNN-<concern>.patch",
                hint="e.g. 0002-npu-planner.patch",
            )
        names.append(line)
    patches = []
    for name in names:
        path = patch_dir / name
        if not path.is_file():
            raise PatchError(f"{series} lists {name}, but {path} does not exist")
        text = normalise(path.read_text(encoding="utf-8", errors="strict"))
        if "\ndiff --git " not in "\n" + text:
            raise PatchError(f"{name} contains no git diff")
        patches.append(PatchFile(path, text))
    unlisted = sorted(p.name for p in patch_dir.glob("*.patch") if p.name not in names)
    if unlisted:
        raise PatchError(
            f"{patch_dir} has patch files not listed in {SERIES}: {', '.join(unlisted)}",
            hint="add them to the series or delete them",
        )
    return patches


def apply_series(
    repo: git.Repo,
    baseline: str,
    patches: list[PatchFile],
    scratch: Path,
    log: StageLog,
    *,
    epoch: int,
) -> list[str]:
    """Apply ``patches`` on ``baseline`` in a scratch worktree; return the new commit ids."""
    commits: list[str] = []
    with gitutil.temporary_worktree(repo, baseline, scratch / "worktree") as wt:
        for index, patch in enumerate(patches, 1):
            commits.append(_apply_one(wt, patch, scratch, log, epoch=epoch + 60 * index))
    return commits


def _apply_one(wt: git.Repo, patch: PatchFile, scratch: Path, log: StageLog, *, epoch: int) -> str:
    normalised = scratch / patch.name
    normalised.write_text(patch.text, encoding="utf-8")
    log.write(f"applying {patch.name}")
    try:
        if patch.is_mail:
            wt.git.execute(
                [
                    "git",
                    "am",
                    "-k",
                    "--quiet",
                    "--committer-date-is-author-date",
                    "--whitespace=nowarn",
                    str(normalised),
                ]
            )
        else:
            wt.git.execute(["git", "apply", "--index", "--whitespace=nowarn", str(normalised)])
            concern = _NAME.match(patch.name)
            subject = concern.group(2) if concern else patch.name
            with wt.git.custom_environment(**gitutil.git_env_for_date(epoch)):
                wt.git.execute(["git", "commit", "--quiet", "--no-verify", "-m", subject])
    except git.GitCommandError as exc:
        detail = str(exc.stderr or "")
        log.write(detail)
        if patch.is_mail:
            with contextlib.suppress(git.GitCommandError):
                wt.git.execute(["git", "am", "--abort"])
        raise PatchError(
            _diagnose(wt, patch, normalised, detail),
            hint="the source tree was left at the baseline commit; fix the patch "
            "(see docs/patches.md for the maintainer workflow)",
        ) from exc
    head = gitutil.rev(wt, "HEAD")
    assert head is not None
    return head


def _diagnose(wt: git.Repo, patch: PatchFile, path: Path, am_error: str) -> str:
    """Name the patch, file and hunk that fail, using `git apply --check` for detail."""
    try:
        wt.git.execute(["git", "apply", "--check", "--verbose", str(path)])
        detail = am_error
    except git.GitCommandError as exc:
        detail = str(exc.stderr or "") + "\n" + am_error
    lines = [f"patch {patch.name} does not apply"]
    failed = _FAILED_AT.findall(detail)
    for file, line in dict.fromkeys(failed):
        hunk = next((h for h in patch.hunks() if h.file == file and h.old_start == int(line)), None)
        if hunk:
            lines.append(f"  {file}: hunk #{hunk.index} ({hunk.header.strip()}) does not match")
        else:
            lines.append(f"  {file}: a hunk at line {line} does not match")
    for file, _ in dict.fromkeys(_NO_FILE.findall(detail)):
        lines.append(f"  {file}: the file it changes does not exist in the tree")
    for file, _ in dict.fromkeys(_ALREADY.findall(detail)):
        lines.append(f"  {file}: the file it creates already exists")
    if len(lines) == 1:
        cleaned = [ln.replace("stderr: ", "").strip(" '") for ln in detail.splitlines()]
        lines.extend(f"  {ln}" for ln in cleaned if ln.startswith(("error", "fatal"))[:5])
    return "\n".join(lines)


def local_work(repo: git.Repo, known_heads: set[str | None]) -> str | None:
    """Describe unsaved work in the tree, or None when it is exactly a pipeline state."""
    dirty = gitutil.dirty_paths(repo)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        return f"uncommitted changes in {shown}"
    head = gitutil.rev(repo, "HEAD")
    if head not in known_heads:
        return f"commits that are not the patch series (HEAD {str(head)[:12]})"
    return None


def series_digest(patches: list[PatchFile]) -> str:
    """Identifies the series by content, the same whichever way the source tree arrived."""
    return combine(*(part for patch in patches for part in (patch.name, patch.text)))


def file_digest(path: Path) -> str:
    """A patch file's content, independent of line endings and trailing whitespace noise."""
    return sha256_text(normalise(path.read_text(encoding="utf-8")))


@dataclass
class CheckResult:
    name: str
    files: list[str]
    added: int
    removed: int


def check_series(
    source: Path,
    baseline: str,
    patch_dir: Path,
    *,
    scratch_root: Path,
    log: StageLog,
    epoch: int,
) -> list[CheckResult]:
    """Apply the series to a fresh worktree of ``source`` at ``baseline``, without touching the
    source tree itself; raises PatchError naming the patch, file and hunk that fail."""
    patches = read_series(patch_dir)
    repo = gitutil.open_repo(source)
    scratch = Path(tempfile.mkdtemp(prefix="patch-check-", dir=scratch_root))
    try:
        apply_series(repo, baseline, patches, scratch, log, epoch=epoch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [CheckResult(p.name, p.files(), *p.stat()) for p in patches]


_SUBJECT = re.compile(r"^Subject: (.*)$", re.M)


def refresh_series(
    source: Path, baseline: str, patch_dir: Path, *, scratch_root: Path
) -> tuple[list[str], list[str]]:
    """Rewrite the patch files from the commits baseline..HEAD of the source tree.

    Returns (written, removed) file names. The series file keeps its comment header.
    """
    repo = gitutil.open_repo(source)
    dirty = gitutil.dirty_paths(repo)
    if dirty:
        raise PatchError(
            f"the source tree has uncommitted changes in {', '.join(dirty[:5])}",
            hint="commit them (git commit --amend / git commit --fixup + rebase) first",
        )
    count = int(repo.git.rev_list("--count", f"{baseline}..HEAD"))
    merges = repo.git.rev_list("--merges", f"{baseline}..HEAD").strip()
    if merges:
        raise PatchError("the commits after the baseline include merges; rebase them linearly")
    try:
        repo.git.merge_base("--is-ancestor", baseline, "HEAD")
    except git.GitCommandError as exc:
        raise PatchError("HEAD does not descend from the baseline commit") from exc
    staging = new_staging_dir(scratch_root, "refresh")
    try:
        if count:
            gitutil.run_git(
                repo,
                "-c",
                "core.abbrev=12",
                *FORMAT_PATCH,
                "--quiet",
                "-o",
                str(staging),
                f"{baseline}..HEAD",
                error=PatchError,
                what="format-patch",
            )
        generated = sorted(staging.glob("*.patch"))
        written: list[str] = []
        for index, path in enumerate(generated, 1):
            text = normalise(path.read_text(encoding="utf-8"))
            name = f"{index:04d}-{_concern(text, path.name)}.patch"
            target = patch_dir / name
            if not target.is_file() or normalise(target.read_text(encoding="utf-8")) != text:
                write_text_atomic(target, text)
            written.append(name)
        removed = [p.name for p in patch_dir.glob("*.patch") if p.name not in written]
        header = _series_header(patch_dir / SERIES)
        write_text_atomic(patch_dir / SERIES, header + "".join(f"{n}\n" for n in written))
        for name in removed:
            (patch_dir / name).unlink()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written, removed


def _concern(text: str, fallback: str) -> str:
    match = _SUBJECT.search(text)
    subject = match.group(1) if match else fallback
    prefix = subject.split(":", 1)[0].strip().lower() if ":" in subject else subject.lower()
    slug = re.sub(r"[^a-z0-9]+", "-", prefix).strip("-")
    return slug[:60] or "change"


def _series_header(series: Path) -> str:
    if not series.is_file():
        return "# Applied in this order by `recsdk-build patch apply`.\n"
    lines = []
    for line in series.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            lines.append(line + "\n")
        else:
            break
    return "".join(lines)
