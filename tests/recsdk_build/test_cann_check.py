"""Our kernels checked by CANN's own rules (recsdk_build/ops/cann_check.py): every kernel and
dtype variant type-checks against Huawei's real AscendC headers (the pinned asc-devkit export
beside the project), CANN's tiling-key rules hold, and the checker rejects what CANN rejects.

The real-header tests need ``../shared/ascendc/asc-devkit`` (shared/ascendc/README.md) and are
skipped, with that reason, where it is absent."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recsdk_build.errors import UsageError
from recsdk_build.ops import cann_check, catalogue
from recsdk_build.options import compute_options
from tests.conftest import invoke

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
EXPORT = (REPO / cann_check.DEFAULT_SHARED_EXPORT).resolve()
needs_headers = pytest.mark.skipif(
    not (EXPORT / "include" / "kernel_operator.h").is_file(),
    reason=f"the pinned AscendC header export is absent ({EXPORT}); see shared/ascendc/README.md",
)


@pytest.fixture(scope="module")
def tree() -> cann_check.HeaderTree:
    return cann_check.headers_from(EXPORT, "test")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, tree: cann_check.HeaderTree) -> Path:
    """A work directory whose precompiled API every real-header test shares."""
    where = tmp_path_factory.mktemp("cann-check")
    cann_check.precompile_api(tree, KERNELS, where)
    return where


# ---- every kernel of the catalogue ------------------------------------------------------------


@needs_headers
def test_every_kernel_and_variant_type_checks_against_the_real_headers(
    tree: cann_check.HeaderTree, work: Path
) -> None:
    specs = list(catalogue.load_catalogue(KERNELS).values())
    started = time.monotonic()
    report = cann_check.check_catalogue(specs, KERNELS, tree, jobs=2, work=work)
    assert report.typecheck == "checked" and report.reason is None
    assert report.variants == sum(len(s.variants()) for s in specs)
    print(
        f"{len(specs)} kernels, {report.variants} variants type-checked in "
        f"{time.monotonic() - started:.1f}s (API precompiled beforehand)"
    )


def test_every_kernel_follows_the_tiling_key_rules() -> None:
    for spec in catalogue.load_catalogue(KERNELS).values():
        assert cann_check.check_tiling_keys(spec, KERNELS) == [], spec.name


# ---- a probe kernel, broken in one way at a time -----------------------------------------------

OP_TOML = """
[op]
name = "probe"
op_type = "Probe"
groups = ["test"]
compute_units = ["ascend910b"]

[[inputs]]
name = "x"
dtypes = ["float32", "int32"]
ranks = [1, 1]

[[outputs]]
name = "y"
shape_like = "x"
dtype = "x"

[kernel]
class = "Probe<DTYPE_X>"
"""

TILING_DATA = """#ifndef PROBE_TILING_DATA_H
#define PROBE_TILING_DATA_H
#include <cstdint>
struct ProbeTilingData {
    int64_t len;
};
KEYS
#endif
"""

HOST = """#ifndef PROBE_TILING_H
#define PROBE_TILING_H
#include "probe_tiling_data.h"
inline void ProbeTiling(uint64_t* tiling_key) {
    HOST_KEY
}
#endif
"""

KERNEL = """#include "kernel_operator.h"
#include "probe_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class Probe {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR /*workspace*/,
                                const ProbeTilingData& td, TPipe* pipe) {
        xGm_.SetGlobalBuffer((__gm__ T*)x, td.len);
        yGm_.SetGlobalBuffer((__gm__ T*)y, td.len);
        pipe->InitBuffer(buf_, 256);
    }

    __aicore__ inline void Process() {
        LocalTensor<T> t = buf_.Get<T>();
        BODY
    }

private:
    GlobalTensor<T> xGm_;
    GlobalTensor<T> yGm_;
    TBuf<TPosition::VECCALC> buf_;
};

}  // namespace

#include "probe_kernel_entry.h"
"""

GOOD_BODY = """DataCopy(t, xGm_, 8);
        const int32_t id = static_cast<int32_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE2_MTE3));
        SetFlag<HardEvent::MTE2_MTE3>(id);
        WaitFlag<HardEvent::MTE2_MTE3>(id);
        if (TILING_KEY_IS(PROBE_KEY_A)) {
            DataCopy(yGm_, t, 8);
        } else if (TILING_KEY_IS(2)) {
            Duplicate(t, static_cast<T>(0), 8);
        }"""
GOOD_KEYS = "#define PROBE_KEY_A 1"
GOOD_HOST = "*tiling_key = PROBE_KEY_A;"


def probe(
    tmp_path: Path, body: str = GOOD_BODY, keys: str = GOOD_KEYS, host: str = GOOD_HOST
) -> tuple[catalogue.OpSpec, Path]:
    kernels = tmp_path / "kernels"
    op = kernels / "ops" / "probe"
    (op / "op_kernel").mkdir(parents=True)
    (op / "op_host").mkdir()
    (kernels / "common").mkdir()
    (kernels / cann_check.STUBS_DIR).symlink_to(KERNELS / cann_check.STUBS_DIR)
    (op / "op.toml").write_text(OP_TOML)
    (op / "op_kernel" / "probe.cpp").write_text(KERNEL.replace("BODY", body))
    (op / "op_kernel" / "probe_tiling_data.h").write_text(TILING_DATA.replace("KEYS", keys))
    (op / "op_host" / "probe_tiling.h").write_text(HOST.replace("HOST_KEY", host))
    return catalogue.load_op(op / "op.toml"), kernels


@needs_headers
def test_a_correct_probe_passes(tmp_path: Path, tree: cann_check.HeaderTree, work: Path) -> None:
    spec, kernels = probe(tmp_path)
    assert cann_check.check_tiling_keys(spec, kernels) == []
    result = cann_check.typecheck_op(spec, kernels, tree, tmp_path / "w", work / "common")
    assert result.variants == 2


@needs_headers
@pytest.mark.parametrize(
    ("body", "named"),
    [
        # CANN declares GetTPipePtr in the global namespace (basic_api/kernel_common.h).
        (
            "AscendC::GetTPipePtr()->FetchEventID(HardEvent::MTE2_MTE3);",
            "'GetTPipePtr' is not a member of 'AscendC'",
        ),
        # An API CANN does not declare at all.
        ("DuplicateAll(t, static_cast<T>(0));", "'DuplicateAll' was not declared"),
        # One it declares otherwise: DataCopy takes no DataCopyExtParams (DataCopyPad does).
        (
            "DataCopy(t, xGm_, DataCopyExtParams{1, 32, 0, 0, 0});",
            "no matching function for call to 'DataCopy",
        ),
    ],
)
def test_the_type_check_rejects_what_cann_does_not_declare(
    tmp_path: Path, tree: cann_check.HeaderTree, work: Path, body: str, named: str
) -> None:
    spec, kernels = probe(tmp_path, body=body)
    with pytest.raises(cann_check.CannCheckError) as err:
        cann_check.typecheck_op(spec, kernels, tree, tmp_path / "w", work / "common")
    message = err.value.message.replace("‘", "'").replace("’", "'")
    assert message.startswith("probe (x=float32) does not type-check against CANN's AscendC")
    assert named in message and "probe.cpp" in message


@pytest.mark.parametrize(
    ("body", "keys", "host", "rule", "detail"),
    [
        (
            GOOD_BODY,
            "constexpr uint64_t PROBE_KEY_A = 1;",
            GOOD_HOST,
            cann_check.RULE_LITERAL,
            "TILING_KEY_IS(PROBE_KEY_A): `PROBE_KEY_A` is not a numeric literal",
        ),
        (
            "const bool a = TILING_KEY_IS(PROBE_KEY_A);\n        if (a) { DataCopy(yGm_, t, 8); }",
            GOOD_KEYS,
            GOOD_HOST,
            cann_check.RULE_CONDITION,
            "TILING_KEY_IS(PROBE_KEY_A): it is assigned to a variable",
        ),
        (
            "Touch(TILING_KEY_IS(1));",
            GOOD_KEYS,
            "*tiling_key = 1;",
            cann_check.RULE_CONDITION,
            "TILING_KEY_IS(1): it is an argument of `Touch(...)`",
        ),
        (
            GOOD_BODY,
            GOOD_KEYS,
            "*tiling_key = 3;",
            cann_check.RULE_COVERED,
            "the host sets tiling key 3 (3) but probe.cpp has TILING_KEY_IS only for [1, 2]",
        ),
    ],
)
def test_the_tiling_key_rules_name_file_line_and_rule(
    tmp_path: Path, body: str, keys: str, host: str, rule: str, detail: str
) -> None:
    spec, kernels = probe(tmp_path, body=body, keys=keys, host=host)
    problems = cann_check.check_tiling_keys(spec, kernels)
    assert [p.rule for p in problems] == [rule]
    [problem] = problems
    assert detail in problem.detail
    source = problem.file.read_text().splitlines()[problem.line - 1]
    assert ("TILING_KEY_IS" in source) or ("tiling_key" in source)
    with pytest.raises(cann_check.CannCheckError, match="probe breaks CANN's tiling-key rules"):
        cann_check.check_catalogue([spec], kernels, cann_check.NoHeaders("test"))


def test_the_old_constexpr_key_assignment_is_caught(tmp_path: Path) -> None:
    """The form five of our kernels had (issue 26): a constexpr key assigned to a member."""
    body = "const bool resident = TILING_KEY_IS(PROBE_KEY_A);"
    spec, kernels = probe(tmp_path, body=body, keys="constexpr uint64_t PROBE_KEY_A = 1;")
    rules = sorted(p.rule for p in cann_check.check_tiling_keys(spec, kernels))
    assert rules == sorted([cann_check.RULE_LITERAL, cann_check.RULE_CONDITION])


# ---- where the headers come from, and the "not run" path ---------------------------------------


def test_no_headers_is_reported_as_not_run_never_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    found = cann_check.find_headers(None, tmp_path / "project")
    assert isinstance(found, cann_check.NoHeaders)
    assert "$ASCEND_HOME_PATH (unset)" in found.reason
    assert str(tmp_path / "shared" / "ascendc" / "asc-devkit") in found.reason
    spec, kernels = probe(tmp_path)
    report = cann_check.check_catalogue([spec], kernels, found)
    record = report.record()
    assert record["typecheck"] == "not run" and record["reason"] == found.reason
    assert record["tiling_keys"] == "checked" and "variants" not in record
    assert "NOT run" in report.summary() and "type-check against" not in report.summary()


def test_headers_option_is_resolved_once_and_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="holds no AscendC headers"):
        compute_options(target="sim", ascendc_headers=str(tmp_path))
    with pytest.raises(UsageError, match="is not a directory"):
        compute_options(target="sim", ascendc_headers=str(tmp_path / "nowhere"))


@needs_headers
def test_headers_default_to_the_pinned_export_beside_the_project(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    options = compute_options(target="sim", project_root=REPO)
    headers = options.ops.headers
    assert isinstance(headers, cann_check.HeaderTree) and headers.root == EXPORT
    assert headers.cpu_library is None  # the dev kit has no CPU library: our stand-ins
    explicit = compute_options(target="sim", ascendc_headers=str(EXPORT)).ops.headers
    assert isinstance(explicit, cann_check.HeaderTree) and explicit.origin == "--ascendc-headers"


def test_a_toolkit_layout_is_found_under_ascend_home_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "cann"
    (home / "asc" / "include").mkdir(parents=True)
    (home / "asc" / "impl").mkdir()
    (home / "asc" / "include" / "kernel_operator.h").write_text("")
    lib = home / "tools" / "tikicpulib" / "lib" / "include"
    lib.mkdir(parents=True)
    (lib / "stub_def.h").write_text("")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    found = cann_check.find_headers(None, None)
    assert isinstance(found, cann_check.HeaderTree)
    assert found.root == (home / "asc").resolve() and found.cpu_library == lib
    assert found.include_dirs(KERNELS / cann_check.STUBS_DIR)[-1] == lib


def test_the_cli_offers_the_option_and_rejects_a_bad_tree(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    for command in ("ops", "all"):
        code, out = invoke(cli, project, command, "--help")
        assert code == 0 and "--ascendc-headers" in out
    code, out = invoke(
        cli,
        project,
        "--build-dir",
        str(tmp_path / "b"),
        "ops",
        "--target",
        "sim",
        "--ascendc-headers",
        str(tmp_path),
    )
    assert code == 2 and "holds no AscendC headers" in out and "Traceback" not in out


def test_the_stage_fingerprint_follows_the_headers(tmp_path: Path) -> None:
    none = cann_check.inputs(KERNELS, cann_check.NoHeaders("x"))
    assert none["headers"] is None
    home = tmp_path / "kit"
    (home / "include").mkdir(parents=True)
    (home / "impl").mkdir()
    (home / "include" / "kernel_operator.h").write_text("// v1\n")
    tree = cann_check.headers_from(home, "test")
    first = cann_check.inputs(KERNELS, tree)
    (home / "include" / "kernel_operator.h").write_text("// v2, longer\n")
    second = cann_check.inputs(KERNELS, tree)
    assert first["headers_digest"] != second["headers_digest"]
    assert first["stubs"] == second["stubs"] and first["checker"] == second["checker"]
    shutil.rmtree(home)


def test_the_stage_records_the_check(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cann dry run (no toolkit needed) checks the tiling keys, records the type-check as
    not run with the reason, and still writes the projects; a broken key stops the stage."""
    from tests.stagehelp import run

    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    shutil.copytree(
        KERNELS / "ops" / "invert_permute", project / "kernels" / "ops" / "invert_permute"
    )
    for sub in ("common", "cmake", cann_check.STUBS_DIR):
        shutil.copytree(KERNELS / sub, project / "kernels" / sub)
    build = tmp_path / "build"
    options = {"target": "cann", "dry_run": True, "project_root": project}
    [report] = run(project, build, "ops", **options)
    assert report.status == "ran"
    record = json.loads((build / "manifest.json").read_text())["stages"]["ops"]["provenance"]
    assert record["cann_check"] == {
        "operators": 1,
        "tiling_keys": "checked",
        "typecheck": "not run",
        "reason": "--dry-run (the type-check runs on a real build)",
    }

    data = project / "kernels" / "ops" / "invert_permute" / "op_kernel" / "invert_permute.cpp"
    data.write_text(
        data.read_text().replace("Process() {", "Process() {\n        Touch(TILING_KEY_IS(1));", 1)
    )
    with pytest.raises(
        cann_check.CannCheckError, match=r"invert_permute\.cpp:[0-9]+: TILING_KEY_IS only"
    ):
        run(project, build, "ops", **options)
