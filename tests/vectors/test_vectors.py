"""The committed vectors are what kafka-python writes, and equal the spec's vectors when those are present."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.vectors import VECTORS
from tests.vectors.generate import vectors

SPEC_VECTORS = Path(__file__).resolve().parents[3] / "shared" / "spec" / "vectors"


@pytest.mark.parametrize("name", ["batch.bin", "v1.bin", "v0.bin"])
def test_committed_vector_is_kafka_python_output(name: str) -> None:
    assert (VECTORS / name).read_bytes() == vectors()[name]


@pytest.mark.skipif(not SPEC_VECTORS.exists(), reason="../shared/spec/vectors is absent")
@pytest.mark.parametrize("name", ["batch.bin", "v1.bin", "v0.bin"])
def test_committed_vector_equals_the_spec(name: str) -> None:
    assert (VECTORS / name).read_bytes() == (SPEC_VECTORS / name).read_bytes()
