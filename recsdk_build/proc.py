"""Running external commands with their output captured in a stage log."""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from recsdk_build.errors import BuildError, RecsdkError
from recsdk_build.ui import UI

TAIL_LINES = 25


def _failure(
    error: type[RecsdkError], label: str, code: int, tail: Sequence[str], log: Path | None
) -> RecsdkError:
    shown = "\n".join(f"  | {t}" for t in tail)
    return error(
        f"{label} failed (exit {code}); last output:\n{shown}",
        hint=f"full log: {log}" if log else None,
    )


def run_captured(
    cmd: Sequence[str | os.PathLike[str]],
    what: str,
    *,
    cwd: Path | None = None,
    error: type[RecsdkError] = BuildError,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` outside any stage (tests, benchmarks): output captured, and its tail in the
    error raised on failure."""
    argv = [str(a) for a in cmd]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).splitlines()
        raise _failure(error, what, proc.returncode, lines[-TAIL_LINES:], None)
    return proc


def probe(cmd: Sequence[str | os.PathLike[str]], *, timeout: float = 20) -> str | None:
    """What a quick query of a tool prints (stdout, else stderr), or None when it cannot run:
    version checks and device queries, whose failure is an answer, not an error."""
    try:
        out = subprocess.run(
            [str(a) for a in cmd], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.stdout.strip() else out.stderr


def run_pip(
    log: StageLog,
    python: str | os.PathLike[str],
    *args: str | os.PathLike[str],
    what: str,
    error: type[RecsdkError] = BuildError,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The one way pip runs: ``python``'s own pip (the environment it installs into or builds
    with), logged, never prompting, without the version nag."""
    return log.run(
        [python, "-m", "pip", *args, "--disable-pip-version-check"],
        error=error,
        what=what,
        env={"PIP_NO_INPUT": "1", **(env or {})},
    )


class StageLog:
    """Appends everything a stage does to ``build/logs/<stage>.log``. The one way stages run
    commands: ``run`` logs the command, its output and its exit status, and raises the stage's
    error with the output's tail on failure. Safe to call from several threads."""

    def __init__(self, path: Path, ui: UI) -> None:
        self.path = path
        self.ui = ui
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        with self._lock:
            self._write(line)

    def _write(self, line: str) -> None:
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
        whole: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``cmd``, logging its output; raise ``error`` naming ``what`` on failure.

        ``whole``: for commands running in parallel threads, write the command and its output
        to the log in one piece when it ends, instead of interleaving lines as they come.
        """
        argv = [str(a) for a in cmd]
        header = f"$ {shlex.join(argv)}" + (f"   (in {cwd})" if cwd else "")
        full_env = {**os.environ, **(env or {})}
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        lines: list[str] = []
        if not whole:
            self.write(header)
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
                if not whole:
                    self.write(line)
                tail.append(line.rstrip())
                lines.append(line)
                if self.ui.verbose:
                    self.ui.console.print(f"    {line.rstrip()}", markup=False, highlight=False)
            code = proc.wait()
        with self._lock:
            if whole:
                self._write(header)
                for line in lines:
                    self._write(line)
            self._write(f"[exit {code}]")
        result = subprocess.CompletedProcess(argv, code, "".join(lines), "")
        if check and code != 0:
            raise _failure(error, what or shlex.join(argv[:3]), code, tail, self.path)
        return result
