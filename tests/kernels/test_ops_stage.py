"""The ops stage and the operator catalogue: --only resolution, sim builds (incremental,
named with sim, in the manifest), the CANN project generated from data and its dry run."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from kernel_testlib import KERNELS
from rich.console import Console

from recsdk_build.errors import ConfigError, ToolMissingError, UsageError
from recsdk_build.ops import cannproject, catalogue, codegen
from recsdk_build.options import compute_options
from recsdk_build.pipeline.manifest import Manifest
from recsdk_build.pipeline.runner import run_stages
from recsdk_build.pipeline.stage import BuildPaths, Context
from recsdk_build.stages.ops import OpsStage
from recsdk_build.toolchain import find_cann
from recsdk_build.ui import UI

OPS = [
    "asynchronous_complete_cumsum",
    "batch_index_select_dim0",
    "batch_index_select_dim0_backward",
    "block_bucketize_sparse_features",
    "bounds_check_indices",
    "concat_slab",
    "dense_to_jagged",
    "expand_into_jagged_permute",
    "float_to_fp8_rowwise",
    "float_to_fused8bit_rowwise",
    "float_to_hfp8",
    "fp8_rowwise_to_float",
    "fused8bit_rowwise_to_float",
    "gather_for_rank1",
    "hfp8_to_float",
    "hstu_dense_backward",
    "hstu_dense_forward",
    "index_select_for_rank1_backward",
    "invert_permute",
    "jagged_to_padded_dense",
    "jagged_unique_indices",
    "keyed_jagged_index_select_dim1",
    "offsets_range",
    "permute2d_sparse_data",
    "permute_multi_embedding",
    "permute_pooled_embs",
    "segment_sum_csr",
    "split_embedding_backward",
    "split_embedding_forward",
    "sum_stacked",
]

TOOLKIT_HEADERS = ("kernel_operator.h", "lib/matmul_intf.h")


@pytest.fixture(scope="module")
def specs() -> dict[str, catalogue.OpSpec]:
    return catalogue.load_catalogue(KERNELS)


# ---- catalogue --------------------------------------------------------------------------------


def test_catalogue_has_exactly_the_operators_listed(specs) -> None:
    assert sorted(specs) == OPS
    groups = catalogue.groups(specs)
    assert sorted(groups["jagged"]) == [
        "asynchronous_complete_cumsum",
        "dense_to_jagged",
        "jagged_to_padded_dense",
    ]
    assert sorted(groups["tbe"]) == [
        "bounds_check_indices",
        "split_embedding_backward",
        "split_embedding_forward",
    ]
    # `--only hstu` builds exactly the two HSTU operators; the jagged ones keep their own group.
    assert sorted(groups["hstu"]) == ["hstu_dense_backward", "hstu_dense_forward"]


def test_only_takes_names_and_groups(specs) -> None:
    chosen = catalogue.select(specs, ["jagged,gather_for_rank1"])
    assert [s.name for s in chosen] == [
        "asynchronous_complete_cumsum",
        "dense_to_jagged",
        "gather_for_rank1",
        "jagged_to_padded_dense",
    ]
    with pytest.raises(UsageError) as err:
        catalogue.select(specs, ["jagged", "nope"])
    assert "nope" in err.value.message and "permute2d_sparse_data" in err.value.message
    assert "groups: hstu, jagged, merge, quantize, sparse, tbe" in err.value.message


def test_variants_follow_op_toml(specs) -> None:
    assert len(specs["permute2d_sparse_data"].variants()) == 2 * 2 * 5 * 3
    backward = specs["index_select_for_rank1_backward"].variants()
    assert len(backward) == 3 * 2 and all(v["x"] == v["grad"] == v["out"] for v in backward)


def test_op_toml_rejects_optional_before_required(tmp_path: Path) -> None:
    op = tmp_path / "ops" / "bad_op"
    op.mkdir(parents=True)
    (op / "op.toml").write_text(
        '[op]\nname = "bad_op"\nop_type = "BadOp"\ncompute_units = ["ascend910b"]\n'
        '[[inputs]]\nname = "a"\ndtypes = ["float32"]\noptional = true\n'
        '[[inputs]]\nname = "b"\ndtypes = ["float32"]\n'
    )
    with pytest.raises(ConfigError, match="optional inputs must come after"):
        catalogue.load_op(op / "op.toml")


def test_kernel_type_reaches_the_sim_launcher(tmp_path: Path, specs) -> None:
    """[op] kernel_type says which cores run the kernel; the launcher's OpSpec carries it as
    asc-devkit's KernelMetaType number (vector-only operators leave it out: 0)."""
    cube_users = {n for n, s in specs.items() if s.kernel_type != "aiv_only"}
    assert cube_users == {"hstu_dense_backward", "hstu_dense_forward"}
    assert all(specs[name].kernel_type == "mix_aic_1_2" for name in cube_users)
    assert "0 /* KERNEL_TYPE_AIV_ONLY */" in codegen.sim_launcher(specs["invert_permute"])
    op = tmp_path / "ops" / "mm_op"
    (op / "op_kernel").mkdir(parents=True)
    (op / "op_kernel" / "mm_op.cpp").write_text('#include "kernel_operator.h"\n')
    toml = (
        '[op]\nname = "mm_op"\nop_type = "MmOp"\ncompute_units = ["ascend910b"]\n'
        'kernel_type = "{}"\n[[inputs]]\nname = "a"\ndtypes = ["float32"]\n'
        '[[outputs]]\nname = "c"\ndtype = "a"\n[kernel]\nclass = "MmOp"\nmatmul = ["mm"]\n'
    )
    (op / "op.toml").write_text(toml.format("mix_aic_1_2"))
    mixed = catalogue.load_op(op / "op.toml")
    assert "5 /* KERNEL_TYPE_MIX_AIC_1_2 */" in codegen.sim_launcher(mixed)
    (op / "op.toml").write_text(toml.format("cube"))
    with pytest.raises(ConfigError, match="kernel_type 'cube' must be one of aiv_only"):
        catalogue.load_op(op / "op.toml")


_SHAPE_OP = (
    '[op]\nname = "shape_op"\nop_type = "ShapeOp"\ncompute_units = ["ascend910b"]\n'
    '[[inputs]]\nname = "a"\ndtypes = ["float32"]\n'
    '[[inputs]]\nname = "b"\ndtype = "a"\noptional = true\n'
    '[[outputs]]\nname = "c"\ndtype = "a"\n{like}'
    '[kernel]\nclass = "ShapeOp"\n'
)


def _shape_op(tmp_path: Path, like: str, host: bool) -> Path:
    op = tmp_path / "kernels" / "ops" / "shape_op"
    (op / "op_kernel").mkdir(parents=True, exist_ok=True)
    (op / "op_host").mkdir(exist_ok=True)
    (op / "op_kernel" / "shape_op.cpp").write_text('#include "kernel_operator.h"\n')
    (op / "op_host" / "shape_op_tiling.h").write_text("// tiling\n")
    (op / "op_host" / "shape_op.cpp").unlink(missing_ok=True)
    if host:
        (op / "op_host" / "shape_op.cpp").write_text("// InferShape\n")
    (op / "op.toml").write_text(_SHAPE_OP.format(like=like))
    return tmp_path / "kernels"


def test_shape_like_generates_the_whole_op_host_source(specs) -> None:
    """An output declared `shape_like` needs no hand-written InferShape: the generated source
    copies the named input's shape (invert_permute: inv = permute's shape), and the operators
    whose outputs are all inputs updated in place get an InferShape with nothing to do."""
    spec = specs["invert_permute"]
    assert spec.infers_shape and not spec.host_file.exists()
    text = codegen.op_host_source(spec)
    assert "const gert::Shape* permute = context->GetInputShape(0);" in text
    assert "gert::Shape* inv = context->GetOutputShape(0);" in text
    assert "*inv = *permute;" in text
    assert text.rstrip().endswith('#include "invert_permute_op_def.inc"')
    in_place = codegen.op_host_source(specs["bounds_check_indices"])
    assert "GetOutputShape" not in in_place and "(void)context;" in in_place
    with pytest.raises(ValueError, match="shape_like"):
        codegen.op_host_source(specs["permute2d_sparse_data"])
    generated = {n for n, s in specs.items() if s.infers_shape}
    assert generated == {
        "batch_index_select_dim0_backward",
        "bounds_check_indices",
        "concat_slab",
        "float_to_hfp8",
        "gather_for_rank1",
        "hfp8_to_float",
        "index_select_for_rank1_backward",
        "invert_permute",
        "permute_multi_embedding",
        "split_embedding_backward",
    }
    assert all(s.host_file.is_file() for n, s in specs.items() if n not in generated)


def test_tiling_func_is_generated_for_every_operator(specs) -> None:
    for name, spec in specs.items():
        text = codegen.opdef_inc(spec)
        assert f"return mxrec_op::Tiling(context, &mxrec::{spec.op_type}TilingOf);" in text, name
        if spec.host_file.is_file():
            hand = spec.host_file.read_text(encoding="utf-8")
            assert "TilingFunc" not in hand.split("\n", 2)[2], name
            assert hand.rstrip().endswith(f'#include "{name}_op_def.inc"'), name


def test_shape_like_errors_name_the_problem(tmp_path: Path) -> None:
    kernels = _shape_op(tmp_path, 'shape_like = "b"\n', host=False)
    with pytest.raises(ConfigError, match="shape_like 'b' must name a required input \\(a\\)"):
        catalogue.load_catalogue(kernels)
    kernels = _shape_op(tmp_path, "", host=False)
    with pytest.raises(ConfigError, match="InferShape\\) is missing; write it, or give shape_like"):
        catalogue.load_catalogue(kernels)
    kernels = _shape_op(tmp_path, 'shape_like = "a"\n', host=True)
    with pytest.raises(ConfigError, match="remove the hand-written"):
        catalogue.load_catalogue(kernels)
    kernels = _shape_op(tmp_path, 'shape_like = "a"\n', host=False)
    assert catalogue.load_catalogue(kernels)["shape_op"].infers_shape
    bad_input = _SHAPE_OP.format(like="").replace(
        '[[inputs]]\nname = "a"\n', '[[inputs]]\nname = "a"\nshape_like = "a"\n'
    )
    (kernels / "ops" / "shape_op" / "op.toml").write_text(bad_input)
    with pytest.raises(ConfigError, match="shape_like is for outputs"):
        catalogue.load_catalogue(kernels)


def test_tilings_read_their_arguments_by_op_toml_name(specs) -> None:
    """Each tiling takes the generated <OpType>Args view (tensors and attributes named as in
    op.toml), never indexes OpArgs by position itself, and the generated wrapper feeds it."""
    spec = specs["split_embedding_backward"]
    text = codegen.op_args_header(spec)
    assert "const TensorDesc& momentum1Offsets;  // input momentum1_offsets" in text
    assert "momentum1Offsets(a.inputs[3])" in text
    assert "const double beta2;  // attribute beta2" in text and "beta2(a.attrs[10].f)" in text
    assert "const int64_t iter;  // attribute iter" in text and "iter(a.attrs[11].i)" in text
    assert "return SplitEmbeddingBackwardTiling(SplitEmbeddingBackwardArgs(a), p);" in text
    assert spec.tiling_function == "mxrec::SplitEmbeddingBackwardTilingOf"
    outputs = codegen.op_args_header(specs["permute2d_sparse_data"])
    assert "permutedWeights(a.outputs[2])" in outputs
    for name, op in specs.items():
        tiling = op.tiling_header.read_text(encoding="utf-8")
        assert f'#include "{name}_op_args.h"' in tiling, name
        assert f"Tiling(const {op.op_type}Args& a" in tiling.replace("(\n    ", "("), name
        for positional in ("a.inputs[", "a.outputs[", "a.attrs["):
            assert positional not in tiling, (name, positional)


def test_soc_tables_agree() -> None:
    """The sim's C++ SoC table and the project generator's agree."""
    text = (KERNELS / "sim" / "include" / "recsdk_sim" / "runtime.h").read_text()
    # A row is a brace initializer, or atlas_a2(name, unit, ...) for the A2/A3 training parts.
    cpp = dict(re.findall(r'(?:\{|atlas_a2\()"(Ascend[0-9A-Z_]+)", "([a-z0-9_]+)"', text))
    assert cpp == cannproject.SOCS


# ---- generated sources ------------------------------------------------------------------------


def test_opdef_lists_every_kernel_binary(specs) -> None:
    spec = specs["jagged_to_padded_dense"]
    text = codegen.opdef_inc(spec)
    values_types = re.search(
        r'Input\("values"\)\s*\.ParamType\(REQUIRED\)\s*\.DataType\(\{([^}]*)\}', text
    )
    assert values_types is not None
    assert values_types.group(1).count("ge::DT_") == len(spec.variants()) == 10
    assert 'this->Attr("max_length").AttrType(REQUIRED).Int();' in text
    assert 'this->Attr("padding_value").AttrType(OPTIONAL).Float(0.0);' in text
    assert 'AddConfig("ascend910b")' in text and "OP_ADD(JaggedToPaddedDense);" in text
    assert "SetOutputDataType(0, context->GetInputDataType(0))" in text


def test_aclnn_signature_order(specs) -> None:
    text = codegen.aclnn_declaration(specs["permute2d_sparse_data"])
    params = re.search(r"GetWorkspaceSize\(\s*(.*?)\);", text, re.S).group(1)
    names = [p.split()[-1].strip("*") for p in params.split(",")]
    assert names == [
        "permute",
        "lengths",
        "values",
        "weights",
        "permutedLengthsSum",
        "permutedLengthsOut",
        "permutedValuesOut",
        "permutedWeightsOut",
        "workspaceSize",
        "executor",
    ]


def test_msopgen_json_matches_the_variants(specs) -> None:
    spec = specs["dense_to_jagged"]
    (doc,) = json.loads(codegen.msopgen_json(spec))
    assert doc["op"] == "DenseToJagged"
    assert [d["name"] for d in doc["input_desc"]] == ["dense", "offsets"]
    assert len(doc["input_desc"][0]["type"]) == len(spec.variants())
    assert doc["attr"] == [
        {"name": "total_l", "param_type": "optional", "type": "int", "default_value": -1}
    ]


def test_sim_header_is_typed_like_aclnn(specs) -> None:
    text = codegen.sim_header(specs["jagged_to_padded_dense"])
    signature = (
        "inline int32_t JaggedToPaddedDense(const RecsdkSimTensor& values, "
        "const RecsdkSimTensor& offsets, int64_t max_length, double padding_value, "
        "int64_t padding_value_int, const RecsdkSimTensor& out, const RecsdkSimOptions* options, "
        "RecsdkSimReport* report)"
    )
    assert signature in text


# ---- the stage --------------------------------------------------------------------------------


@pytest.fixture
def ops_project(project: Path) -> Path:
    """The synthetic project with a copy of this repository's kernels."""
    shutil.copytree(
        KERNELS, project / "kernels", ignore=shutil.ignore_patterns("__pycache__", "bench")
    )
    return project


def _context(
    project: Path, build: Path, out: io.StringIO | None = None, **extra: object
) -> Context:
    from recsdk_build.config import load_project

    ui = UI(console=Console(file=out or io.StringIO(), width=400))
    return Context(
        load_project(project),
        BuildPaths(build),
        Manifest.load(build),
        ui,
        compute_options(**extra),  # type: ignore[arg-type]
    )


def test_sim_build_is_incremental_and_recorded(ops_project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    only = {"only": ["asynchronous_complete_cumsum"], "target": "sim", "jobs": 1}
    [report] = run_stages(_context(ops_project, build, **only), [OpsStage()], set())
    assert report.status == "ran"
    manifest = json.loads((build / "manifest.json").read_text())
    record = manifest["stages"]["ops"]
    [lib] = [a for a in record["artifacts"] if a["kind"] == "operator-library"]
    assert lib["name"] == "mxrec_opp_asynchronous_complete_cumsum_sim.so" and lib["target"] == "sim"
    assert (build / lib["path"]).is_file() and len(lib["sha256"]) == 64
    [entry] = record["outputs"]["operators"]
    assert entry["op"] == "asynchronous_complete_cumsum" and "Ascend910B1" in entry["soc"]
    assert record["provenance"]["rebuilt"] == ["asynchronous_complete_cumsum"]

    [again] = run_stages(_context(ops_project, build, **only), [OpsStage()], set())
    assert again.status == "cached"

    # A changed kernel rebuilds that operator; --force alone reuses the unchanged library.
    kernel = ops_project / "kernels" / "ops" / "asynchronous_complete_cumsum" / "op_kernel"
    source = kernel / "asynchronous_complete_cumsum.cpp"
    source.write_text(source.read_text() + "\n// edited\n")
    [edited] = run_stages(_context(ops_project, build, **only), [OpsStage()], set())
    assert edited.status == "ran"
    record = Manifest.load(build).stages["ops"]
    assert record.provenance["rebuilt"] == ["asynchronous_complete_cumsum"]
    [forced] = run_stages(_context(ops_project, build, **only), [OpsStage()], {"ops"})
    assert forced.status == "ran"
    assert Manifest.load(build).stages["ops"].provenance["rebuilt"] == []


def test_unknown_operator_is_a_usage_error(ops_project: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such operator or group"):
        run_stages(
            _context(ops_project, tmp_path / "b", only=["hstu_dense"], target="sim"),
            [OpsStage()],
            set(),
        )


def test_cann_dry_run_writes_complete_projects(ops_project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    out = io.StringIO()
    ctx = _context(ops_project, build, out, target="cann", dry_run=True)
    [report] = run_stages(ctx, [OpsStage()], set())
    assert report.status == "ran"
    printed = out.getvalue()
    root = build / "ops" / "cann" / "Ascend910B1"
    for name in OPS:
        project = root / name / "project"
        presets = json.loads((project / "CMakePresets.json").read_text())
        cache = presets["configurePresets"][0]["cacheVariables"]
        assert cache["ASCEND_COMPUTE_UNIT"] == "ascend910b"
        assert cache["vendor_name"] == name and cache["MXREC_PACKAGE_NAME"] == f"mxrec_opp_{name}"
        assert cache["ENABLE_SOURCE_PACKAGE"] == "False"
        for rel in (
            "CMakeLists.txt",
            "op_host/CMakeLists.txt",
            "op_kernel/CMakeLists.txt",
            f"op_host/{name}.cpp",
            f"op_host/{name}_tiling.h",
            f"op_host/{name}_op_def.inc",
            f"op_host/{name}_op_spec.h",
            "op_host/cann_tiling_glue.h",
            f"op_kernel/{name}/{name}.cpp",
            f"op_kernel/{name}/{name}_tiling_data.h",
            f"op_kernel/{name}/{name}_kernel_entry.h",
            f"op_kernel/{name}/mxrec_common.h",
            f"{name}.json",
            f"include/aclnn_{name}_decl.h",
        ):
            assert (project / rel).is_file(), rel
        # Every header the kernel includes ships next to it (CANN copies the kernel directory),
        # except the toolkit's own (the AscendC API and its Matmul library).
        kernel = (project / "op_kernel" / name / f"{name}.cpp").read_text()
        for header in re.findall(r'#include "([^"]+)"', kernel):
            assert header in TOOLKIT_HEADERS or (project / "op_kernel" / name / header).is_file()
        commands = json.loads((project / "commands.json").read_text())
        assert [c["argv"][:2] for c in commands] == [
            ["cmake", "--preset=default"],
            ["cmake", "--build"],
            ["cmake", "--build"],
        ]
        assert f"cd {project} && cmake --preset=default" in printed
        assert f"mxrec_opp_{name}.run --quiet --install-path={root / 'opp'}" in printed
    assert "load_priority=" in printed
    # Nothing generated keeps a placeholder a later step would have to sed.
    for path in root.rglob("*"):
        if path.is_file():
            assert "__ASCEND" not in path.read_text(errors="replace")


@pytest.mark.skipif(find_cann() is not None, reason="a CANN toolkit is installed")
def test_cann_without_toolkit_is_a_clear_error(ops_project: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolMissingError, match="CANN toolkit"):
        run_stages(_context(ops_project, tmp_path / "b", target="cann"), [OpsStage()], set())


def test_staged_opp_check(specs, tmp_path: Path) -> None:
    chosen = [specs["gather_for_rank1"], specs["dense_to_jagged"]]
    opp = tmp_path / "opp"
    for spec in chosen:
        vendor = opp / "vendors" / cannproject.vendor_name(spec)
        for rel in cannproject.expected_files(spec):
            (vendor / rel).parent.mkdir(parents=True, exist_ok=True)
            (vendor / rel).write_text("x")
        kernel = vendor / "op_impl" / "ai_core" / "tbe" / "kernel" / "ascend910b" / spec.name
        kernel.mkdir(parents=True)
        (kernel / "k.o").write_bytes(b"\0")
    problems = cannproject.check_installed(opp, chosen)
    assert problems == ["vendors/config.ini load_priority lacks gather_for_rank1, dense_to_jagged"]
    cannproject.write_config_ini(opp, chosen)
    assert (
        opp / "vendors" / "config.ini"
    ).read_text() == "load_priority=gather_for_rank1,dense_to_jagged\n"
    assert cannproject.check_installed(opp, chosen) == []
    (opp / "vendors" / "dense_to_jagged" / "op_api" / "lib" / "libcust_opapi.so").unlink()
    assert cannproject.check_installed(opp, chosen) == [
        "dense_to_jagged: vendors/dense_to_jagged/op_api/lib/libcust_opapi.so is missing"
    ]


FAKE_CANN = Path(__file__).resolve().parent / "fake_cann" / "include"


@pytest.mark.parametrize("name", OPS)
def test_op_host_compiles_against_the_cann_api(specs, tmp_path: Path, name: str) -> None:
    """op_host, the generated OpDef/op spec and the tiling glue, syntax-checked against a
    stand-in of the CANN host headers (the real toolkit is not available here)."""
    import subprocess

    from recsdk_build.ops import simbuild

    project = cannproject.generate(specs[name], KERNELS, tmp_path / name, "Ascend910B1", None)
    compiler = simbuild.find_host_compiler()
    cmd = [
        compiler.path,
        "-std=c++17",
        "-fsyntax-only",
        "-Wall",
        "-Werror",
        "-I",
        str(FAKE_CANN),
        "-I",
        str(project.root / "op_host"),
        "-I",
        str(project.root / "op_kernel" / name),
        str(project.root / "op_host" / f"{name}.cpp"),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_kernel_entry_is_generated_from_op_toml(specs) -> None:
    """The extern "C" entry: op.toml's tensors in order, the workspace and the tiling; the kernel
    type, the tiling struct, [kernel] class, and for a mixed kernel its Matmul members."""
    text = codegen.kernel_entry(specs["invert_permute"])
    assert (
        'extern "C" __global__ __aicore__ void invert_permute(\n'
        "    GM_ADDR permute, GM_ADDR inv, GM_ADDR workspace, GM_ADDR tiling) {\n" in text
    )
    body = [line.strip() for line in text.split(") {", 1)[1].splitlines() if line.strip()]
    assert body == [
        "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);",
        "REGISTER_TILING_DEFAULT(InvertPermuteTilingData);",
        "GET_TILING_DATA(td, tiling);",
        "TPipe pipe;",
        "InvertPermute<DTYPE_PERMUTE> op;",
        "op.Init(permute, inv, workspace, td, &pipe);",
        "op.Process();",
        "}",
    ]
    assert "#ifndef" not in text  # included once per dtype variant by the sim launcher
    hstu = codegen.kernel_entry(specs["hstu_dense_forward"])
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);" in hstu
    assert (
        "REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), op.qk, &td.qk, op.sv, &td.sv, op.qkL1, "
        "&td.qkL1,\n                      op.svL1, &td.svL1);" in hstu
    )
    # Every kernel source ends by including its entry, and defines no entry of its own.
    for name, spec in specs.items():
        source = spec.kernel_file.read_text(encoding="utf-8")
        assert source.rstrip().endswith(f'#include "{name}_kernel_entry.h"'), name
        assert 'extern "C"' not in source, name
        assert f'"{name}_kernel_entry.h"' not in codegen.kernel_includes(spec), name


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        ("", r"\[kernel\] class is required"),
        ('[kernel]\nclass = "A"\nnote = 1\n', r"unknown keys \['note'\]"),
        ('[kernel]\nclass = "1x"\n', "must be a C\\+\\+ class name"),
        ('[kernel]\nclass = "A"\nmatmul = ["mm"]\n', "only for mix_\\* kernels, not aiv_only"),
    ],
)
def test_kernel_table_errors_name_the_problem(tmp_path: Path, kernel: str, message: str) -> None:
    op = tmp_path / "ops" / "k_op"
    op.mkdir(parents=True)
    (op / "op.toml").write_text(
        '[op]\nname = "k_op"\nop_type = "KOp"\ncompute_units = ["ascend910b"]\n'
        '[[inputs]]\nname = "a"\ndtypes = ["float32"]\n' + kernel
    )
    with pytest.raises(ConfigError, match=message):
        catalogue.load_op(op / "op.toml")
