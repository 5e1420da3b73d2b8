"""Issue 36: malformed GGUF files (truncated, lying counts, a 2 GB string claimed, huge dimensions, unknown type ids,
overlapping tensors, …) are refused in one line before anything of the claimed size is allocated: every case is
opened in ONE memory-limited child process (hostile_files.load_in_child), where a crash shows as the child's
signal, a hang as its timeout, an allocation as its peak memory."""

from __future__ import annotations

import pytest

from tests.support import hostile_files as h
from tests.support.gguf_tiny import write_gguf
from tests.support.hostile_gguf import gguf_cases

# case -> words the one line must hold
EXPECTED = {
    "gguf-empty-header": "truncated",
    "gguf-version-1": "version 1",
    "gguf-big-endian": "big-endian",
    "gguf-lying-tensor-count": "1,000,000,000,000 tensors",
    "gguf-lying-kv-count": "metadata entries",
    "gguf-2gb-string": "2,147,483,648 bytes",
    "gguf-2gb-key": "2,147,483,648 bytes",
    "gguf-huge-array": "1,099,511,627,776 items",
    "gguf-nested-array": "array of value type 9",
    "gguf-unknown-value-type": "value type 77",
    "gguf-unknown-ggml-type": "ggml type id 999",
    "gguf-huge-dims": "far beyond any model",
    "gguf-many-dims": "1,073,741,824 dimensions",
    "gguf-zero-dim": "dimension of 0,",
    "gguf-data-missing": "truncated",
    "gguf-overlapping": "overlap",
    "gguf-misaligned": "alignment",
    "gguf-odd-alignment": "power of two",
    "gguf-duplicate-tensor": "described twice",
    "gguf-partial-block": "Q4_0 blocks of 32",
    "gguf-long-name": "tensor name",
    "gguf-unknown-architecture": "'mamba'",
    "gguf-huge-config": "d_model 2,147,483,648 is more than attnlab handles",
    "gguf-odd-rope-freqs": "matches no Llama 3 rope scaling",
    "gguf-truncated": "truncated",
    "gguf-truncated-header": "truncated",
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf")
    return h.load_in_child(gguf_cases(d, write_gguf(d, "llama", "Q4_0")))


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_malformed_gguf_is_refused_in_one_line_in_bounds(outcomes, case):
    message = h.assert_refused_in_bounds(outcomes[case], EXPECTED[case])
    assert "\n" not in message and "Traceback" not in message and "gguf" in message.lower(), message


def test_every_built_case_is_checked(tmp_path):
    assert set(gguf_cases(tmp_path)) | {"gguf-truncated", "gguf-truncated-header"} == set(EXPECTED)
