"""--python: which interpreter a path or a version names, and what is refused.

Fake interpreters are shell scripts that answer the probe with a fixed report, so the search
order (PATH, then pyenv's versions) is tested without installing Pythons.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from recsdk_build import interpreters
from recsdk_build.errors import PatchError, ToolMissingError, UsageError
from recsdk_build.interpreters import Interpreter, choose, find, wheel_misfits
from recsdk_build.options import compute_options
from tests.synthetic import Upstream


def fake_python(path: Path, version: tuple[int, int, int], *, machine: str = "x86_64") -> Path:
    """A script that reports itself as CPython ``version`` whatever it is asked."""
    report = {
        "version": list(version),
        "implementation": "cpython",
        "machine": machine,
        "sys_version": f"{'.'.join(map(str, version))} (fake)",
        "prefix": str(path.parent.parent),
        "base_prefix": str(path.parent.parent),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{json.dumps(report)}'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def failing_shim(path: Path) -> Path:
    """What pyenv puts on PATH for a version that is installed but not activated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 'pyenv: python3.10: command not found' >&2\nexit 127\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty PATH directory and an empty pyenv root; the running Python is 3.11.7."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    root = tmp_path / "pyenv"
    (root / "versions").mkdir(parents=True)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    me = Interpreter(sys.executable, (3, 11, 7), "cpython", "x86_64", "3.11.7 (me)", "/p", "/p")
    monkeypatch.setattr(interpreters, "current", lambda: me)
    return tmp_path


def test_a_version_skips_failing_shims_and_takes_pyenvs_newest_patch(hosts: Path) -> None:
    failing_shim(hosts / "bin" / "python3.10")
    versions = hosts / "pyenv" / "versions"
    fake_python(versions / "3.10.2" / "bin" / "python", (3, 10, 2))
    newest = fake_python(versions / "3.10.13" / "bin" / "python", (3, 10, 13))
    fake_python(versions / "3.10-dev" / "bin" / "python", (3, 10, 99))
    fake_python(versions / "3.1.0" / "bin" / "python", (3, 1, 0))  # "3.1" is not "3.10"
    found = find("3.10", requires=">=3.10")
    assert (found.path, found.version, found.tag) == (str(newest), (3, 10, 13), "cp310")
    assert find("3.10.2", requires=">=3.10").version == (3, 10, 2)


def test_a_version_on_path_wins_over_pyenv(hosts: Path) -> None:
    on_path = fake_python(hosts / "bin" / "python3.12", (3, 12, 4))
    fake_python(hosts / "pyenv" / "versions" / "3.12.9" / "bin" / "python", (3, 12, 9))
    assert find("3.12", requires=">=3.10").path == str(on_path)


def test_the_running_python_answers_its_own_version(hosts: Path) -> None:
    assert find("3.11", requires=">=3.10").sys_version == "3.11.7 (me)"


def test_missing_and_too_old_interpreters_are_named(hosts: Path) -> None:
    with pytest.raises(ToolMissingError, match=r"--python 3\.13: no Python 3\.13 found") as exc:
        find("3.13", requires=">=3.10")
    assert str(hosts / "pyenv" / "versions") in exc.value.message
    assert "pyenv install 3.13" in (exc.value.hint or "")
    old = fake_python(hosts / "bin" / "python3.9", (3, 9, 18))
    with pytest.raises(UsageError, match=r"Python 3\.9\.18 .* is too old; .* requires >=3\.10"):
        find("3.9", requires=">=3.10")
    with pytest.raises(UsageError, match="too old"):
        find(str(old), requires=">=3.10")


def test_a_command_name_is_looked_up_on_path(hosts: Path) -> None:
    fake = fake_python(hosts / "bin" / "python3", (3, 10, 7))
    assert find("python3", requires=">=3.10").path == str(fake)


def test_paths_are_checked_by_running_them(hosts: Path) -> None:
    good = fake_python(hosts / "opt" / "py" / "bin" / "python", (3, 10, 1), machine="aarch64")
    found = find(str(good), requires=">=3.10")
    assert (found.tag, found.machine) == ("cp310", "aarch64")
    with pytest.raises(ToolMissingError, match="no such file"):
        find(str(hosts / "nope" / "python"), requires=">=3.10")
    with pytest.raises(ToolMissingError, match="does not run as a Python"):
        find(str(failing_shim(hosts / "shim")), requires=">=3.10")
    with pytest.raises(UsageError, match="is a directory"):
        find(str(hosts / "opt" / "py"), requires=">=3.10")


def test_the_default_is_the_build_directorys_interpreter_while_it_runs(hosts: Path) -> None:
    recorded = fake_python(hosts / "pyenv" / "versions" / "3.10.4" / "bin" / "python", (3, 10, 4))
    record = interpreters.examine(recorded)
    assert record is not None
    assert choose(None, requires=">=3.10", recorded=record.to_json()).path == str(recorded)
    # Reinstalled as another build (or gone): the running interpreter again.
    fake_python(recorded, (3, 10, 5))
    assert choose(None, requires=">=3.10", recorded=record.to_json()).version == (3, 11, 7)
    assert choose(None, requires=">=3.10", recorded=None).version == (3, 11, 7)


def test_options_carry_one_interpreter(hosts: Path) -> None:
    fake_python(hosts / "pyenv" / "versions" / "3.10.13" / "bin" / "python", (3, 10, 13))
    opts = compute_options(python="3.10", python_requires=">=3.10")
    assert opts.python.tag == "cp310"
    assert Interpreter.from_json(opts.python.to_json()) == opts.python
    with pytest.raises(UsageError, match="too old"):
        compute_options(python="3.10", python_requires=">=3.11")


def test_wheels_that_do_not_fit_an_interpreter_are_named() -> None:
    py310 = Interpreter("/p", (3, 10, 13), "cpython", "x86_64", "x", "/p", "/p")
    wheels = [
        "torchrec-1.1.0+npu-py3-none-any.whl",
        "npu_sim-1.1.0+sim-cp310-cp310-linux_x86_64.whl",
        "fbgemm_npu_api-1.1.0+sim-cp311-cp311-linux_x86_64.whl",
        "torchrec_embcache-1.1.0+npu-cp310-cp310-linux_aarch64.whl",
    ]
    assert wheel_misfits(wheels, py310) == [
        "fbgemm_npu_api-1.1.0+sim-cp311-cp311-linux_x86_64.whl",
        "torchrec_embcache-1.1.0+npu-cp310-cp310-linux_aarch64.whl",
    ]


def test_the_real_running_interpreter_examines_as_itself() -> None:
    me = interpreters.examine(Path(sys.executable))
    assert me is not None
    assert me.version == tuple(sys.version_info[:3]) and me.sys_version == sys.version


def test_the_manifest_records_the_interpreter_of_a_successful_run_only(
    tmp_path: Path, upstream: Upstream
) -> None:
    from recsdk_build.pipeline.manifest import Manifest
    from tests.stagehelp import run
    from tests.synthetic import make_project

    good = make_project(tmp_path / "good", upstream)
    build = tmp_path / "build"
    run(good, build, "fetch", python=sys.executable)
    recorded = Manifest.load(build).python
    assert (recorded["path"], recorded["tag"]) == (
        sys.executable,
        f"cp{sys.version_info[0]}{sys.version_info[1]}",
    )
    broken = make_project(tmp_path / "broken", upstream, broken_patch=True)
    other = fake_python(tmp_path / "other" / "bin" / "python", (3, 12, 1))
    with pytest.raises(PatchError):
        run(broken, build, "patch", python=str(other))
    assert Manifest.load(build).python == recorded
