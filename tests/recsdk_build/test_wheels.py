"""wheels: what ships, the version and requirements, and byte-identical rebuilds."""

from __future__ import annotations

import hashlib
import zipfile
from email.parser import Parser
from pathlib import Path

from recsdk_build.pipeline.manifest import Manifest
from recsdk_build.stages.wheels import EXCLUDED_PACKAGES, package_files
from tests.stagehelp import run
from tests.synthetic import Upstream

PATHS = [
    "setup.py",
    "torchrec/__init__.py",
    "torchrec/a.py",
    "torchrec/data.json",
    "torchrec/tests/__init__.py",
    "torchrec/tests/test_a.py",
    "torchrec/tests/helpers/__init__.py",
    "torchrec/tests/helpers/h.py",
    "torchrec/ir/serializer.py",
    "torchrec/linter/__init__.py",
    "torchrec/examples/__init__.py",
    "torchrec/benchmarks/__init__.py",
    "torchrec/distributed/__init__.py",
    "torchrec/distributed/benchmark/__init__.py",
    "torchrec/distributed/test_utils/__init__.py",
    "torchrec/orphan/sub/__init__.py",
    "torchrec/rfc/__init__.py",
]


def test_package_selection_equals_setuptools_find_packages(tmp_path: Path) -> None:
    from setuptools import find_packages

    for rel in PATHS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    packages = find_packages(str(tmp_path), exclude=EXCLUDED_PACKAGES)
    expected = sorted(
        rel for rel in PATHS if rel.endswith(".py") and ".".join(Path(rel).parent.parts) in packages
    )
    assert package_files(PATHS) == expected
    assert "torchrec/tests/test_a.py" not in expected  # the reference does exclude things


def _wheel(build: Path) -> Path:
    record = Manifest.load(build).stages["wheels"]
    [artifact] = record.artifacts
    path = build / artifact.path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == artifact.sha256
    return path


def test_wheel_name_version_requirements_and_contents(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", "patch", "wheels")
    wheel = _wheel(build)
    assert wheel.name == "torchrec-1.1.0+npu-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = sorted(zf.namelist())
        meta = Parser().parsestr(zf.read("torchrec-1.1.0+npu.dist-info/METADATA").decode())
        version_py = zf.read("torchrec/version.py").decode()
        planner = zf.read("torchrec/planner.py").decode()
    assert meta["Version"] == "1.1.0+npu"
    assert meta.get_all("Requires-Dist") == ["tqdm"]
    assert "torchrec/tests/test_planner.py" not in names
    assert "setup.py" not in names and "version.txt" not in names
    assert '"npu"' in planner  # built from the patched commit
    assert '__version__ = "1.1.0+npu"' in version_py
    assert "github_version" in version_py
    # Entry times come from SOURCE_DATE_EPOCH = the pinned commit's time (2025-01-30).
    assert {info.date_time[:3] for info in zipfile.ZipFile(wheel).infolist()} == {(2025, 1, 30)}


def test_two_clean_builds_are_byte_identical(project: Path, tmp_path: Path) -> None:
    run(project, tmp_path / "a", "fetch", "patch", "wheels")
    run(project, tmp_path / "b", "fetch", "patch", "wheels")
    assert _wheel(tmp_path / "a").read_bytes() == _wheel(tmp_path / "b").read_bytes()


def test_git_and_wheel_sources_give_the_same_wheel(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    run(project, tmp_path / "git", "fetch", "patch", "wheels")
    run(project, tmp_path / "whl", "fetch", "patch", "wheels", source=str(upstream.wheel))
    assert _wheel(tmp_path / "git").read_bytes() == _wheel(tmp_path / "whl").read_bytes()


def test_uncommitted_edits_never_reach_the_wheel(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", "patch", "wheels")
    first = _wheel(build).read_bytes()
    planner = build / "src" / "torchrec" / "torchrec" / "planner.py"
    planner.write_text("raise SystemExit('not committed')\n")
    run(project, build, "wheels", force=("wheels",))
    assert _wheel(build).read_bytes() == first


def test_extension_packages_are_built_in_the_build_environment(
    project: Path, tmp_path: Path
) -> None:
    import sys

    from recsdk_build.pipeline.manifest import StageRecord

    ext = project / "packages" / "tiny_ext"
    (ext / "tiny_ext").mkdir(parents=True)
    (ext / "tiny_ext" / "__init__.py").write_text("VALUE = 1\n")
    (ext / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tiny_ext"\nversion = "1.1.0+npu"\n'
        '[tool.setuptools]\npackages = ["tiny_ext"]\n'
    )
    # The shared sources reach the package as common/ of the copy that is built: this setup.py
    # ships the shared module inside the wheel, so the wheel shows what the build saw.
    (ext / "setup.py").write_text(
        "from pathlib import Path\nfrom setuptools import setup\n"
        "here = Path(__file__).parent\n"
        "text = (here / 'common' / 'shared.py').read_text()\n"
        "(here / 'tiny_ext' / 'shared.py').write_text(text)\n"
        "setup()\n"
    )
    shared = project / "packages" / "tiny_common"
    shared.mkdir()
    (shared / "shared.py").write_text("SHARED = 1\n")
    toml = project / "recsdk.toml"
    toml.write_text(
        toml.read_text() + '\n[packages]\nextension_wheels = ["packages/tiny_ext"]\n'
        'extension_shared = "packages/tiny_common"\n'
    )
    build = tmp_path / "build"
    run(project, build, "fetch", "patch")
    # The env stage is not part of this project; stand in for its output with this Python
    # (the stage only needs an interpreter that can build the package).
    manifest = Manifest.load(build)
    manifest.stages["env"] = StageRecord(
        "env", "ran", "x", "now", 0.0, outputs={"python": sys.executable, "stamp": "s"}
    )
    manifest.save()
    run(project, build, "wheels")
    record = Manifest.load(build).stages["wheels"]
    names = sorted(a.name for a in record.artifacts)
    assert names == ["tiny_ext-1.1.0+npu-py3-none-any.whl", "torchrec-1.1.0+npu-py3-none-any.whl"]
    assert not (ext / "build").exists()  # built from a copy: the checkout stays clean
    assert not (ext / "common").exists() and not (ext / "tiny_ext" / "shared.py").exists()
    with zipfile.ZipFile(build / "dist" / "tiny_ext-1.1.0+npu-py3-none-any.whl") as whl:
        assert whl.read("tiny_ext/shared.py") == b"SHARED = 1\n"
    # Editing the package's source reruns the stage.
    (ext / "tiny_ext" / "__init__.py").write_text("VALUE = 2\n")
    assert [r.status for r in run(project, build, "wheels")] == ["ran"]
    assert [r.status for r in run(project, build, "wheels")] == ["cached"]
    # So does editing the shared sources.
    (shared / "shared.py").write_text("SHARED = 2\n")
    assert [r.status for r in run(project, build, "wheels")] == ["ran"]


def test_an_in_place_build_leaves_a_package_digest_unchanged(tmp_path: Path) -> None:
    """The test suites build the extension packages in place (tests/extpackage.py), which
    writes the extension and the shared Python copied from packages/common into the source
    tree. Neither may change the package's digest: a built wheel would look stale and
    `recsdk-build all` after `pytest` would rebuild the wheels and rerun verify."""
    from recsdk_build.extbuild import package_digest

    pkg = tmp_path / "pkg"
    (pkg / "src" / "mod").mkdir(parents=True)
    (pkg / "setup.py").write_text("# setup\n")
    (pkg / "src" / "mod" / "__init__.py").write_text("x = 1\n")
    before = package_digest(pkg)
    (pkg / "src" / "mod" / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (pkg / "src" / "mod" / "_shared").mkdir()
    (pkg / "src" / "mod" / "_shared" / "collective.py").write_text("y = 2\n")
    (pkg / "build" / "temp").mkdir(parents=True)
    (pkg / "build" / "temp" / "a.o").write_bytes(b"obj")
    assert package_digest(pkg) == before
    (pkg / "src" / "mod" / "__init__.py").write_text("x = 2\n")
    assert package_digest(pkg) != before
