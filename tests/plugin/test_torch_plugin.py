"""The torch adapter's sources and build configuration (torch_plugin/), without compiling.

The compiled adapter is tested by the verification suite (verify/test_npu_ops.py) through
`recsdk-build all`; these check the rules its build must keep: registrations that never claim
a whole namespace, an ABI taken from torch, every operator of the catalogue and no other, and
a configuration that comes from the ops stage.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from recsdk_build.errors import BuildError
from recsdk_build.ops import catalogue
from recsdk_build.stages.plugin import PluginStage

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "torch_plugin"
CSRC = PLUGIN / "csrc"


def _sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(CSRC.iterdir()) if p.is_file()}


def test_registrations_extend_namespaces_and_never_define_them_whole() -> None:
    for name, text in _sources().items():
        # TORCH_LIBRARY(ns, m) owns the namespace: a second library extending it would fail.
        assert not re.search(r"\bTORCH_LIBRARY\s*\(", text), name
    text = _sources()["registrations.cpp"]
    assert "TORCH_LIBRARY_FRAGMENT(mxrec, m)" in text
    assert "TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m)" in text
    assert "TORCH_LIBRARY_IMPL(mxrec, AutogradPrivateUse1, m)" in text
    # fbgemm's schemas belong to fbgemm_gpu: the adapter adds kernels, never definitions...
    assert "TORCH_LIBRARY_FRAGMENT(fbgemm" not in text
    # ...except the fused TBE lookups, which fbgemm-gpu-cpu lacks (its CUDA build defines
    # them): tbe.cpp defines each one only when no library has.
    tbe = _sources()["tbe.cpp"]
    fragment = tbe[tbe.index("TORCH_LIBRARY_FRAGMENT(fbgemm, m)"):]
    fragment = fragment[: fragment.index("\n}\n")]
    assert "if (!fbgemm_npu::defined_elsewhere(name))" in fragment
    assert fragment.count("m.def(") == 1


def test_abi_flag_and_symbols_are_not_hand_written() -> None:
    for path in [*CSRC.iterdir(), PLUGIN / "setup.py"]:
        text = path.read_text(encoding="utf-8")
        assert "_GLIBCXX_USE_CXX11_ABI" not in text, path.name
        assert "dlsym" not in text and "dlopen" not in text, path.name


def test_setup_builds_exactly_the_catalogue_operators() -> None:
    setup = (PLUGIN / "setup.py").read_text(encoding="utf-8")
    listed = re.search(r"OPERATORS = \((.*?)\)", setup, re.S)
    assert listed is not None
    names = set(re.findall(r'"([a-z0-9_]+)"', listed.group(1)))
    assert names == set(catalogue.load_catalogue(ROOT / "kernels"))
    # Sources are listed, never globbed: a stray file must not change the adapter.
    compiled = set(re.findall(r'"csrc/([a-z_]+\.cpp)"', setup))
    assert compiled == {p.name for p in CSRC.glob("*.cpp")}


def _fake_ctx(root: Path, ops_output: dict) -> SimpleNamespace:
    return SimpleNamespace(paths=SimpleNamespace(root=root), output_of=lambda stage: ops_output)


def test_sim_adapter_config_comes_from_the_ops_stage(tmp_path: Path) -> None:
    entries = []
    for op in ("gather_for_rank1", "dense_to_jagged"):
        d = tmp_path / "ops" / "sim" / op
        d.mkdir(parents=True)
        (d / f"mxrec_opp_{op}_sim.so").write_bytes(b"lib")
        (d / f"mxrec_sim_{op}.h").write_text("// header\n")
        entries.append({
            "op": op,
            "library": f"ops/sim/{op}/mxrec_opp_{op}_sim.so",
            "header": f"ops/sim/{op}/mxrec_sim_{op}.h",
        })
    runtime = tmp_path / "ops" / "sim" / "runtime" / "libmxrec_sim_runtime.so"
    runtime.parent.mkdir(parents=True)
    runtime.write_bytes(b"runtime")
    output = {
        "target": "sim",
        "operators": entries,
        "sim_include": "/x/include",
        "runtime": "ops/sim/runtime/libmxrec_sim_runtime.so",
    }
    config = PluginStage._sim_adapter_config(_fake_ctx(tmp_path, output))  # type: ignore[arg-type]
    assert config["variant"] == "sim"
    assert config["sim_include"] == "/x/include"
    assert config["runtime"] == str(runtime)
    assert [e["op"] for e in config["operators"]] == ["gather_for_rank1", "dense_to_jagged"]
    assert all(Path(e["library"]).is_absolute() for e in config["operators"])

    runtime.unlink()
    with pytest.raises(BuildError, match="sim runtime library"):
        PluginStage._sim_adapter_config(_fake_ctx(tmp_path, output))  # type: ignore[arg-type]
    runtime.write_bytes(b"runtime")

    (tmp_path / entries[0]["library"]).unlink()
    with pytest.raises(BuildError, match=r"gather_for_rank1: .* is missing"):
        PluginStage._sim_adapter_config(_fake_ctx(tmp_path, output))  # type: ignore[arg-type]
    with pytest.raises(BuildError, match="needs sim operator libraries"):
        PluginStage._sim_adapter_config(  # type: ignore[arg-type]
            _fake_ctx(tmp_path, {**output, "target": "cann"})
        )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (None, "no build configuration"),
        ({"variant": "cuda", "operators": []}, "unknown variant 'cuda' (sim or npu)"),
        ({"variant": "npu", "operators": ["gather_for_rank1"]},
         "lacks asynchronous_complete_cumsum"),
        ({"variant": "sim", "sim_include": "/x", "operators": [{"op": "gather_for_rank1"}]},
         "lacks asynchronous_complete_cumsum"),
    ],
)
def test_setup_refuses_a_missing_or_wrong_configuration(
    tmp_path: Path, config: dict | None, message: str
) -> None:
    pytest.importorskip("torch")
    copy = tmp_path / "torch_plugin"
    shutil.copytree(PLUGIN, copy, ignore=shutil.ignore_patterns("build", "*.so", "_ops"))
    if config is not None:
        (copy / "build_config.json").write_text(json.dumps(config))
    result = subprocess.run(
        [sys.executable, "setup.py", "--name"], cwd=copy, capture_output=True, text=True,
        check=False,
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_the_acl_meta_stand_in_is_only_for_the_build_check() -> None:
    # The sim build never sees it, and the npu backend gets CANN's own header on cann hosts.
    assert "buildcheck" not in (PLUGIN / "setup.py").read_text(encoding="utf-8")
    npu = (CSRC / "backend_npu.cpp").read_text(encoding="utf-8")
    assert "#ifndef FBGEMM_NPU_API_NPU" in npu
    # Prototypes come from the generated declarations of every operator in the catalogue.
    for name in catalogue.load_catalogue(ROOT / "kernels"):
        assert f'#include "aclnn_{name}_decl.h"' in npu, name


def test_cann_plugin_without_the_toolkit_says_so(tmp_path: Path, monkeypatch) -> None:
    from recsdk_build.errors import ToolMissingError
    from recsdk_build.stages import plugin as plugin_stage

    monkeypatch.setattr(plugin_stage, "find_cann", lambda: None)
    ctx = _fake_ctx(tmp_path, {"target": "cann", "opp": "ops/cann/opp"})
    with pytest.raises(ToolMissingError, match="needs the CANN toolkit"):
        PluginStage()._run_cann(ctx)  # type: ignore[arg-type]


def test_cann_plugin_needs_cann_operator_packages(tmp_path: Path, monkeypatch) -> None:
    from recsdk_build.stages import plugin as plugin_stage
    from recsdk_build.toolchain import CannToolkit

    monkeypatch.setattr(
        plugin_stage, "find_cann", lambda: CannToolkit(tmp_path / "cann", "8.0", None)
    )
    ctx = _fake_ctx(tmp_path, {"target": "sim", "operators": []})
    with pytest.raises(BuildError, match="bundles the cann operator packages"):
        PluginStage()._run_cann(ctx)  # type: ignore[arg-type]


def test_npu_adapter_config_declares_every_operator(tmp_path: Path) -> None:
    """What setup.py builds the npu variant against: a generated aclnn declaration per
    operator of the catalogue, torch_npu's include trees first, the toolkit's after."""
    ctx = SimpleNamespace(project=SimpleNamespace(root=ROOT))
    torch_npu = tmp_path / "site-packages" / "torch_npu"
    config = PluginStage._npu_adapter_config(  # type: ignore[arg-type]
        ctx, tmp_path, torch_npu, include=[Path("/cann/include")],
        library_dirs=[Path("/cann/lib64")], libraries=["nnopbase", "ascendcl"],
        opp=Path("/build/ops/cann/opp"),
    )
    names = set(catalogue.load_catalogue(ROOT / "kernels"))
    assert config["variant"] == "npu"
    assert set(config["operators"]) == names
    decl = Path(config["decl_include"])
    for name in names:
        text = (decl / f"aclnn_{name}_decl.h").read_text(encoding="utf-8")
        assert "GetWorkspaceSize(" in text, name
    assert config["include_dirs"] == [
        str(torch_npu / "include"),
        str(torch_npu / "include" / "third_party" / "acl" / "inc"),
        "/cann/include",
    ]
    assert config["library_dirs"] == [str(torch_npu / "lib"), "/cann/lib64"]
    assert config["libraries"] == ["torch_npu", "nnopbase", "ascendcl"]
    assert config["opp"] == "/build/ops/cann/opp"
