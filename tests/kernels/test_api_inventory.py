"""The AscendC basic API, inventoried from CANN's own headers: every entry point the pinned
asc-devkit declares for dav_c220 (the 910B) is either emulated by kernels/sim or listed in its
refusal table (kernels/sim/include/recsdk_sim/refused.h), and each refused one stops a kernel at
compile time with a message naming it.

The inventory is taken from CANN's headers as the preprocessor sees them in CPU debug mode for
the 910B (``-DASCENDC_CPU_DEBUG=1 -D__NPU_ARCH__=2201``, so the other architectures' ``#if``
branches drop out): the functions declared at namespace scope in the interface headers
(``include/basic_api/kernel_operator_*_intf.h``, ``kernel_prof_trace_intf.h``,
``core_mng/roc/*_intf.h``) and the ones the matching ``impl/basic_api/*_intf_impl.h`` define
without declaring first (the older names such as WholeReduceMax), less the implementation's
internal helpers (parameter checks, ``*Impl``, ``*Common``). The inventory is by name: a name
counts as emulated when kernels/sim declares it; refused overloads of emulated names carry their
own static_assert next to the emulated ones.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from recsdk_build.ops import cann_check

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
SIM_INCLUDE = KERNELS / "sim" / "include"
REFUSED_H = SIM_INCLUDE / "recsdk_sim" / "refused.h"

PUBLIC_FILE = re.compile(
    r"/(include/basic_api/(kernel_operator_\w+_intf|kernel_prof_trace_intf|core_mng/roc/\w+_intf)"
    r"|impl/basic_api/kernel_operator_\w+_intf_impl)\.h$"
)
# The implementation's own helpers in the *_intf_impl.h files: not API.
INTERNAL = re.compile(
    r"^(Check(?!LocalMemoryIA)\w*|\w+Check|\w+Impl|\w+Common|Get\w+ApiName|GetSaturationModeBit|deprecated)$"
)
LINE_MARKER = re.compile(r'# \d+ "([^"]+)"')
REFUSAL = re.compile(r"^RECSDK_SIM_REFUSED\((\w+),", re.M)


def _drop_template_heads(head: str) -> str:
    while head.startswith("template"):
        depth, start = 0, head.index("<")
        for k in range(start, len(head)):
            depth += {"<": 1, ">": -1}.get(head[k], 0)
            if depth == 0:
                break
        head = head[k + 1 :].strip()
    return head


def _declared_name(head: str) -> str | None:
    """The function a namespace-scope statement declares or defines, if it is one."""
    using = re.match(r"using\s+[\w:]*::(\w+)$", head)
    if using:
        return using.group(1)
    head = _drop_template_heads(head)
    if "(" not in head or re.match(
        r"(struct|class|union|enum|using|typedef|static_assert)\b", head
    ):
        return None
    before = head[: head.index("(")]
    name = re.search(r"(\w+)\s*$", before)
    if name is None or "operator" in before or name.group(1) in ("__attribute__", "decltype"):
        return None
    return name.group(1)


def namespace_functions(source: str) -> list[tuple[str, str]]:
    """(namespace, name) of each function declared or defined at namespace scope in preprocessed
    C++: class, enum and function bodies are skipped."""
    found: list[tuple[str, str]] = []
    scopes: list[str] = []
    stmt: list[str] = []
    i, n = 0, len(source)

    def record() -> None:
        name = _declared_name("".join(stmt).strip())
        if name is not None:
            found.append(("::".join(scopes), name))

    while i < n:
        c = source[i]
        if c == "{":
            ns = re.match(r"(?:inline\s+)?namespace\s+(\w+)\s*$", "".join(stmt).strip())
            if ns:
                scopes.append(ns.group(1))
            else:
                record()
                depth = 1
                i += 1
                while i < n and depth:
                    depth += {"{": 1, "}": -1}.get(source[i], 0)
                    i += 1
                stmt = []
                continue
            stmt = []
        elif c == "}":
            if scopes:
                scopes.pop()
            stmt = []
        elif c == ";":
            record()
            stmt = []
        else:
            stmt.append(c)
        i += 1
    return found


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Counter[tuple[str, str]]:
    """(namespace, name) -> number of declarations, from CANN's headers for dav_c220."""
    found = cann_check.find_headers(None, ROOT)
    if isinstance(found, cann_check.NoHeaders):
        pytest.skip(f"not run: no AscendC header tree ({found.reason})")
    common = cann_check._common_dir(found, tmp_path_factory.mktemp("cann"))
    flags = cann_check._header_flags(found, KERNELS, common)
    cmd = ["g++", "-E", *flags, "-x", "c++", str(common / cann_check.PCH_HEADER)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    chunks: dict[str, list[str]] = {}
    current = ""
    for line in proc.stdout.split("\n"):
        marker = LINE_MARKER.match(line)
        if marker:
            current = marker.group(1)
        elif not line.startswith("#"):
            chunks.setdefault(current, []).append(line)
    names: Counter[tuple[str, str]] = Counter()
    for path, lines in chunks.items():
        if PUBLIC_FILE.search(path):
            in_impl = "/impl/" in path  # a definition: counted only when nothing declares it
            for ns, name in namespace_functions("\n".join(lines)):
                if ns in ("AscendC", "") and not INTERNAL.match(name):
                    names[(ns, name)] += 0 if in_impl else 1
    for key, count in names.items():
        names[key] = max(count, 1)
    assert len(names) > 150, "the header scan found too few entry points: the parser broke"
    return names


def refusal_table() -> set[str]:
    return set(REFUSAL.findall(REFUSED_H.read_text(encoding="utf-8")))


def _compile(source: str, tmp: Path, *defines: str) -> subprocess.CompletedProcess[str]:
    src = tmp / "probe.cpp"
    src.write_text(source, encoding="utf-8")
    cmd = ["g++", "-std=c++17", "-fsyntax-only", "-fmax-errors=0", *defines]
    cmd += [f"-I{SIM_INCLUDE}", f"-I{KERNELS / 'common'}", str(src)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def declared_by_emulation(names: list[tuple[str, str]], tmp: Path) -> set[tuple[str, str]]:
    """The names kernels/sim declares without its refusal table: one using-declaration a line."""
    lines = ['#include "kernel_operator.h"']
    first = len(lines) + 1
    lines += [f"namespace p{i} {{ using {ns}::{name}; }}" for i, (ns, name) in enumerate(names)]
    proc = _compile("\n".join(lines) + "\n", tmp, "-DRECSDK_SIM_NO_REFUSALS")
    failed = {int(m) for m in re.findall(r"probe\.cpp:(\d+):\d+: error", proc.stderr)}
    unexpected = [ln for ln in failed if ln < first]
    assert not unexpected, proc.stderr[-3000:]
    return {names[ln - first] for ln in range(first, first + len(names)) if ln not in failed}


@pytest.fixture(scope="module")
def emulated(
    inventory: Counter[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> set[tuple[str, str]]:
    return declared_by_emulation(sorted(inventory), tmp_path_factory.mktemp("probe"))


def test_every_entry_point_is_emulated_or_refused(
    inventory: Counter[tuple[str, str]], emulated: set[tuple[str, str]]
) -> None:
    refused = refusal_table()
    missing = sorted(
        f"{ns}::{name}" if ns else name
        for ns, name in inventory
        if (ns, name) not in emulated and name not in refused
    )
    print(
        f"\nCANN basic API for dav_c220: {len(inventory)} names "
        f"({sum(inventory.values())} declarations); emulated {len(emulated)}, "
        f"refused {len(refused)}"
    )
    assert not missing, (
        f"{len(missing)} AscendC entry point(s) CANN declares are neither emulated nor in "
        f"recsdk_sim/refused.h: {', '.join(missing)}"
    )


def test_refusal_table_holds_only_cann_names_the_emulation_lacks(
    inventory: Counter[tuple[str, str]], emulated: set[tuple[str, str]]
) -> None:
    refused = refusal_table()
    cann_names = {name for _, name in inventory}
    assert not sorted(refused - cann_names), "refused names CANN does not declare for dav_c220"
    both = sorted(name for _, name in emulated if name in refused)
    assert not both, f"emulated and refused at once (the refusal would hijack calls): {both}"


def test_refused_entry_points_fail_at_compile_time_naming_the_api(tmp_path: Path) -> None:
    refused = sorted(refusal_table())
    calls = [
        f"    {'' if name == 'SetSysWorkSpacePtr' else 'AscendC::'}{name}(0);" for name in refused
    ]
    source = '#include "kernel_operator.h"\nvoid probe() {\n' + "\n".join(calls) + "\n}\n"
    proc = _compile(source, tmp_path)
    assert proc.returncode != 0
    reported = set(re.findall(r"AscendC API (\w+) is not emulated: \S", proc.stderr))
    silent = sorted(set(refused) - reported)
    assert not silent, f"refused APIs that compile or fail without their message: {silent}"


def test_a_refused_overload_of_an_emulated_name_names_itself(tmp_path: Path) -> None:
    source = (
        '#include "kernel_operator.h"\n'
        "void probe(AscendC::LocalTensor<float> l, AscendC::GlobalTensor<float> g) {\n"
        "    AscendC::SliceInfo s[1];\n"
        "    AscendC::DataCopy(l, g, s, s, 1);\n"
        "    AscendC::DataCopyL1ToUB(l, l, 64u);\n"
        "}\n"
    )
    proc = _compile(source, tmp_path)
    assert "DataCopy with SliceInfo (multi-dimensional slices, GM->UB) is not emulated" in (
        proc.stderr
    ), proc.stderr[-2000:]
    assert "DataCopyL1ToUB is not emulated" in proc.stderr, proc.stderr[-2000:]
