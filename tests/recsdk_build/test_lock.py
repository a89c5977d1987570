"""The runtime lock, for real and offline: the closure of the runtime over a venv's installed
metadata, hashed from the files pip fetches (a local --find-links directory here), and pip's
own --require-hashes refusing a file whose bytes differ from the verified one."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from recsdk_build import lock
from recsdk_build.errors import VerifyError
from recsdk_build.proc import StageLog
from recsdk_build.ui import UI


def wheel(where: Path, name: str, version: str, requires: list[str], payload: str = "") -> Path:
    path = where / f"{name}-{version}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", payload)
        zf.writestr(f"{name}-{version}.dist-info/METADATA", meta)
        zf.writestr(
            f"{name}-{version}.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{name}-{version}.dist-info/RECORD", "")
    return path


def venv(path: Path) -> Path:
    """A venv whose pip is the running Python's (seen through its site-packages): seconds to
    make, where ensurepip takes most of a minute; packages still go into the venv."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(path)],
        check=True,
    )
    return path / "bin" / "python"


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
    )


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_verified_runtime_is_locked_and_pip_enforces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    index.mkdir()
    alpha = wheel(index, "alpha", "1.0", ["beta>=2", 'gamma; extra == "fast"'])
    beta = wheel(index, "beta", "2.0", ['delta; python_version < "3"'])
    wheel(index, "gamma", "1.0", [])
    wheel(index, "unrelated", "1.0", [])
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    verified = venv(tmp_path / "verified")
    assert pip(verified, "install", "-q", "alpha", "unrelated").returncode == 0
    log = StageLog(tmp_path / "lock.log", UI())
    cache = tmp_path / "hashes.json"
    try:
        locked = lock.make_lock(log, verified, ["alpha"], tmp_path, VerifyError, cache=cache)
        # The suite's tools and anything else in the environment are not the runtime; an
        # extra nobody asked for and a marker that is false are not followed.
        assert [(e.name, e.version, e.hashes) for e in locked] == [
            ("alpha", "1.0", (sha(alpha),)),
            ("beta", "2.0", (sha(beta),)),
        ]
        text = lock.render(locked)
        assert lock.parse(text, where="t") == locked
        # Hashes come from the cache once known: no index needed.
        monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nowhere"))
        again = lock.make_lock(log, verified, ["alpha"], tmp_path, VerifyError, cache=cache)
        assert again == locked
        # A runtime requirement missing from the environment is an error, not a smaller lock.
        with pytest.raises(VerifyError, match="lacks runtime distributions: gamma"):
            lock.make_lock(log, verified, ["alpha[fast]"], tmp_path, VerifyError)
    finally:
        log.close()
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    locked_file = tmp_path / "runtime.lock"
    locked_file.write_text(text)
    target = venv(tmp_path / "target")
    installed = pip(target, "install", "--require-hashes", "--no-deps", "-r", str(locked_file))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # The same versions, other bytes (a rebuilt or substituted file on the index): refused.
    wheel(index, "beta", "2.0", [], payload="evil = True\n")
    other = venv(tmp_path / "other")
    refused = pip(other, "install", "--require-hashes", "--no-deps", "-r", str(locked_file))
    assert refused.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in refused.stderr, refused.stderr
    assert not list((tmp_path / "other").rglob("beta-2.0.dist-info"))


def test_hashes_come_from_pips_install_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    index.mkdir()
    alpha = wheel(index, "Alpha_Pkg", "1.0", ["beta"])
    beta = wheel(index, "beta", "2.0", [])
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    verified = venv(tmp_path / "verified")
    report = tmp_path / "report.json"
    done = pip(verified, "install", "-q", "--report", str(report), "Alpha_Pkg")
    assert done.returncode == 0, done.stderr
    # Canonical names, as the closure gives them, and the sha256 of the installed files.
    assert lock.hashes_from_report(report) == {
        "alpha-pkg==1.0": [sha(alpha)],
        "beta==2.0": [sha(beta)],
    }
    # With the report, nothing is downloaded: an index without the files still locks.
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nowhere"))
    log = StageLog(tmp_path / "lock.log", UI())
    try:
        locked = lock.make_lock(log, verified, ["alpha-pkg"], tmp_path, VerifyError, report=report)
        assert [(e.name, e.hashes) for e in locked] == [
            ("alpha-pkg", (sha(alpha),)),
            ("beta", (sha(beta),)),
        ]
        # An entry the report lacks is downloaded (and here cannot be): never guessed.
        report.write_text('{"install": [{"metadata": {"name": "beta", "version": "2.0"}}]}')
        with pytest.raises(VerifyError):
            lock.make_lock(log, verified, ["alpha-pkg"], tmp_path, VerifyError, report=report)
    finally:
        log.close()
    report.write_text("not json")
    assert lock.hashes_from_report(report) == {}


@pytest.mark.parametrize(
    "line",
    [
        "--index-url https://evil.example/simple",
        "-r other.txt",
        "torch>=2.6 --hash=sha256:" + "0" * 64,
        "torch==2.6.0",
        "torch @ https://evil.example/torch.whl --hash=sha256:" + "0" * 64,
        "torch==2.6.0 --hash=md5:" + "0" * 32,
    ],
)
def test_a_lock_is_only_pinned_hashed_lines(line: str) -> None:
    with pytest.raises(lock.LockError, match="line 2"):
        lock.parse("# head\n" + line + "\n", where="runtime.lock")
