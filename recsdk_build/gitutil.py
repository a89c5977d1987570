"""Thin GitPython helpers with errors that say which repository and what failed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import git

from recsdk_build.errors import RecsdkError, SourceError

BASELINE_TAG = "recsdk/baseline"
PATCHED_BRANCH = "recsdk/patched"
IDENTITY = ("recsdk-build", "recsdk-build@users.noreply.invalid")

# Git must behave the same on every host: no user hooks, templates or signing.
_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": IDENTITY[0],
    "GIT_AUTHOR_EMAIL": IDENTITY[1],
    "GIT_COMMITTER_NAME": IDENTITY[0],
    "GIT_COMMITTER_EMAIL": IDENTITY[1],
}


def open_repo(path: Path) -> git.Repo:
    repo = git.Repo(path)
    repo.git.update_environment(**_ENV)
    return repo


def init_repo(path: Path) -> git.Repo:
    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path, initial_branch="main")
    repo.git.update_environment(**_ENV)
    with repo.config_writer() as cfg:
        cfg.set_value("core", "autocrlf", "false")
        cfg.set_value("commit", "gpgsign", "false")
        cfg.set_value("gc", "auto", "0")
    return repo


def run_git(
    repo: git.Repo,
    *args: str,
    error: type[RecsdkError] = SourceError,
    what: str = "",
    env: dict[str, str] | None = None,
) -> str:
    try:
        if env:
            with repo.git.custom_environment(**env):
                return str(repo.git.execute(["git", *args]))
        return str(repo.git.execute(["git", *args]))
    except git.GitCommandError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().replace("stderr: ", "")
        raise error(f"{what or 'git ' + args[0]} failed in {repo.working_dir}: {detail}") from exc


def rev(repo: git.Repo, ref: str) -> str | None:
    try:
        return str(repo.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}"))
    except git.GitCommandError:
        return None


def dirty_paths(repo: git.Repo) -> list[str]:
    """Modified, staged and untracked (not ignored) paths of the working tree."""
    out = repo.git.status("--porcelain", "--untracked-files=all")
    return [line[3:] for line in out.splitlines() if line.strip()]


def ls_tree(repo: git.Repo, commit: str) -> dict[str, tuple[str, str]]:
    """path -> (blob id, mode) for every file of ``commit``."""
    out = repo.git.ls_tree("-r", "--full-tree", commit)
    entries: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob":
            entries[path] = (sha, mode)
    return entries


@contextmanager
def temporary_worktree(repo: git.Repo, commit: str, path: Path) -> Iterator[git.Repo]:
    """A detached worktree at ``commit``, removed afterwards whatever happens."""
    run_git(
        repo,
        "worktree",
        "add",
        "--detach",
        "--force",
        str(path),
        commit,
        what="creating a scratch worktree",
    )
    try:
        yield open_repo(path)
    finally:
        with suppress(git.GitCommandError):
            repo.git.worktree("remove", "--force", str(path))
        repo.git.worktree("prune")


def git_env_for_date(epoch: int) -> dict[str, str]:
    stamp = f"@{epoch} +0000"
    return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}


def is_git_dir(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())
