"""The operator catalogue: ``kernels/ops/<op>/op.toml``, validated.

op.toml is the single source of truth for an operator: the CANN OpDef and msopgen JSON, the
aclnn signature, the sim launcher and its dtype variants, and the torch adapter are all
generated from it, so they cannot drift apart (fbgemm-ascend's JSON and OpDef did).
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recsdk_build.errors import ConfigError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

# name -> (RecsdkSimDType value, C++ type in kernels, ge::DataType, bytes)
DTYPES: dict[str, tuple[int, str, str, int]] = {
    "float32": (0, "float", "ge::DT_FLOAT", 4),
    "float16": (1, "half", "ge::DT_FLOAT16", 2),
    "bfloat16": (2, "bfloat16_t", "ge::DT_BF16", 2),
    "int32": (3, "int32_t", "ge::DT_INT32", 4),
    "int64": (4, "int64_t", "ge::DT_INT64", 8),
    "int8": (5, "int8_t", "ge::DT_INT8", 1),
    "uint8": (6, "uint8_t", "ge::DT_UINT8", 1),
    "int16": (7, "int16_t", "ge::DT_INT16", 2),
    "bool": (8, "bool", "ge::DT_BOOL", 1),
    "float64": (9, "double", "ge::DT_DOUBLE", 8),
}
ATTR_TYPES = {"int": 0, "float": 1, "bool": 2, "int_list": 3}
COMPUTE_UNITS = ("ascend910b", "ascend910_93", "ascend310p", "ascend950")
# [op] kernel_type: which cores run the kernel (the KERNEL_TYPE_* a kernel declares with
# KERNEL_TASK_TYPE_DEFAULT), numbered as asc-devkit's KernelMetaType (kernels/sim mix.h).
# Vector-only operators leave it out; mix_aic_1_2 runs a Cube core and two Vector cores per
# logical AI core (Matmul on the Cube, element-wise work on the Vector cores).
KERNEL_TYPES = {"aiv_only": 0, "aic_only": 1, "mix_aic_1_1": 4, "mix_aic_1_2": 5}
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_PASCAL = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# [host] keys: the adapter's side of the operator (codegen.py writes its backend glue from them).
HOST_KEYS = ("notes", "error_name", "trap_error")
# A value in a [host] message: an attribute, or the size of a tensor the caller always passes,
# optionally shifted by a constant ("{permute.size(0) - 1}").
_PLACEHOLDER = re.compile(
    r"^(?P<name>[a-z][a-z0-9_]*)(?P<call>\.size\((?P<dim>[0-7])\)|\.numel\(\)|\.dim\(\))?"
    r"(?:\s*(?P<sign>[-+])\s*(?P<k>[0-9]+))?$"
)


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtypes: tuple[str, ...]
    ranks: tuple[int, int]
    optional: bool = False
    mutable: bool = False  # an input the kernel updates in place
    follows: str | None = None  # an output whose dtype is that of this input
    shape: str = ""
    doc: str = ""
    # An output whose shape is that of this (required) input: CANN's InferShape is generated.
    shape_like: str | None = None

    @property
    def macro(self) -> str:
        return f"DTYPE_{self.name.upper()}"


@dataclass(frozen=True)
class AttrSpec:
    name: str
    type: str
    default: Any = None
    doc: str = ""

    @property
    def kind(self) -> int:
        return ATTR_TYPES[self.type]

    @property
    def camel(self) -> str:
        head, *rest = self.name.split("_")
        return head + "".join(p.title() for p in rest)


@dataclass(frozen=True)
class OpSpec:
    name: str
    op_type: str
    groups: tuple[str, ...]
    summary: str
    reference: str
    compute_units: tuple[str, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    attrs: tuple[AttrSpec, ...]
    host_notes: str
    directory: Path = field(compare=False)
    # The operator's name in the adapter's errors ([host] error_name, default the op name).
    error_name: str = ""
    # [host] trap_error: what a trap means, raised as a ValueError instead of the generic
    # "stopped on invalid input". Literal text and C++ expressions alternate (even indices
    # text, odd ones expressions such as "permute.size(0) - 1"); empty when not given.
    trap_error: tuple[str, ...] = ()
    kernel_type: str = "aiv_only"
    # [kernel] class: the kernel class the generated entry instantiates, with the DTYPE_* macros
    # of a binary variant ("GatherForRank1<DTYPE_X, DTYPE_INDEX>"); [kernel] matmul: the Matmul
    # members a mixed kernel's AIC serves, each with the tiling field of the same name.
    kernel_class: str = ""
    matmul_objects: tuple[str, ...] = ()

    @property
    def kernel_file(self) -> Path:
        return self.directory / "op_kernel" / f"{self.name}.cpp"

    @property
    def host_file(self) -> Path:
        return self.directory / "op_host" / f"{self.name}.cpp"

    @property
    def infers_shape(self) -> bool:
        """Every output's shape comes from op.toml (`shape_like`), so CANN's op_host source is
        generated whole and no hand-written op_host/<op>.cpp exists."""
        return all(out.shape_like is not None for out in self.outputs)

    @property
    def tiling_header(self) -> Path:
        return self.directory / "op_host" / f"{self.name}_tiling.h"

    @property
    def tiling_function(self) -> str:
        """What both targets call: the tiling over raw OpArgs (generated, <op>_op_args.h)."""
        return f"mxrec::{self.op_type}TilingOf"

    @property
    def tiling_struct(self) -> str:
        return f"{self.op_type}TilingData"

    @property
    def tensors(self) -> tuple[TensorSpec, ...]:
        return self.inputs + self.outputs

    def output_dtype(self, out: TensorSpec, combo: dict[str, str]) -> str:
        return combo[out.follows] if out.follows else out.dtypes[0]

    def variants(self) -> list[dict[str, str]]:
        """Every dtype combination a kernel binary is built for: tensor name -> dtype."""
        free = [t for t in self.inputs if t.follows is None]
        combos = []
        for choice in itertools.product(*(t.dtypes for t in free)):
            combo = dict(zip([t.name for t in free], choice, strict=True))
            for t in self.tensors:
                if t.follows is not None:
                    combo[t.name] = combo[t.follows]
            for out in self.outputs:
                combo[out.name] = self.output_dtype(out, combo)
            combos.append(combo)
        return combos


def _str(data: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: '{key}' must be a string")
    return value


def _tensor(
    data: dict[str, Any], where: str, inputs: dict[str, TensorSpec] | None, output: bool = False
) -> TensorSpec:
    name = _str(data, "name", where)
    if not _SNAKE.match(name):
        raise ConfigError(f"{where}: tensor name {name!r} must be snake_case")
    where = f"{where} '{name}'"
    follows = None
    if inputs is None or "dtypes" in data:
        dtypes = tuple(data.get("dtypes", ()))
    else:
        dtype = _str(data, "dtype", where)
        if dtype in inputs:
            follows = dtype
            dtypes = inputs[dtype].dtypes
        else:
            dtypes = (dtype,)
    if not dtypes or any(d not in DTYPES for d in dtypes):
        raise ConfigError(f"{where}: dtypes must be a non-empty list of {', '.join(DTYPES)}")
    ranks = data.get("ranks", [1, 8])
    if (
        not isinstance(ranks, list)
        or len(ranks) != 2
        or not all(isinstance(r, int) for r in ranks)
        or not 0 <= ranks[0] <= ranks[1] <= 8
    ):
        raise ConfigError(f"{where}: ranks must be [min, max] with 0 <= min <= max <= 8")
    return TensorSpec(
        name=name,
        dtypes=tuple(dtypes),
        ranks=(ranks[0], ranks[1]),
        optional=bool(data.get("optional", False)),
        mutable=bool(data.get("mutable", False)),
        follows=follows,
        shape=str(data.get("shape", "")),
        doc=str(data.get("doc", "")),
        shape_like=_shape_like(data, where, inputs if output else None),
    )


def _shape_like(
    data: dict[str, Any], where: str, inputs: dict[str, TensorSpec] | None
) -> str | None:
    """``inputs``: the operator's inputs when ``data`` is an output, else None."""
    if "shape_like" not in data:
        return None
    like = _str(data, "shape_like", where)
    if inputs is None:
        raise ConfigError(f"{where}: shape_like is for outputs")
    if like not in inputs or inputs[like].optional:
        required = ", ".join(n for n, t in inputs.items() if not t.optional)
        raise ConfigError(f"{where}: shape_like {like!r} must name a required input ({required})")
    return like


def _message(
    text: str, where: str, tensors: tuple[TensorSpec, ...], attrs: list[AttrSpec]
) -> tuple[str, ...]:
    """A message with ``{value}`` placeholders, split into text and C++ expressions."""
    parts = re.split(r"\{([^{}]*)\}", text)
    required = {t.name for t in tensors if not t.optional}
    scalar = {a.name for a in attrs if a.type != "int_list"}
    for i, part in enumerate(parts):
        if i % 2 == 0:
            if "{" in part or "}" in part:
                raise ConfigError(f"{where}: unbalanced brace in {text!r}")
            continue
        m = _PLACEHOLDER.match(part.strip())
        ok = m is not None and (
            (m["call"] is not None and m["name"] in required)
            or (m["call"] is None and m["name"] in scalar)
        )
        if m is None or not ok:
            raise ConfigError(
                f"{where}: {{{part}}} must be a scalar attribute or <tensor>.size(d), "
                "<tensor>.numel() or <tensor>.dim() of a required tensor, optionally with "
                "+ or - a constant"
            )
        parts[i] = m["name"] + (m["call"] or "") + (f" {m['sign']} {m['k']}" if m["sign"] else "")
    return tuple(parts)


def _host(
    data: dict[str, Any],
    where: str,
    name: str,
    tensors: tuple[TensorSpec, ...],
    attrs: list[AttrSpec],
) -> tuple[str, str, tuple[str, ...]]:
    """[host]: notes, the name errors use, and the message of a trap (see HOST_KEYS)."""
    host = data.get("host", {})
    if not isinstance(host, dict):
        raise ConfigError(f"{where}: [host] must be a table")
    unknown = sorted(set(host) - set(HOST_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown [host] key(s) {', '.join(unknown)}; known: {', '.join(HOST_KEYS)}"
        )
    where = f"{where}: [host]"
    error_name = _str(host, "error_name", where, name)
    if not _IDENTIFIER.match(error_name):
        raise ConfigError(f"{where}: error_name {error_name!r} must be a C identifier")
    trap = _str(host, "trap_error", where, "").strip()
    message = _message(trap, f"{where} trap_error", tensors, attrs) if trap else ()
    return str(host.get("notes", "")).strip(), error_name, message


def load_op(path: Path) -> OpSpec:
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    op = data.get("op")
    if not isinstance(op, dict):
        raise ConfigError(f"{where}: missing [op] table")
    name = _str(op, "name", where)
    if name != path.parent.name or not _SNAKE.match(name):
        raise ConfigError(
            f"{where}: op.name {name!r} must be snake_case and equal the directory name"
        )
    op_type = _str(op, "op_type", where)
    if not _PASCAL.match(op_type):
        raise ConfigError(f"{where}: op_type {op_type!r} must be PascalCase")
    units = tuple(op.get("compute_units", []))
    if not units or any(u not in COMPUTE_UNITS for u in units):
        raise ConfigError(f"{where}: compute_units must list some of {', '.join(COMPUTE_UNITS)}")
    by_name: dict[str, TensorSpec] = {}
    for raw in data.get("inputs", []):
        # An input may take the dtype of an earlier one ("dtype" instead of "dtypes").
        spec_in = _tensor(raw, f"{where}: input", by_name)
        by_name[spec_in.name] = spec_in
    inputs = tuple(by_name.values())
    outputs = tuple(
        _tensor(t, f"{where}: output", by_name, output=True) for t in data.get("outputs", [])
    )
    attrs = []
    for a in data.get("attrs", []):
        aname = _str(a, "name", f"{where}: attr")
        atype = _str(a, "type", f"{where}: attr '{aname}'")
        if atype not in ATTR_TYPES or not _SNAKE.match(aname):
            raise ConfigError(
                f"{where}: attr {aname!r}: type must be one of {', '.join(ATTR_TYPES)}"
            )
        attrs.append(AttrSpec(aname, atype, a.get("default"), str(a.get("doc", ""))))
    names = [t.name for t in inputs + outputs] + [a.name for a in attrs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: tensor and attribute names must be unique")
    if not inputs:
        raise ConfigError(f"{where}: an operator needs inputs")
    optional_seen = False
    for t in inputs:
        if optional_seen and not t.optional:
            # The CANN tiling glue reads inputs by IR index, which only matches the runtime
            # index of required inputs when no optional input comes before them.
            raise ConfigError(f"{where}: optional inputs must come after the required ones")
        optional_seen = optional_seen or t.optional
    groups = tuple(op.get("groups", []))
    kernel_type = _str(op, "kernel_type", where, "aiv_only")
    if kernel_type not in KERNEL_TYPES:
        raise ConfigError(
            f"{where}: kernel_type {kernel_type!r} must be one of {', '.join(KERNEL_TYPES)}"
        )
    notes, error_name, trap_error = _host(data, where, name, inputs + outputs, attrs)
    kernel_class, matmul = _kernel(data, where, kernel_type)
    return OpSpec(
        name=name,
        op_type=op_type,
        groups=groups,
        summary=_str(op, "summary", where, ""),
        reference=_str(op, "reference", where, ""),
        compute_units=units,
        inputs=inputs,
        outputs=outputs,
        attrs=tuple(attrs),
        host_notes=notes,
        directory=path.parent,
        error_name=error_name,
        trap_error=trap_error,
        kernel_type=kernel_type,
        kernel_class=kernel_class,
        matmul_objects=matmul,
    )


def _kernel(data: dict[str, Any], where: str, kernel_type: str) -> tuple[str, tuple[str, ...]]:
    """[kernel]: what the generated kernel entry (<op>_kernel_entry.h) instantiates."""
    kernel = data.get("kernel")
    if not isinstance(kernel, dict):
        raise ConfigError(f"{where}: [kernel] class is required (the kernel class to instantiate)")
    unknown = sorted(set(kernel) - {"class", "matmul"})
    if unknown:
        raise ConfigError(f"{where}: [kernel] has unknown keys {unknown} (known: class, matmul)")
    cls = _str(kernel, "class", f"{where}: [kernel]")
    if not _IDENTIFIER.match(cls.split("<", 1)[0]):
        raise ConfigError(f"{where}: [kernel] class {cls!r} must be a C++ class name")
    matmul = tuple(kernel.get("matmul", []))
    if any(not isinstance(m, str) or not _IDENTIFIER.match(m) for m in matmul):
        raise ConfigError(f"{where}: [kernel] matmul must list member names, got {list(matmul)}")
    mixed = kernel_type.startswith("mix")
    if mixed and not matmul:
        raise ConfigError(
            f"{where}: a {kernel_type} kernel needs [kernel] matmul (its Matmul members)"
        )
    if matmul and not mixed:
        raise ConfigError(f"{where}: [kernel] matmul is only for mix_* kernels, not {kernel_type}")
    return cls, matmul


def load_catalogue(kernels: Path) -> dict[str, OpSpec]:
    """Every operator under ``kernels/ops``, by name."""
    ops_dir = kernels / "ops"
    if not ops_dir.is_dir():
        raise ConfigError(f"{ops_dir} does not exist")
    ops = {}
    for toml in sorted(ops_dir.glob("*/op.toml")):
        spec = load_op(toml)
        for required in (spec.kernel_file, spec.tiling_header):
            if not required.is_file():
                raise ConfigError(f"operator {spec.name}: {required} is missing")
        _check_host_file(spec)
        ops[spec.name] = spec
    return ops


def _check_host_file(spec: OpSpec) -> None:
    """op_host/<op>.cpp holds the hand-written InferShape exactly when op.toml cannot say it."""
    if spec.infers_shape and spec.host_file.is_file():
        raise ConfigError(
            f"operator {spec.name}: every output has shape_like in op.toml, so op_host/"
            f"{spec.host_file.name} is generated; remove the hand-written {spec.host_file}"
        )
    if not spec.infers_shape and not spec.host_file.is_file():
        missing = ", ".join(o.name for o in spec.outputs if o.shape_like is None)
        raise ConfigError(
            f"operator {spec.name}: {spec.host_file} (CANN InferShape) is missing; write it, or "
            f"give shape_like to the outputs {missing} in op.toml"
        )


def groups(ops: dict[str, OpSpec]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for spec in ops.values():
        for g in spec.groups:
            found.setdefault(g, []).append(spec.name)
    return found


def select(ops: dict[str, OpSpec], only: list[str] | None) -> list[OpSpec]:
    """Operators named by ``--only`` (operator or group names); all when None."""
    if not only:
        return list(ops.values())
    by_group = groups(ops)
    chosen: dict[str, OpSpec] = {}
    unknown = []
    for raw in only:
        for name in (n.strip() for n in raw.split(",")):
            if not name:
                continue
            if name in ops:
                chosen[name] = ops[name]
            elif name in by_group:
                chosen.update({n: ops[n] for n in by_group[name]})
            else:
                unknown.append(name)
    if unknown:
        raise UsageError(
            f"--only {', '.join(unknown)}: no such operator or group; operators: "
            f"{', '.join(ops)}; groups: {', '.join(sorted(by_group))}"
        )
    return [ops[n] for n in ops if n in chosen]
