"""The torch adapter's sources and build configuration (torch_plugin/), without compiling.

The compiled adapter is tested by the verification suite (verify/ops/test_npu_ops.py) through
`recsdk-build all`; these check the rules its build must keep: registrations that never claim
a whole namespace, an ABI taken from torch, every operator of the catalogue and no other, and
a configuration that comes from the ops stage.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from recsdk_build.errors import BuildError
from recsdk_build.ops import catalogue, codegen
from recsdk_build.options import compute_options
from recsdk_build.pipeline.outputs import EnvOutput, OpsOutput
from recsdk_build.stages.plugin import PluginStage
from recsdk_build.targets import adapter
from recsdk_build.targets.cann import CannTarget
from recsdk_build.targets.sim import sim_adapter_config
from tests.plugin.plugin_copy import copy_plugin, setup_name

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "torch_plugin"
CSRC = PLUGIN / "csrc"


def _sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(CSRC.iterdir()) if p.is_file()}


def test_registrations_extend_namespaces_and_never_define_them_whole() -> None:
    sources = _sources()
    for name, text in sources.items():
        # TORCH_LIBRARY(ns, m) owns the namespace: a second library extending it would fail.
        assert not re.search(r"\bTORCH_LIBRARY\s*\(", text), name
        # fbgemm's schemas belong to fbgemm_gpu: the adapter adds kernels, never definitions...
        if name != "tbe.cpp":
            assert "TORCH_LIBRARY_FRAGMENT(fbgemm" not in text, name
    assert "TORCH_LIBRARY_FRAGMENT(mxrec, m)" in sources["mxrec.cpp"]
    # ...except the fused TBE lookups, which fbgemm-gpu-cpu lacks (its CUDA build defines
    # them): tbe.cpp defines each one only when no library has.
    tbe = sources["tbe.cpp"]
    fragment = tbe[tbe.index("TORCH_LIBRARY_FRAGMENT(fbgemm, m)") :]
    fragment = fragment[: fragment.index("\n}\n")]
    assert "if (!fbgemm_npu::defined_elsewhere(name))" in fragment
    assert fragment.count("m.def(") == 1


# Every kernel the extension registers, by (namespace, dispatch key): what registrations.cpp and
# tbe.cpp registered before the registrations were split by operator family.
REGISTERED = {
    ("fbgemm", "PrivateUse1"): {
        "asynchronous_complete_cumsum",
        "asynchronous_inclusive_cumsum",
        "asynchronous_exclusive_cumsum",
        "jagged_to_padded_dense_forward",
        "jagged_to_padded_dense_backward",
        "dense_to_jagged_forward",
        "permute_2D_sparse_data",
        "bounds_check_indices",
        "invert_permute",
        "block_bucketize_sparse_features",
        "permute_1D_sparse_data",
        "permute_2D_sparse_data_input1D",
        "permute_pooled_embs",
        "permute_pooled_embs_auto_grad",
        "segment_sum_csr",
        "offsets_range",
        "expand_into_jagged_permute",
        "jagged_unique_indices",
        "keyed_jagged_index_select_dim1",
        "permute_multi_embedding_function",
        "permute_multi_embedding",
        "kt_regroup_arguments",
        "regroup_keyed_tensor",
        "batch_index_select_dim0",
        "split_embedding_codegen_lookup_sgd_function",
        "split_embedding_codegen_lookup_adagrad_function",
        "split_embedding_codegen_lookup_rowwise_adagrad_function",
        "split_embedding_codegen_lookup_adam_function",
        "split_embedding_codegen_lookup_lars_sgd_function",
        "split_embedding_codegen_lookup_partial_rowwise_adam_function",
        "split_embedding_codegen_lookup_lamb_function",
        "split_embedding_codegen_lookup_partial_rowwise_lamb_function",
        "split_embedding_codegen_lookup_rowwise_adagrad_with_counter_function",
        "split_embedding_codegen_lookup_none_function",
        "dense_embedding_codegen_lookup_function",
        "generate_vbe_metadata",
        "get_infos_metadata",
        "permute_pooled_embs_split",
        "permute_pooled_embs_auto_grad_split",
        "permute_duplicate_pooled_embs",
        "permute_duplicate_pooled_embs_split",
        "permute_duplicate_pooled_embs_auto_grad",
        "permute_duplicate_pooled_embs_auto_grad_split",
        "batch_index_select_dim0_tensor",
        "jagged_2d_to_dense",
        "group_index_select_dim0",
        "group_index_select_dim0_gpu_impl",
        "group_index_select_dim0_gpu_backward",
        "jagged_index_select_2d_forward",
        "block_bucketize_sparse_features_inference",
        "FloatToFused8BitRowwiseQuantized",
        "Fused8BitRowwiseQuantizedToFloat",
        "FloatToHFP8Quantized",
        "HFP8QuantizedToFloat",
        "FloatToFP8RowwiseQuantized",
        "FP8RowwiseQuantizedToFloat",
        "merge_pooled_embeddings",
        "all_to_one_device",
        "sum_reduce_to_one",
    },
    ("fbgemm", "AutogradPrivateUse1"): {
        "batch_index_select_dim0",
        "permute_pooled_embs_auto_grad_split",
        "permute_duplicate_pooled_embs_auto_grad",
        "permute_duplicate_pooled_embs_auto_grad_split",
        "batch_index_select_dim0_tensor",
        "group_index_select_dim0",
        "split_embedding_codegen_lookup_sgd_function",
        "split_embedding_codegen_lookup_adagrad_function",
        "split_embedding_codegen_lookup_rowwise_adagrad_function",
        "split_embedding_codegen_lookup_adam_function",
        "split_embedding_codegen_lookup_lars_sgd_function",
        "split_embedding_codegen_lookup_partial_rowwise_adam_function",
        "split_embedding_codegen_lookup_lamb_function",
        "split_embedding_codegen_lookup_partial_rowwise_lamb_function",
        "split_embedding_codegen_lookup_rowwise_adagrad_with_counter_function",
        "split_embedding_codegen_lookup_none_function",
        "dense_embedding_codegen_lookup_function",
        "keyed_jagged_index_select_dim1",
    },
    ("mxrec", "PrivateUse1"): {
        "gather_for_rank1",
        "index_select_for_rank1_backward",
        "hstu_dense",
        "hstu_dense_backward",
    },
    ("mxrec", "AutogradPrivateUse1"): {"gather_for_rank1", "hstu_dense"},
    # HSTU also has CPU kernels: the golden npu results and user models compare against.
    ("mxrec", "CPU"): {"hstu_dense", "hstu_dense_backward"},
    ("mxrec", "AutogradCPU"): {"hstu_dense"},
}
FAMILIES = {
    "jagged.cpp": {
        "jagged_to_padded_dense_forward",
        "jagged_to_padded_dense_backward",
        "dense_to_jagged_forward",
    },
    "sparse.cpp": {
        "asynchronous_complete_cumsum",
        "asynchronous_inclusive_cumsum",
        "asynchronous_exclusive_cumsum",
        "permute_2D_sparse_data",
        "bounds_check_indices",
        "invert_permute",
        "block_bucketize_sparse_features",
        "permute_1D_sparse_data",
        "permute_2D_sparse_data_input1D",
        "permute_pooled_embs",
        "permute_pooled_embs_auto_grad",
        "segment_sum_csr",
        "offsets_range",
        "expand_into_jagged_permute",
    },
    "index_select.cpp": {"batch_index_select_dim0"},
    "keyed.cpp": {
        "permute_multi_embedding_function",
        "permute_multi_embedding",
        "kt_regroup_arguments",
        "regroup_keyed_tensor",
        "keyed_jagged_index_select_dim1",
    },
    "mxrec.cpp": {"gather_for_rank1", "index_select_for_rank1_backward"},
    "variants.cpp": {
        "permute_pooled_embs_split",
        "permute_pooled_embs_auto_grad_split",
        "permute_duplicate_pooled_embs",
        "permute_duplicate_pooled_embs_split",
        "permute_duplicate_pooled_embs_auto_grad",
        "permute_duplicate_pooled_embs_auto_grad_split",
        "batch_index_select_dim0_tensor",
        "jagged_2d_to_dense",
        "group_index_select_dim0",
        "group_index_select_dim0_gpu_impl",
        "group_index_select_dim0_gpu_backward",
        "jagged_index_select_2d_forward",
        "block_bucketize_sparse_features_inference",
    },
    "hstu.cpp": {"hstu_dense", "hstu_dense_backward"},
    "quantize.cpp": {
        "FloatToFused8BitRowwiseQuantized",
        "Fused8BitRowwiseQuantizedToFloat",
        "FloatToHFP8Quantized",
        "HFP8QuantizedToFloat",
        "FloatToFP8RowwiseQuantized",
        "FP8RowwiseQuantizedToFloat",
    },
    "unique.cpp": {"jagged_unique_indices"},
    "merge.cpp": {"merge_pooled_embeddings", "all_to_one_device", "sum_reduce_to_one"},
}


def _impl_blocks() -> dict[tuple[str, str], dict[str, set[str]]]:
    """The operator names in every TORCH_LIBRARY_IMPL block, by (namespace, key) and file."""
    found: dict[tuple[str, str], dict[str, set[str]]] = {}
    for name, text in _sources().items():
        for m in re.finditer(
            r"^TORCH_LIBRARY_IMPL\((\w+), (\w+), m\) \{\n(.*?)^\}", text, re.S | re.M
        ):
            names = set(re.findall(r'"([A-Za-z0-9_]+)"', m.group(3)))
            found.setdefault((m.group(1), m.group(2)), {}).setdefault(name, set()).update(names)
    return found


def test_the_family_files_register_the_same_kernels_as_before() -> None:
    blocks = _impl_blocks()
    assert {key: set().union(*files.values()) for key, files in blocks.items()} == REGISTERED
    for family, ops in FAMILIES.items():
        mine = set().union(*(files.get(family, set()) for files in blocks.values()))
        assert mine == ops, family
    # One module, defined once.
    modules = [n for n, t in _sources().items() if "PYBIND11_MODULE(" in t]
    assert modules == ["module.cpp"]


def test_boxed_kernels_read_their_arguments_by_name() -> None:
    boxed = (CSRC / "boxed.h").read_text(encoding="utf-8")
    assert "argumentIndexWithName" in boxed
    for name, text in _sources().items():
        if "makeFromBoxedFunction" not in text:
            continue
        assert '#include "boxed.h"' in text, name
        # No positional reads of the stack: every argument through Args, by its schema name.
        assert not re.search(r"\bargs\[\d+\]", text), name
        assert "torch::jit::last(" not in text, name
        for fn in re.findall(r"^(?:template <[^>]*>\n)?void (\w+_boxed)\(", text, re.M):
            body = text[text.index(f"void {fn}(") :]
            body = body[: body.index("\n}\n")]
            assert "const Args a(handle, stack);" in body, (name, fn)


def test_abi_flag_and_symbols_are_not_hand_written() -> None:
    for path in [*CSRC.iterdir(), PLUGIN / "setup.py"]:
        text = path.read_text(encoding="utf-8")
        assert "_GLIBCXX_USE_CXX11_ABI" not in text, path.name
        assert "dlsym" not in text and "dlopen" not in text, path.name


def test_setup_has_no_operator_list_of_its_own() -> None:
    setup = (PLUGIN / "setup.py").read_text(encoding="utf-8")
    assert "OPERATORS" not in setup
    for name in catalogue.load_catalogue(ROOT / "kernels"):
        assert f'"{name}"' not in setup, name
    assert 'config.get("catalogue")' in setup
    # Sources are listed, never globbed: a stray file must not change the adapter. The listed
    # ones are the hand-written sources and the generated glue the plugin stage adds.
    compiled = set(re.findall(r'"csrc/([a-z_]+\.cpp)"', setup))
    generated = {codegen.BACKEND_SIM, codegen.BACKEND_NPU}
    assert compiled == {p.name for p in CSRC.glob("*.cpp")} | generated
    assert not any((CSRC / name).exists() for name in [*generated, codegen.BACKEND_HEADER])


_CATALOGUE = tuple(catalogue.load_catalogue(ROOT / "kernels"))


def _fake_ctx(root: Path, ops_output: dict) -> SimpleNamespace:
    def output(kind: type) -> object:
        assert kind is OpsOutput
        return OpsOutput.from_json(ops_output)

    return SimpleNamespace(paths=SimpleNamespace(root=root), output=output)


def test_sim_adapter_config_comes_from_the_ops_stage(tmp_path: Path) -> None:
    entries = []
    for op in ("gather_for_rank1", "dense_to_jagged"):
        d = tmp_path / "ops" / "sim" / op
        d.mkdir(parents=True)
        (d / f"mxrec_opp_{op}_sim.so").write_bytes(b"lib")
        (d / f"mxrec_sim_{op}.h").write_text("// header\n")
        entries.append(
            {
                "op": op,
                "target": "sim",
                "soc": "any",
                "sha256": "0" * 64,
                "library": f"ops/sim/{op}/mxrec_opp_{op}_sim.so",
                "header": f"ops/sim/{op}/mxrec_sim_{op}.h",
            }
        )
    runtime = tmp_path / "ops" / "sim" / "runtime" / "libmxrec_sim_runtime.so"
    runtime.parent.mkdir(parents=True)
    runtime.write_bytes(b"runtime")
    output = {
        "target": "sim",
        "operators": entries,
        "sim_include": "/x/include",
        "runtime": "ops/sim/runtime/libmxrec_sim_runtime.so",
    }
    config = sim_adapter_config(_fake_ctx(tmp_path, output))  # type: ignore[arg-type]
    assert config["variant"] == "sim"
    assert config["sim_include"] == "/x/include"
    assert config["runtime"] == str(runtime)
    assert [e["op"] for e in config["operators"]] == ["gather_for_rank1", "dense_to_jagged"]
    assert all(Path(e["library"]).is_absolute() for e in config["operators"])

    runtime.unlink()
    with pytest.raises(BuildError, match="sim runtime library"):
        sim_adapter_config(_fake_ctx(tmp_path, output))  # type: ignore[arg-type]
    runtime.write_bytes(b"runtime")

    (tmp_path / entries[0]["library"]).unlink()
    with pytest.raises(BuildError, match=r"gather_for_rank1: .* is missing"):
        sim_adapter_config(_fake_ctx(tmp_path, output))  # type: ignore[arg-type]
    with pytest.raises(BuildError, match="needs sim operator libraries"):
        sim_adapter_config(  # type: ignore[arg-type]
            _fake_ctx(tmp_path, {**output, "target": "cann"})
        )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (None, "no build configuration"),
        ({"variant": "cuda", "operators": []}, "unknown variant 'cuda' (sim or npu)"),
        ({"variant": "npu", "operators": ["gather_for_rank1"]}, "names no catalogue"),
        (
            {"variant": "npu", "catalogue": [*_CATALOGUE], "operators": ["gather_for_rank1"]},
            "lacks asynchronous_complete_cumsum",
        ),
        (
            {
                "variant": "sim",
                "catalogue": [*_CATALOGUE],
                "sim_include": "/x",
                "operators": [{"op": "gather_for_rank1"}],
            },
            "lacks asynchronous_complete_cumsum",
        ),
        (
            {"variant": "npu", "catalogue": [*_CATALOGUE], "operators": [*_CATALOGUE]},
            "the generated backend glue csrc/backend_ops.h, csrc/backend_npu_ops.cpp is missing",
        ),
    ],
)
def test_setup_refuses_a_missing_or_wrong_configuration(
    tmp_path: Path, config: dict | None, message: str
) -> None:
    pytest.importorskip("torch")
    copy = copy_plugin(tmp_path)
    if config is not None:
        (copy / "build_config.json").write_text(json.dumps(config))
    result = setup_name(copy)
    assert result.returncode != 0
    assert message in result.stderr


def test_the_acl_meta_stand_in_is_only_for_the_build_check() -> None:
    # The sim build never sees it, and the npu backend gets CANN's own header on cann hosts.
    assert "buildcheck" not in (PLUGIN / "setup.py").read_text(encoding="utf-8")
    common = (CSRC / "backend_npu_common.h").read_text(encoding="utf-8")
    assert "#ifndef FBGEMM_NPU_API_NPU" in common
    # Prototypes come from the generated declarations of every operator in the catalogue.
    glue = codegen.backend_npu_source(list(catalogue.load_catalogue(ROOT / "kernels").values()))
    for name in catalogue.load_catalogue(ROOT / "kernels"):
        assert f'#include "aclnn_{name}_decl.h"' in glue, name
    # What the stand-in declares covers what the npu helpers call.
    stand_in = (PLUGIN / "buildcheck" / "aclnn" / "acl_meta.h").read_text(encoding="utf-8")
    helpers = common + (CSRC / "backend_npu.cpp").read_text(encoding="utf-8")
    called = set(re.findall(r"\b(acl(?:Create|Destroy)\w+)\(", helpers))
    assert called == {
        "aclCreateTensor",
        "aclDestroyTensor",
        "aclCreateIntArray",
        "aclDestroyIntArray",
    }
    for fn in called:
        assert f" {fn}(" in stand_in or f"*{fn}(" in stand_in, fn


def test_cann_plugin_without_the_toolkit_says_so(tmp_path: Path, monkeypatch) -> None:
    from recsdk_build.errors import ToolMissingError
    from recsdk_build.targets import cann as cann_target

    monkeypatch.setattr(cann_target, "find_cann", lambda: None)
    ctx = _fake_ctx(tmp_path, {"target": "cann", "opp": "ops/cann/opp"})
    with pytest.raises(ToolMissingError, match="needs the CANN toolkit"):
        CannTarget().build_plugin(ctx)  # type: ignore[arg-type]


def test_cann_plugin_needs_cann_operator_packages(tmp_path: Path, monkeypatch) -> None:
    from recsdk_build.targets import cann as cann_target
    from recsdk_build.toolchain import CannToolkit

    monkeypatch.setattr(
        cann_target, "find_cann", lambda: CannToolkit(tmp_path / "cann", "8.0", None)
    )
    ctx = _fake_ctx(tmp_path, {"target": "sim", "operators": []})
    with pytest.raises(BuildError, match="bundles the cann operator packages"):
        CannTarget().build_plugin(ctx)  # type: ignore[arg-type]


def test_npu_adapter_config_declares_every_operator(tmp_path: Path) -> None:
    """What setup.py builds the npu variant against: a generated aclnn declaration per
    operator of the catalogue, torch_npu's include trees first, the toolkit's after."""
    ctx = SimpleNamespace(project=SimpleNamespace(root=ROOT))
    torch_npu = tmp_path / "site-packages" / "torch_npu"
    config = adapter.npu_adapter_config(  # type: ignore[arg-type]
        ctx,
        tmp_path,
        torch_npu,
        include=[Path("/cann/include")],
        library_dirs=[Path("/cann/lib64")],
        libraries=["nnopbase", "ascendcl"],
        opp=Path("/build/ops/cann/opp"),
    )
    names = set(catalogue.load_catalogue(ROOT / "kernels"))
    assert config["variant"] == "npu"
    assert set(config["operators"]) == names
    assert set(config["catalogue"]) == names
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


def _inputs_ctx(root: Path) -> SimpleNamespace:
    outputs = {EnvOutput: EnvOutput(python="python", stamp="env"), OpsOutput: OpsOutput("sim")}
    return SimpleNamespace(
        project=SimpleNamespace(root=root, runtime=SimpleNamespace(torch_npu="2.6.0")),
        options=compute_options(target="sim"),
        output=lambda kind: outputs[kind],
    )


def test_fingerprint_covers_the_generator_and_what_it_generates(
    tmp_path: Path, monkeypatch
) -> None:
    """The adapter's glue is generated from the catalogue by codegen.py: a changed generator,
    or an op.toml change the operator libraries do not show ([host] keys), rebuilds it. The
    runner adds the declared helper modules' code to the fingerprint."""
    import importlib.util

    from recsdk_build.ops import catalogue as catalogue_mod
    from recsdk_build.ops import codegen as codegen_mod
    from recsdk_build.pipeline.stage import code_files, fingerprint, stage_code_digest

    assert {codegen_mod, catalogue_mod} <= set(PluginStage.helpers)
    hashed = {p.name for p in code_files(PluginStage())}
    assert {"codegen.py", "catalogue.py", "adapter.py"} <= hashed

    root = tmp_path / "project"
    shutil.copytree(ROOT / "kernels" / "ops", root / "kernels" / "ops")
    shutil.copytree(PLUGIN, root / "torch_plugin")
    shutil.copytree(ROOT / "packages" / "npu_sim", root / "packages" / "npu_sim")
    generator = tmp_path / "generator"
    generator.mkdir()
    copies = []
    for module in (codegen_mod, catalogue_mod):  # stand-ins loaded from copies we can edit
        copy = Path(shutil.copy2(module.__file__, generator / Path(module.__file__).name))
        spec = importlib.util.spec_from_file_location(f"copy_{copy.stem}", copy)
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, loaded)  # dataclasses look it up
        spec.loader.exec_module(loaded)
        copies.append((copy, loaded))
    helpers = tuple(m for m in PluginStage.helpers if m not in (codegen_mod, catalogue_mod))
    monkeypatch.setattr(PluginStage, "helpers", (*helpers, *(m for _, m in copies)))

    def current() -> str:
        stage = PluginStage()
        inputs = stage.inputs(_inputs_ctx(root))  # type: ignore[arg-type]
        return fingerprint({**inputs, "stage_code": stage_code_digest(stage)})

    base = current()
    assert current() == base
    for copy, _ in copies:  # a comment is enough: the code is hashed, not its output alone
        text = copy.read_text(encoding="utf-8")
        copy.write_text(text + "\n# changed\n", encoding="utf-8")
        assert current() != base, copy.name
        copy.write_text(text, encoding="utf-8")
        assert current() == base

    toml = root / "kernels" / "ops" / "invert_permute" / "op.toml"
    original = toml.read_text(encoding="utf-8")
    toml.write_text(original.replace("is not a permutation", "is no permutation"), "utf-8")
    assert current() != base
    toml.write_text(original, encoding="utf-8")
    assert current() == base
