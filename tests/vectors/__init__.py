"""Known byte vectors the tests decode: one record of each magic, written by kafka-python's codec.

``batch.bin``  record batch v2 (magic 2) at base offset 0: one record, null key, value ``a``, CreateTime 1000,
               no producer id, partition leader epoch 0, no compression (69 bytes)
``v1.bin``     legacy message v1 at offset 0: null key, value ``hello``, CreateTime 1000 (39 bytes)
``v0.bin``     legacy message v0 at offset 0: null key, value ``hello`` (31 bytes)

The files are committed; ``python -m tests.vectors.generate`` writes them again from kafka-python (a real client's
codec, independent of Samsa's), and ``tests/vectors/test_vectors.py`` checks both that they still match and, when
the spec folder sits beside the project, that they equal its vectors.
"""

from __future__ import annotations

from pathlib import Path

VECTORS = Path(__file__).resolve().parent
