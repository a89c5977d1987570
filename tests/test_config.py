from __future__ import annotations

from pathlib import Path

import pytest

from recsdk_build.config import find_project, load_project
from recsdk_build.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


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
        ('torch = "2.6.0"', 'torch = 2.6', "runtime.torch"),
        ('commit_time = 1738261401', 'commit_time = 12', "torchrec.commit_time"),
        ('blobs = "data/torchrec.blobs"', 'blobs = "data/missing.blobs"', "torchrec.blobs"),
        ('python = ">=3.10"', 'python = "at least 3.10"', "runtime.python"),
        ('install_runtime = false', 'install_runtime = "no"', "verify.install_runtime"),
        ('[verify]', '[verify]\ncolour = "blue"', "verify.colour"),
    ],
)
def test_a_bad_pin_is_refused_with_its_key_named(project: Path, old: str, new: str,
                                                 named: str) -> None:
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
        "optional-dependencies"]["test"]
    runtime = load_project(REPO).runtime
    assert f"torch=={runtime.torch}" in extras
    assert f"fbgemm-gpu-cpu=={runtime.fbgemm_gpu_cpu}" in extras
