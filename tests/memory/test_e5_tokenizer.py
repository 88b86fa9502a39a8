"""The model's tokenizer (SentencePiece over the file's vocabulary): the same ids as Hugging
Face's Unigram on the real vocabulary (which the hub used before, at ~227 MB a process), an
unknown character as the unknown piece, and pieces that are control ids never matched."""

from __future__ import annotations

import numpy as np
from tokenizers import Tokenizer
from tokenizers.models import Unigram as HfUnigram

from hub.memory.e5_file import E5File, bundled_model_path
from hub.memory.e5_tokenizer import unigram_tokenizer

TEXTS = [
    "query: When did Caroline go to the LGBTQ support group last Saturday?",
    "passage: 出張はどこですか？ 大阪で打ち合わせの予定です。",
    "passage: 我们下周去北京出差，已经订好了酒店。",
    "passage: Ünïcödé ｆｕｌｌｗｉｄｔｈ ①② ﾃｽﾄ, emoji 😀🎉 ✓ and \x00 control 𓀀",
    "passage: room 7731, code AX-42_b, v1.2.3, https://example.com/a?b=c",
]


def test_the_best_split_an_unknown_character_and_control_pieces() -> None:
    pieces = [b"<s>", b"<unk>", "▁a".encode(), b"b", b"ab", "▁ab".encode(), b"c"]
    toy = unigram_tokenizer(pieces, [0.0, 0.0, -1.0, -2.0, -2.5, -4.0, -1.0], 1, (0,))
    assert toy.encode("▁ab") == [2, 3]  # -3.0 beats "▁ab" alone at -4.0: best, not longest
    assert toy.encode("ab") == [4]  # "ab" (-2.5) beats "a" unknown + "b"
    assert toy.encode("▁a?c") == [2, 1, 6]  # "?" is no piece: the unknown one
    assert toy.encode("<s>") == [1]  # a control piece is never matched in a text
    assert toy.encode("") == []


def test_the_same_ids_as_hugging_faces_unigram_on_the_models_vocabulary() -> None:
    f = E5File(bundled_model_path())
    vocab = f.vocabulary()
    normalized = [f.normalized(t) for t in TEXTS]
    # Only the pieces these texts contain, and the lowest-scoring one (the unknown's score is
    # its score - 10): the whole vocabulary would cost this process Hugging Face's ~227 MB.
    pieces_of = [piece.decode() for piece in vocab.pieces]
    lowest = int(np.argmin(vocab.scores))
    unk = vocab.unk
    kept = [
        i
        for i, piece in enumerate(pieces_of)
        if i in (unk, lowest) or (i > unk and any(piece in t for t in normalized))
    ]
    hf = Tokenizer(
        HfUnigram(
            [(pieces_of[i], vocab.scores[i]) for i in kept],
            unk_id=kept.index(unk),
            byte_fallback=False,
        )
    )
    for text, ready in zip(TEXTS, normalized, strict=True):
        theirs = [kept[i] for i in hf.encode(ready, add_special_tokens=False).ids]
        assert f.content_ids(text) == theirs, text
        assert len(theirs) > 5
    assert unk in f.content_ids(TEXTS[3])  # the test reaches the unknown piece
