"""The "why ÷ √dₖ?" stage of a long input reads its site's last query rows only, one head at a time, and its
figures are those of the whole map's same rows."""

from __future__ import annotations

import numpy as np

from attnlab.present import scaling
from tests.support.tiny import build_tiny_model


def test_a_long_site_is_measured_on_its_last_rows_and_they_are_the_maps_own(monkeypatch):
    trace = build_tiny_model(arch="decoder-only").trace(tgt="the black cat sees the small dog and the cat")
    site = "dec.1.self"
    whole = scaling.site_scaling(trace, site)
    assert whole.rows is None
    monkeypatch.setattr(scaling, "SAMPLE_CELLS", 4 * 11 * 3)  # 4 heads × 11 keys × 3 rows
    part = scaling.site_scaling(trace, site)
    T = len(trace["tgt.tokens"])
    assert part.rows == (T - 3, T)
    scores = trace["dec.1.self.scores"].numpy().astype(np.float64)[:, T - 3 :]  # [H, 3, T]
    mask = trace["dec.1.self.mask"].numpy().astype(np.float64)[T - 3 :]  # [3, T]
    allowed = np.broadcast_to(np.isfinite(mask), scores.shape)
    # a block of rows is its own matrix product: equal to the batched one up to float32 rounding
    np.testing.assert_allclose(part.raw, scores[allowed], rtol=1e-6, atol=1e-6)
    entropy, top = scaling._row_stats(scores / np.sqrt(part.d_k), mask)
    np.testing.assert_allclose(part.entropy_scaled, entropy, rtol=1e-5)
    np.testing.assert_allclose(part.max_scaled, top, rtol=1e-5)
    assert part.d_k == whole.d_k
