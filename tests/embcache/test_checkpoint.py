"""Checkpoints: bit-identical round trips (full and incremental), and refusal of torn or
corrupted files without loading anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import random_ids
from torchrec_embcache.checkpoint import MANIFEST, read_manifest

DIM = 8


def make_model(cache_slots: int | None = 40, **extra) -> ec.DynamicEmbeddingBag:
    kwargs = dict(
        mode="sum",
        optimizer=ec.SparseAdam(lr=0.05),
        seed=11,
        admission=ec.Admission(threshold=2, default_value=-0.5),
        eviction=ec.EvictionPolicy(ttl_steps=8),
        cache_slots=cache_slots,
    )
    kwargs.update(extra)
    return ec.DynamicEmbeddingBag(DIM, **kwargs)


def batches(pool: torch.Tensor, steps: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        ids = pool[torch.randint(0, pool.numel(), (30,), generator=g)]
        yield ids, torch.arange(0, 30, 3), torch.randn(10, DIM, generator=g)


def train(
    model: ec.DynamicEmbeddingBag, pool: torch.Tensor, steps: int, seed: int
) -> list[torch.Tensor]:
    outs = []
    for ids, offsets, target in batches(pool, steps, seed):
        out = model(ids, offsets)
        ((out - target) ** 2).sum().backward()
        outs.append(out.detach())
    return outs


def snapshot(model: ec.DynamicEmbeddingBag) -> dict[str, object]:
    table = model.table
    state = dict(table.export())
    state["pending"] = table.host.dump_pending()
    state["step"] = table.step
    state["optimizer_step"] = int(table.host.optimizer_step)
    return state


def assert_same(a: dict[str, object], b: dict[str, object]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        va, vb = a[key], b[key]
        if isinstance(va, torch.Tensor):
            assert torch.equal(va, vb), key
        elif isinstance(va, tuple):
            assert all(torch.equal(x, y) for x, y in zip(va, vb, strict=True)), key
        else:
            assert va == vb, key


def table_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.emb"))


def test_full_round_trip_is_bit_identical_and_training_continues_identically(
    tmp_path: Path,
) -> None:
    pool = random_ids(90, seed=1)
    model = make_model()
    train(model, pool, steps=12, seed=2)
    assert model.table.host.pending_size > 0  # admission counters are part of the state
    ec.save_checkpoint(model, tmp_path)
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]  # atomic writes cleaned up

    restored = make_model()
    ec.load_checkpoint(restored, tmp_path)
    assert_same(snapshot(model), snapshot(restored))
    # Same future: identical outputs and tables after more training.
    a = train(model, pool, steps=6, seed=3)
    b = train(restored, pool, steps=6, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert_same(snapshot(model), snapshot(restored))


def test_incremental_chain_restores_latest_state_including_deletions(tmp_path: Path) -> None:
    pool = random_ids(400, seed=4)
    config = dict(cache_slots=None, admission=None, eviction=ec.EvictionPolicy(ttl_steps=12))
    model = make_model(**config)
    train(model, pool, steps=10, seed=5)
    ec.save_checkpoint(model, tmp_path)
    full_size = table_files(tmp_path)[0].stat().st_size
    ids_before = set(model.table.export()["ids"].tolist())

    # A narrow slice of ids trains on; rows of the first steps expire (TTL 12) and go.
    train(model, pool[:20], steps=6, seed=6)
    ec.save_checkpoint(model, tmp_path, incremental=True)
    train(model, pool[:20], steps=2, seed=7)
    manifest = ec.save_checkpoint(model, tmp_path, incremental=True)

    files = manifest["tables"]["table"]["files"]
    assert [f["kind"] for f in files] == ["full", "incremental", "incremental"]
    assert files[-1]["bytes"] < full_size / 3  # only changed rows and deletions
    ids_now = set(model.table.export()["ids"].tolist())
    assert ids_before - ids_now  # some ids were deleted after the full checkpoint

    restored = make_model(**config)
    ec.load_checkpoint(restored, tmp_path)
    assert_same(snapshot(model), snapshot(restored))

    # A new full checkpoint replaces the chain and removes its files.
    ec.save_checkpoint(model, tmp_path)
    assert len(table_files(tmp_path)) == 1


def test_incremental_needs_a_full_checkpoint_first(tmp_path: Path) -> None:
    model = make_model()
    with pytest.raises(ec.CheckpointError, match="no full checkpoint"):
        ec.save_checkpoint(model, tmp_path, incremental=True)


def corrupt_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def test_corrupted_row_data_is_refused_and_nothing_is_loaded(tmp_path: Path) -> None:
    pool = random_ids(60, seed=8)
    model = make_model()
    train(model, pool, steps=8, seed=9)
    ec.save_checkpoint(model, tmp_path)
    (path,) = table_files(tmp_path)
    corrupt_byte(path, path.stat().st_size // 2)

    other = make_model()
    train(other, pool, steps=3, seed=10)
    before = snapshot(other)
    with pytest.raises(ec.CheckpointError) as err:
        ec.load_checkpoint(other, tmp_path)
    assert str(path) in str(err.value) and "checksum mismatch" in str(err.value)
    assert_same(before, snapshot(other))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncate", "truncated"),
        ("header", "header checksum mismatch"),
        ("magic", "not an embcache checkpoint"),
        ("append", "unexpected bytes after the end marker"),
    ],
)
def test_damaged_table_files_are_refused_with_the_reason(
    tmp_path: Path, damage: str, message: str
) -> None:
    model = make_model(cache_slots=None)
    train(model, random_ids(40, seed=12), steps=4, seed=13)
    path = tmp_path / "t.emb"
    model.table.save(path)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) - 10])
    elif damage == "header":
        corrupt_byte(path, 40)
    elif damage == "magic":
        corrupt_byte(path, 0)
    else:
        path.write_bytes(data + b"\0" * 7)
    fresh = make_model(cache_slots=None)
    with pytest.raises(ec.CheckpointError, match=message) as err:
        fresh.table.load([path])
    assert str(path) in str(err.value)
    assert len(fresh.table) == 0


def test_torn_file_is_caught_by_the_manifest_size(tmp_path: Path) -> None:
    model = make_model()
    train(model, random_ids(40, seed=14), steps=4, seed=15)
    ec.save_checkpoint(model, tmp_path)
    (path,) = table_files(tmp_path)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 100)
    with pytest.raises(ec.CheckpointError, match="torn or was replaced"):
        ec.load_checkpoint(make_model(), tmp_path)


def test_corrupted_manifest_is_refused(tmp_path: Path) -> None:
    model = make_model()
    train(model, random_ids(40, seed=16), steps=3, seed=17)
    ec.save_checkpoint(model, tmp_path)
    text = (tmp_path / MANIFEST).read_text()
    (tmp_path / MANIFEST).write_text(text.replace('"generation": 1', '"generation": 7'))
    with pytest.raises(ec.CheckpointError, match=r"manifest .* is corrupted"):
        ec.load_checkpoint(make_model(), tmp_path)
    (tmp_path / MANIFEST).write_bytes(b"\xff\xfe\x00binary")  # not even text
    with pytest.raises(ec.CheckpointError, match=r"manifest .* is corrupted"):
        ec.load_checkpoint(make_model(), tmp_path)
    (tmp_path / MANIFEST).unlink()
    with pytest.raises(ec.CheckpointError, match=r"MANIFEST\.json is missing"):
        ec.load_checkpoint(make_model(), tmp_path)


def test_checkpoint_of_another_geometry_is_refused(tmp_path: Path) -> None:
    model = make_model()
    train(model, random_ids(40, seed=18), steps=3, seed=19)
    ec.save_checkpoint(model, tmp_path)
    with pytest.raises(ec.CheckpointError, match="dim=8 but the module's table has dim=16"):
        ec.load_checkpoint(ec.DynamicEmbeddingBag(16, optimizer=ec.SparseAdam()), tmp_path)
    # The core checks the file itself too (e.g. when the manifest is bypassed).
    (path,) = table_files(tmp_path)
    other = ec.EmbeddingTable(DIM, optimizer=ec.SparseSGD())
    with pytest.raises(ec.CheckpointError, match="Adam state, but the table has dim 8 with SGD"):
        other.load([path])


def test_multi_table_load_is_all_or_nothing(tmp_path: Path) -> None:
    pool = random_ids(50, seed=20)
    tables = {"a": make_model(cache_slots=64).table, "b": make_model(seed=12).table}
    for name, table in tables.items():
        ids = pool if name == "a" else pool[:10]
        table.lookup(torch.cat([ids, ids]), train=True)  # two sightings: admitted
        assert len(table) == ids.numel()
    ec.save_checkpoint(tables, tmp_path)
    manifest = read_manifest(tmp_path)
    b_file = tmp_path / manifest["tables"]["b"]["files"][0]["name"]
    corrupt_byte(b_file, b_file.stat().st_size - 30)

    targets = {"a": make_model().table, "b": make_model(seed=12).table}
    with pytest.raises(ec.CheckpointError, match=str(b_file)):
        ec.load_checkpoint(targets, tmp_path)
    assert len(targets["a"]) == 0 and len(targets["b"]) == 0  # "a" was valid but not loaded


def test_failed_save_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = random_ids(30, seed=22)
    tables = {"a": make_model().table, "b": make_model().table}
    for table in tables.values():
        table.lookup(torch.cat([pool, pool]), train=True)
    ec.save_checkpoint(tables, tmp_path)
    files_before = sorted(os.listdir(tmp_path))
    expected = {name: t.export()["ids"] for name, t in tables.items()}
    assert all(ids.numel() == pool.numel() for ids in expected.values())

    for table in tables.values():
        table.lookup(torch.cat([pool[:5] + 1] * 2), train=True)
        assert len(table) == pool.numel() + 5

    def disk_full(path: object, incremental: bool = False) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tables["b"], "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        ec.save_checkpoint(tables, tmp_path)
    assert sorted(os.listdir(tmp_path)) == files_before  # new files removed, manifest kept

    restored = {"a": make_model().table, "b": make_model().table}
    ec.load_checkpoint(restored, tmp_path)
    for name, table in restored.items():
        assert torch.equal(table.export()["ids"], expected[name])


def test_state_dict_round_trip(tmp_path: Path) -> None:
    pool = random_ids(70, seed=24)
    model = make_model()
    train(model, pool, steps=6, seed=25)
    state = model.state_dict()
    torch.save(state, tmp_path / "model.pt")
    restored = make_model()
    restored.load_state_dict(torch.load(tmp_path / "model.pt"))
    assert_same(snapshot(model), snapshot(restored))
    a = train(model, pool, steps=3, seed=26)
    b = train(restored, pool, steps=3, seed=26)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
