"""Git blob ids: verifying that files are exactly those of the pinned commit.

A git blob id is sha1(b"blob <size>\\0" + content), so a file can be checked against a commit's
tree without having the commit, which is how the registry-wheel fallback is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recsdk_build.errors import ConfigError
from recsdk_build.hashing import git_blob_id

__all__ = ["BlobList", "compare", "git_blob_id"]


@dataclass(frozen=True)
class BlobList:
    """The pinned commit's files: path -> (blob id, mode)."""

    entries: dict[str, tuple[str, str]]
    tree: str | None

    @classmethod
    def load(cls, path: Path) -> BlobList:
        entries: dict[str, tuple[str, str]] = {}
        tree = None
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("#"):
                if "root tree id:" in line:
                    tree = line.split(":", 1)[1].strip()
                continue
            if not line.strip():
                continue
            parts = line.split(" ", 2)
            if len(parts) != 3 or len(parts[0]) != 40:
                raise ConfigError(f"{path}:{number}: expected '<blob-sha1> <mode> <path>'")
            sha, mode, file_path = parts
            entries[file_path] = (sha, mode)
        if not entries:
            raise ConfigError(f"{path} lists no files")
        return cls(entries, tree)


@dataclass(frozen=True)
class Mismatch:
    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def compare(found: dict[str, str], pinned: BlobList) -> list[Mismatch]:
    """Every file in ``found`` (path -> blob id) must exist in the pinned commit unchanged."""
    problems = []
    for path in sorted(found):
        expected = pinned.entries.get(path)
        if expected is None:
            problems.append(Mismatch(path, "not a file of the pinned commit"))
        elif expected[0] != found[path]:
            problems.append(
                Mismatch(
                    path,
                    f"content differs from the pinned commit "
                    f"(blob {found[path][:12]}, expected {expected[0][:12]})",
                )
            )
    return problems
