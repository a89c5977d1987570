"""Running external commands with their output captured in a stage log."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from recsdk_build.errors import BuildError, RecsdkError
from recsdk_build.ui import UI


class StageLog:
    """Appends everything a stage does to ``build/logs/<stage>.log``."""

    def __init__(self, path: Path, ui: UI) -> None:
        self.path = path
        self.ui = ui
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO = path.open("w", encoding="utf-8")

    def write(self, line: str) -> None:
        self._fh.write(line.rstrip("\n") + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def run(
        self,
        cmd: Sequence[str | os.PathLike[str]],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        error: type[RecsdkError] = BuildError,
        what: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``cmd``, logging its output; raise ``error`` naming ``what`` on failure."""
        argv = [str(a) for a in cmd]
        self.write(f"$ {shlex.join(argv)}" + (f"   (in {cwd})" if cwd else ""))
        full_env = {**os.environ, **(env or {})}
        tail: deque[str] = deque(maxlen=25)
        lines: list[str] = []
        with subprocess.Popen(
            argv,
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                self.write(line)
                tail.append(line.rstrip())
                lines.append(line)
                if self.ui.verbose:
                    self.ui.console.print(f"    {line.rstrip()}", markup=False, highlight=False)
            code = proc.wait()
        self.write(f"[exit {code}]")
        result = subprocess.CompletedProcess(argv, code, "".join(lines), "")
        if check and code != 0:
            label = what or shlex.join(argv[:3])
            shown = "\n".join(f"  | {t}" for t in tail)
            raise error(
                f"{label} failed (exit {code}); last output:\n{shown}",
                hint=f"full log: {self.path}",
            )
        return result
