"""The fbgemm operator coverage table: scanning, classification checks, the docs section.

The synthetic tree pins the rules (which references count, which files and modules are
followed, what is a problem); the real tests run on the pinned, patched torchrec in the build
directory when it is there.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recsdk_build import coverage as cov
from tests.conftest import invoke

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def _tree(root: Path) -> tuple[Path, Path]:
    """A torchrec tree and an fbgemm_gpu package with known references."""
    src, fbgemm = root / "src", root / "site" / "fbgemm_gpu"
    _write(
        src / "torchrec" / "a.py",
        '''
        """Mentions torch.ops.fbgemm.in_docstring, which is no call."""
        import torch
        from fbgemm_gpu.mod_a import Thing  # followed
        from fbgemm_gpu import pkg

        def f(x):
            # torch.ops.fbgemm.in_comment is no call either
            y = torch.ops.fbgemm.op_kernel(x)
            return torch.ops.fbgemm.op_missing(y), getattr(torch.ops.fbgemm, "op_getattr")
        ''',
    )
    _write(
        src / "torchrec" / "sub" / "b.py",
        """
        import torch

        def g(x):
            return torch.ops.fbgemm.op_kernel.default(x)
        """,
    )
    _write(src / "torchrec" / "tests" / "test_c.py", "torch.ops.fbgemm.only_in_tests(1)\n")
    _write(src / "torchrec" / "test_d.py", "torch.ops.fbgemm.only_in_tests(1)\n")
    _write(
        src / "torchrec" / "distributed" / "test_utils" / "h.py",
        "torch.ops.fbgemm.only_in_tests(1)\n",
    )
    _write(fbgemm / "__init__.py", "torch.ops.fbgemm.registration_only(1)\n")
    _write(
        fbgemm / "mod_a.py",
        """
        import torch
        from .mod_b import helper

        class Thing:
            def forward(self, x):
                return torch.ops.fbgemm.op_via_fbgemm(x)
        """,
    )
    _write(
        fbgemm / "mod_b.py", "import torch\n\n\ndef helper(x):\n    torch.ops.fbgemm.op_deep(x)\n"
    )
    _write(fbgemm / "pkg" / "__init__.py", "from fbgemm_gpu.pkg import inner\n")
    _write(fbgemm / "pkg" / "inner.py", "torch.ops.fbgemm.op_in_package(1)\n")
    _write(fbgemm / "unused.py", "torch.ops.fbgemm.never_imported(1)\n")
    return src, fbgemm


def _project(root: Path, data: str) -> Path:
    """Adapter sources, operator directories and a classification file."""
    _write(
        root / "torch_plugin" / "csrc" / "ops.cpp",
        """
        // m.impl("commented_out", ...) inside no block
        TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
            m.impl("op_kernel", &op_kernel);  // "also_in_comment" must not count
            for (const char* name : {"op_looped_a", "op_looped_b", "op_in_package"}) {
                m.impl(name, &boxed);
            }
        }
        TORCH_LIBRARY_IMPL(fbgemm, CPU, m) {
            m.impl("op_cpu_only", &x);
        }
        TORCH_LIBRARY_IMPL(fbgemm, AutogradPrivateUse1, m) {
            m.impl("op_autograd", &y);
        }
        """,
    )
    _write(root / "kernels" / "ops" / "k_one" / "op.toml", "")
    _write(root / "data" / "fbgemm_coverage.toml", data)
    return root / "data" / "fbgemm_coverage.toml"


GOOD = """
[ops.op_kernel]
status = "npu-kernel"
training = true
kernel = "k_one"

[ops.op_missing]
status = "missing"
training = true

[ops.op_getattr]
status = "refused"
training = false
reason = "UVM"

[ops.op_via_fbgemm]
status = "npu-kernel"
training = true
kernel = ["k_one"]
via = ["op_looped_a", "op_autograd"]

[ops.op_deep]
status = "host-only"
training = false
reason = "no tensors"

[ops.op_in_package]
status = "aten-composition"
training = false
reason = "fbgemm's CPU kernel is an index_select"

[ops.classified_but_not_called]
status = "missing"
training = false
"""


def test_scan_counts_references_outside_tests_and_follows_fbgemm_imports(
    tmp_path: Path,
) -> None:
    src, fbgemm = _tree(tmp_path)
    found, modules = cov.scan(src, fbgemm)
    assert modules == [
        "fbgemm_gpu.mod_a",
        "fbgemm_gpu.mod_b",
        "fbgemm_gpu.pkg",
        "fbgemm_gpu.pkg.inner",
    ]
    assert {op: [str(s) for s in sites] for op, sites in found.items()} == {
        "op_kernel": ["torchrec/a.py:8", "torchrec/sub/b.py:4"],
        "op_missing": ["torchrec/a.py:9"],
        "op_getattr": ["torchrec/a.py:9"],
        "op_via_fbgemm": ["fbgemm_gpu/mod_a.py:6"],
        "op_deep": ["fbgemm_gpu/mod_b.py:5"],
        "op_in_package": ["fbgemm_gpu/pkg/inner.py:1"],
    }


def test_registrations_parse_device_blocks_only(tmp_path: Path) -> None:
    _project(tmp_path, GOOD)
    assert cov.adapter_registrations(tmp_path / "torch_plugin" / "csrc") == {
        "op_kernel",
        "op_looped_a",
        "op_looped_b",
        "op_in_package",
        "op_autograd",
    }


def test_a_consistent_classification_has_no_problems_and_renders(tmp_path: Path) -> None:
    src, fbgemm = _tree(tmp_path)
    data = _project(tmp_path, GOOD)
    report = cov.build_report(tmp_path, src, fbgemm, data)
    assert report.problems == []
    assert [r.op for r in report.rows] == [
        "op_deep",
        "op_getattr",
        "op_in_package",
        "op_kernel",
        "op_missing",
        "op_via_fbgemm",
    ]
    assert (report.count("npu-kernel"), report.count("missing"), report.count("refused")) == (
        2,
        1,
        1,
    )
    assert report.count("npu-kernel", "torchrec") == 1
    text = cov.render_markdown(report)
    assert (
        "**6 operators**: 2 npu-kernel, 1 aten-composition, 1 host-only, 1 refused, 1 missing"
        in text
    )
    assert "Called by torchrec's own code: 3 (1 npu-kernel, 1 refused, 1 missing)" in text
    row = next(line for line in text.splitlines() if line.startswith("| `op_kernel`"))
    assert row == (
        "| `op_kernel` | npu-kernel | yes | AscendC `k_one` | "
        "`torchrec/a.py:8`<br>`torchrec/sub/b.py:4` |"
    )
    assert "through `op_looped_a`, `op_autograd`" in text
    assert cov.unused_entries(report, cov.load_data(data)) == ["classified_but_not_called"]

    doc = "# title\n\nintro\n"
    once = cov.replace_doc_section(doc, text)
    assert cov.doc_section(once) == text
    assert cov.replace_doc_section(once, text) == once
    assert cov.doc_section(cov.replace_doc_section(once, "other\n")) == "other\n"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("[ops.op_missing]\nstatus", "[ops.renamed]\nstatus"), "fbgemm::op_missing is called"),
        (
            ('kernel = "k_one"\n', 'kernel = "k_gone"\n'),
            "names AscendC operator 'k_gone', which has no kernels/ops/k_gone/op.toml",
        ),
        (
            ('via = ["op_looped_a", "op_autograd"]', 'via = ["op_looped_a", "op_nowhere"]'),
            "fbgemm::op_via_fbgemm is classified npu-kernel but the adapter registers no "
            "PrivateUse1 kernel for fbgemm::op_nowhere",
        ),
        (
            (
                '[ops.op_missing]\nstatus = "missing"\n',
                '[ops.op_missing]\nstatus = "aten-composition"\nreason = "x"\n',
            ),
            "fbgemm::op_missing is classified aten-composition but the adapter registers no "
            "PrivateUse1 kernel for it",
        ),
        (
            ('[ops.op_missing]\nstatus = "missing"\ntraining = true\n', ""),
            "fbgemm::op_missing is called (torchrec/a.py:9)",
        ),
    ],
)
def test_disagreements_are_problems(tmp_path: Path, change: tuple[str, str], problem: str) -> None:
    src, fbgemm = _tree(tmp_path)
    assert change[0] in GOOD
    data = _project(tmp_path, GOOD.replace(*change))
    report = cov.build_report(tmp_path, src, fbgemm, data)
    assert any(problem in p for p in report.problems), report.problems


def test_a_registered_kernel_still_called_missing_is_stale(tmp_path: Path) -> None:
    src, fbgemm = _tree(tmp_path)
    data = _project(
        tmp_path,
        GOOD.replace(
            '[ops.op_kernel]\nstatus = "npu-kernel"\ntraining = true\nkernel = "k_one"',
            '[ops.op_kernel]\nstatus = "missing"\ntraining = true',
        ),
    )
    report = cov.build_report(tmp_path, src, fbgemm, data)
    assert report.problems == []
    assert report.stale == [
        "the adapter registers an npu kernel for fbgemm::op_kernel, which fbgemm_coverage.toml "
        "still calls missing: classify it npu-kernel (kernel = its AscendC operator) or "
        "aten-composition"
    ]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('status = "maybe"\ntraining = true', "status is 'maybe'"),
        ('status = "refused"\ntraining = false', "a refused entry says why"),
        ('status = "npu-kernel"\ntraining = true', "names its AscendC operator"),
        ('status = "missing"\ntraining = true\nkernel = "k"', "belong to npu-kernel entries"),
        ('status = "missing"\ntraining = "yes"', "training must be true or false"),
        ('status = "missing"\ntraining = true\nowner = "x"', "unknown key(s) owner"),
    ],
)
def test_the_data_file_is_validated(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f"[ops.x]\n{table}\n", encoding="utf-8")
    with pytest.raises(cov.CoverageError, match=re.escape(message)):
        cov.load_data(path)


def test_command_names_an_unclassified_operator(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    src, fbgemm = _tree(tmp_path)
    _project(project, GOOD.replace("[ops.op_deep]", "[ops.op_other]"))
    code, out = invoke(cli, project, "coverage", "--source", str(src), "--fbgemm", str(fbgemm))
    assert code == 1, out
    assert "fbgemm::op_deep is called (fbgemm_gpu/mod_b.py:5)" in out
    assert "does not classify it" in out
    assert "Traceback" not in out


def test_command_without_a_source_says_how_to_get_one(cli: CliRunner, project: Path) -> None:
    code, out = invoke(cli, project, "coverage", "--source", str(project / "nowhere"))
    assert code == 1, out
    assert "no torchrec source at" in out and "recsdk-build patch apply" in out


def test_command_json_and_docs(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    src, fbgemm = _tree(tmp_path)
    _project(project, GOOD)
    _write(project / "docs" / "adapter.md", "# The adapter\n")
    args = ("coverage", "--source", str(src), "--fbgemm", str(fbgemm))
    code, out = invoke(cli, project, *args, "--check-docs")
    assert code == 1 and "out of date" in out, out
    code, out = invoke(cli, project, *args, "--write-docs")
    assert code == 0, out
    code, out = invoke(cli, project, "--json", *args, "--check-docs")
    assert code == 0, out
    assert '"op": "op_via_fbgemm"' in out and '"fbgemm_gpu/mod_a.py:6"' in out


# --- the pinned source ---------------------------------------------------------------------

SOURCE = ROOT / "build" / "src" / "torchrec"


def _real_report() -> cov.Report:
    if not (SOURCE / "torchrec").is_dir():
        pytest.skip(f"no torchrec source at {SOURCE}: run `recsdk-build all` (or fetch + patch)")
    fbgemm = cov.find_fbgemm([ROOT / "build" / "verify" / "venv", ROOT / "build" / "env" / "venv"])
    if fbgemm is None:
        pytest.skip("no fbgemm_gpu package installed (pip install -e '.[test]')")
    return cov.build_report(ROOT, SOURCE, fbgemm, ROOT / cov.DATA_FILE)


def test_pinned_source_is_fully_classified_and_the_doc_is_current() -> None:
    report = _real_report()
    assert report.problems == []
    doc = cov.doc_section((ROOT / cov.DOC_FILE).read_text(encoding="utf-8"))
    assert doc == cov.render_markdown(report), (
        "docs/adapter.md's coverage section is out of date: `recsdk-build coverage --write-docs`"
    )


def test_pinned_source_scan_agrees_with_a_plain_grep() -> None:
    """The issue's count: a textual grep of torchrec outside its tests finds the same operator
    names as the syntax-tree scan (no torchrec call is missed; no name there is only in a
    comment)."""
    report = _real_report()
    grep: set[str] = set()
    for path in cov.torchrec_files(SOURCE):
        grep.update(re.findall(r"torch\.ops\.fbgemm\.([A-Za-z0-9_]+)", path.read_text()))
    assert {r.op for r in report.ops("torchrec")} == grep
    # The operators the issue reports failing under torchrec's own distributed tests.
    assert {"permute_pooled_embs_auto_grad", "segment_sum_csr", "permute_1D_sparse_data"} <= grep
