"""The package refuses to import against a torchrec other than 1.1.0, and says why."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import hybrid_torchrec as hy
import pytest
from hybrid_torchrec import compat


def fake_torchrec(site: Path, dist_versions: list[str], version_py: str | None = None) -> Path:
    package = site / "torchrec"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('the fake torchrec was imported')\n")
    if version_py is not None:
        (package / "version.py").write_text(f"__version__ = {version_py!r}\n")
    for version in dist_versions:
        info = site / f"torchrec-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: torchrec\nVersion: {version}\n\nbody\n"
        )
    return site


def import_with(site: Path) -> subprocess.CompletedProcess[str]:
    """Imports hybrid_torchrec in a child whose first torchrec is the one in `site`."""
    package_root = Path(hy.__file__).resolve().parents[1]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(package_root)])
    code = "import hybrid_torchrec as h; print('loaded', h.TORCHREC_VERSION)"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )


def test_the_torchrec_under_test_is_accepted() -> None:
    assert compat.release_of(hy.TORCHREC_VERSION) == "1.1.0"


@pytest.mark.parametrize("other", ["1.2.0", "1.0.0", "1.1.1+npu", "1.1.0rc1"])
def test_other_release_is_refused_with_a_clear_message(tmp_path: Path, other: str) -> None:
    result = import_with(fake_torchrec(tmp_path, [other]))
    assert result.returncode != 0
    assert f"works only with torchrec 1.1.0, but torchrec {other} is installed in" in (
        result.stderr
    )
    assert "the fake torchrec was imported" not in result.stderr  # checked without importing


def test_local_build_of_the_release_is_accepted(tmp_path: Path) -> None:
    result = import_with(fake_torchrec(tmp_path, ["1.1.0+npu"]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "loaded 1.1.0+npu"


def test_version_py_is_used_without_metadata(tmp_path: Path) -> None:
    result = import_with(fake_torchrec(tmp_path, [], version_py="1.5.0"))
    assert "but torchrec 1.5.0 is installed" in result.stderr
    result = import_with(fake_torchrec(tmp_path / "ok", [], version_py="1.1.0"))
    assert result.returncode == 0, result.stderr


def test_unknown_version_is_refused(tmp_path: Path) -> None:
    result = import_with(fake_torchrec(tmp_path, []))
    assert "cannot be determined" in result.stderr


def test_conflicting_installations_are_refused(tmp_path: Path) -> None:
    result = import_with(fake_torchrec(tmp_path, ["1.1.0", "1.2.0"]))
    assert "several torchrec distributions are installed" in result.stderr


def test_missing_torchrec_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> importlib.machinery.ModuleSpec | None:
        return None if name == "torchrec" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ImportError, match=r"needs torchrec 1\.1\.0, which is not installed"):
        compat.check_torchrec()


@pytest.mark.parametrize(
    ("torch_release", "abi_flip", "version", "says"),
    [
        ("2.5.1", False, None, "built against torch 2.6.0 but torch 2.5.1 is running"),
        (None, False, "1.0.0", "is version 1.1.0+npu but the Python package is 1.0.0"),
        (None, True, None, "different _GLIBCXX_USE_CXX11_ABI than torch"),
    ],
)
def test_core_refuses_another_torch_or_package_version(
    torch_release: str | None, abi_flip: bool, version: str | None, says: str
) -> None:
    # The check lives in the C++ core shared with torchrec_embcache (recsdk_ext); each
    # mismatch is refused on its own, and the running combination is accepted.
    import torch

    running = torch.__version__.split("+")[0]
    abi = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    hy._C._check_build(running, abi, hy.__version__)
    with pytest.raises(ImportError, match=r"hybrid_torchrec's C\+\+ core .*" + re.escape(says)):
        hy._C._check_build(torch_release or running, abi != abi_flip, version or hy.__version__)


def test_pool_size_comes_from_the_package_variable() -> None:
    import torchrec

    paths = [Path(m.__file__).resolve().parents[1] for m in (hy, torchrec)]
    code = "from hybrid_torchrec import _ext; print(_ext._C.default_num_threads())"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, paths)))
    env["HYBRID_TORCHREC_NUM_THREADS"] = "3"
    env["EMBCACHE_NUM_THREADS"] = "5"  # the other package's variable does not apply
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


def test_shared_python_is_packages_common_and_raises_this_packages_errors() -> None:
    """collective.py is shipped from packages/common/python into hybrid_torchrec._shared: the
    copy under test is that file, and its errors are this package's."""
    from hybrid_torchrec import errors
    from hybrid_torchrec._shared import collective as shared
    from hybrid_torchrec.distributed import collective

    common = Path(__file__).resolve().parents[2] / "packages" / "common" / "python"
    assert Path(shared.__file__).read_text() == (common / "collective.py").read_text()
    assert collective.collective_step is shared.collective_step
    assert shared.CollectiveError is errors.CollectiveError
