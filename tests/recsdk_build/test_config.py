from __future__ import annotations

from pathlib import Path

import pytest

from recsdk_build.config import find_project, load_project
from recsdk_build.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_the_shipped_pins_load() -> None:
    project = load_project(REPO)
    assert project.torchrec.commit == "2c5f6eef88ab689ec5cbd0764594e2b8c0e36163"
    assert project.torchrec.wheel_version == "1.1.0+npu"
    assert "fbgemm-gpu-cpu==1.1.0" in project.torchrec.requires
    assert project.runtime.requirements()[:2] == ["torch==2.6.0", "fbgemm-gpu-cpu==1.1.0"]


def _edit(project: Path, old: str, new: str) -> None:
    path = project / "recsdk.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('commit = "', 'commit = "abc', "torchrec.commit"),
        ('local_label = "npu"', 'local_label = "NPU!"', "torchrec.local_label"),
        ('version = "1.1.0"', 'version = "1.1.0+npu"', "torchrec.version"),
        ('requires = ["tqdm"]', 'requires = ["fbgemm-gpu==1.1.0"]', "torchrec.requires"),
        ('requires = ["tqdm"]', 'requires = ["tq dm >"]', "torchrec.requires"),
        ('torch = "2.6.0"', "torch = 2.6", "runtime.torch"),
        ("commit_time = 1738261401", "commit_time = 12", "torchrec.commit_time"),
        ('blobs = "data/torchrec.blobs"', 'blobs = "data/missing.blobs"', "torchrec.blobs"),
        ('python = ">=3.10"', 'python = "at least 3.10"', "runtime.python"),
        ("install_runtime = false", 'install_runtime = "no"', "verify.install_runtime"),
        ("[verify]", '[verify]\ncolour = "blue"', "verify.colour"),
    ],
)
def test_a_bad_pin_is_refused_with_its_key_named(
    project: Path, old: str, new: str, named: str
) -> None:
    _edit(project, old, new)
    with pytest.raises(ConfigError) as err:
        load_project(project)
    assert named in err.value.message


def test_a_missing_key_is_named(project: Path) -> None:
    _edit(project, 'branch = "release/v1.1.0"\n', "")
    with pytest.raises(ConfigError, match=r"torchrec\.branch is required"):
        load_project(project)


def test_a_missing_table_is_named(project: Path) -> None:
    text = (project / "recsdk.toml").read_text()
    (project / "recsdk.toml").write_text(text.split("[runtime]")[0])
    with pytest.raises(ConfigError, match="runtime missing table"):
        load_project(project)


def test_invalid_toml_is_reported(project: Path) -> None:
    (project / "recsdk.toml").write_text("[torchrec\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_project(project)


def test_project_is_found_from_a_subdirectory(project: Path) -> None:
    assert find_project(project / "patches" / "torchrec-1.1.0") == project.resolve()


def test_no_project_gives_a_hint(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        find_project(tmp_path)
    assert "recsdk.toml" in err.value.message
    assert err.value.hint and "--project" in err.value.hint


def test_test_extras_pin_the_same_runtime_as_recsdk_toml() -> None:
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["test"]
    runtime = load_project(REPO).runtime
    assert f"torch=={runtime.torch}" in extras
    assert f"fbgemm-gpu-cpu=={runtime.fbgemm_gpu_cpu}" in extras


def test_validating_the_config_imports_no_stage_and_no_git(tmp_path: Path) -> None:
    """config is a leaf: loading recsdk.toml (with a [pipeline] section, whose stage names it
    validates) must not pull in the pipeline, the stages or git."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    for entry in repo.iterdir():
        if entry.name not in ("recsdk.toml", ".git", "build"):
            (tmp_path / entry.name).symlink_to(entry)
    text = (repo / "recsdk.toml").read_text(encoding="utf-8")
    (tmp_path / "recsdk.toml").write_text(text + '\n[pipeline]\nstages = ["fetch", "patch"]\n')
    code = (
        "import sys; from pathlib import Path; from recsdk_build.config import load_project; "
        f"assert load_project(Path({str(tmp_path)!r})).stages == ('fetch', 'patch'); "
        "bad = sorted(m for m in sys.modules if m.startswith(('recsdk_build.stages', "
        "'recsdk_build.pipeline', 'recsdk_build.ops')) or m == 'git' or m.startswith('git.')); "
        "print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo
    ).stdout.strip()
    assert out == "[]", out


def test_stage_names_match_the_stages() -> None:
    from recsdk_build.stagenames import STAGE_NAMES
    from recsdk_build.stages.registry import all_stages

    assert tuple(s.name for s in all_stages()) == STAGE_NAMES


def test_build_helpers_take_what_they_use_not_the_stage_context() -> None:
    """Libraries below the stages: downloads and extension builds get a log and paths."""
    import inspect

    from recsdk_build import downloads, extbuild

    for fn in (downloads.download_wheel, extbuild.build_extension_wheel):
        params = inspect.signature(fn).parameters
        assert "ctx" not in params, fn.__name__
    for module in (downloads, extbuild):
        assert "recsdk_build.pipeline.stage" not in inspect.getsource(module), module.__name__
