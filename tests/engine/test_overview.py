"""engine/overview.py: a long map's overview is the max-pool of the full map (numpy's maximum.reduceat over the
tile edges, masked and NaN cells as −∞), its window and cell are the full map's values, exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlab.engine import derived_blocks, names, overview
from attnlab.engine.options import RunOptions
from tests.support.tiny import build_tiny_model

T = 300


@pytest.fixture(scope="module")
def long_trace():
    model = build_tiny_model("decoder-only", seed=5, max_len=T + 8)
    ids = [
        int(i)
        for i in torch.randint(
            4, model.module.config.tgt_vocab_size, (T - 1,), generator=torch.Generator().manual_seed(1)
        )
    ]
    return model.trace("", ids, RunOptions())


def numpy_max_pool(full: np.ndarray, s_r: int, s_c: int) -> np.ndarray:
    """The reference: each s_r × s_c block's max, NaN counted as −∞ (tile edges 0, s, 2s, …)."""
    work = np.where(np.isnan(full), -np.inf, full)
    rows = np.maximum.reduceat(work, np.arange(0, full.shape[0], s_r), axis=0)
    return np.maximum.reduceat(rows, np.arange(0, full.shape[1], s_c), axis=1)


@pytest.mark.parametrize("step", ["scores", "scaled", "masked", "weights"])
def test_overview_is_the_max_pool_of_the_full_map(long_trace, step):
    site = long_trace.sites()[-1]
    name = names.site_entry(site, step)
    for head in (0, long_trace.n_heads - 1):
        full = long_trace.read(name, head).numpy()  # [T, T], the whole map read the ordinary way
        assert full.shape == (T, T)
        got = overview.overview(long_trace, name, head, 64, 64).numpy()
        s = overview.tile_size(T, 64)
        assert s == 5 and got.shape == (math.ceil(T / s), math.ceil(T / s))
        np.testing.assert_array_equal(got, numpy_max_pool(full, s, s))


def test_masked_tiles_read_masked_only_when_every_cell_is_blocked(long_trace):
    site = long_trace.sites()[0]
    mask = overview.overview(long_trace, names.site_entry(site, "mask"), None, 64, 64).numpy()  # causal
    blocked = np.isneginf(long_trace.numpy(names.site_entry(site, "mask")))  # [T, T]
    s = overview.tile_size(T, 64)
    every = np.logical_and.reduceat(np.logical_and.reduceat(blocked, np.arange(0, T, s), 0), np.arange(0, T, s), 1)
    assert every.any() and not every.all()
    np.testing.assert_array_equal(np.isneginf(mask), every)
    masked = overview.overview(long_trace, names.site_entry(site, "masked"), 0, 64, 64).numpy()
    np.testing.assert_array_equal(np.isneginf(masked), every)  # the diagonal tiles hold allowed scores


def test_window_and_cell_are_the_full_maps_values(long_trace):
    site = long_trace.sites()[1]
    for step in ("weights", "masked"):
        name = names.site_entry(site, step)
        full = long_trace.read(name, 2).numpy()
        got = overview.window(long_trace, name, 2, (37, 101), (250, 300)).numpy()
        np.testing.assert_array_equal(got, full[37:101, 250:300])
        assert overview.cell(long_trace, name, 2, 123, 45) == float(full[123, 45])
    assert overview.window(long_trace, name, 0, (10, 10), (0, 5)).shape == (0, 5)


def test_stored_maps_and_blocks_of_rows(long_trace, monkeypatch):
    """A stored [H, Tq, Tk] entry (what an eager recorder keeps) pools the same way, and a map computed in many
    blocks of rows equals one computed in one."""
    site = long_trace.sites()[0]
    name = names.site_entry(site, "weights")
    one_block = overview.overview(long_trace, name, 1, 64, 64)
    monkeypatch.setattr(overview, "BLOCK_BYTES", 4 * T * 5 * 3)  # three tiles of rows per block
    np.testing.assert_array_equal(overview.overview(long_trace, name, 1, 64, 64).numpy(), one_block.numpy())
    stored = derived_blocks.heads_value(long_trace, name)  # [H, T, T]
    long_trace.entries["stored.weights"] = stored
    try:
        assert overview.map_shape(long_trace, "stored.weights") == (long_trace.n_heads, T, T)
        np.testing.assert_array_equal(
            overview.overview(long_trace, "stored.weights", 1, 64, 64).numpy(),
            numpy_max_pool(stored[1].numpy(), 5, 5),
        )
        np.testing.assert_array_equal(
            overview.window(long_trace, "stored.weights", 3, (0, 7), (3, 9)).numpy(), stored[3, :7, 3:9].numpy()
        )
    finally:
        del long_trace.entries["stored.weights"]


def test_uneven_tiles_and_nan_cells():
    """Tiles of a side that does not divide evenly, and NaN read as −∞ unless a whole tile is NaN."""
    values = torch.arange(7 * 10, dtype=torch.float32).reshape(7, 10)
    values[0:3, 0:4] = float("nan")
    values[4, 5] = float("nan")
    pooled = overview._pool(values, 3, 4).numpy()
    np.testing.assert_array_equal(pooled, numpy_max_pool(values.numpy(), 3, 4))
    assert pooled.shape == (3, 3) and np.isneginf(pooled[0, 0])
