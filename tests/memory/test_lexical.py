"""Tests for hub.memory.lexical: tokens across scripts, identifiers, stable ids, BM25 weights."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from qdrant_client import QdrantClient, models

from hub.memory.lexical import K1, query_vector, sparse_vector, token_id, tokenize


def _overlap(query: str, document: str) -> set[str]:
    return set(tokenize(query)) & set(tokenize(document))


@pytest.mark.parametrize(
    ("query", "document", "unrelated", "shared"),
    [
        ("東京 会議", "会議は東京で行います", "明日は晴れるでしょう", {"東京", "会議"}),
        ("機械学習", "機械学習のモデルを訓練する", "今日は寿司を食べた", {"機械", "械学", "学習"}),
        ("机器学习", "我们正在训练机器学习模型", "今天天气很好", {"机器", "器学", "学习"}),
        ("회의 서울", "서울에서 회의가 있습니다", "날씨가 좋네요", {"서울", "회의"}),
        ("meeting notes", "Notes from the meetings", "Lunch order for Friday", {"meet", "note"}),
        ("встреча завтра", "Встреча завтра в 10", "Погода хорошая", {"встреча", "завтра"}),
    ],
)
def test_query_overlaps_matching_document_only(
    query: str, document: str, unrelated: str, shared: set[str]
) -> None:
    assert _overlap(query, document) == shared
    assert not _overlap(query, unrelated)


def test_cjk_bigrams_and_single_character_runs() -> None:
    assert tokenize("会議は東京で") == ["会議", "議は", "は東", "東京", "京で"]
    assert tokenize("猫 と 犬") == ["猫", "と", "犬"]
    assert tokenize("会議室7731") == ["会議", "議室", "7731"]


def test_english_stopwords_dropped_and_words_stemmed() -> None:
    assert tokenize("The meetings were running late") == ["meet", "run", "late"]
    assert tokenize("the of and") == []


def test_nfkc_and_case_folding() -> None:
    assert tokenize("ＡＰＩ ＫＥＹ ７７３１") == tokenize("api key 7731") == ["api", "key", "7731"]
    assert tokenize("Straße") == tokenize("STRASSE")


def test_scripts_with_combining_marks_stay_whole() -> None:
    assert tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ("room 7731", "The code for 7731 is on the door"),
        ("3.14", "pi is about 3.14 here"),
        ("1000 users", "we have 1,000 users"),
        ("2.1.0", "deployed v2.1.0 to production"),
        ("v2", "deployed v2.1.0 to production"),
        ("python", "requires python3.11"),
        ("API_KEY_2", "set API_KEY_2 in the env"),
        ("key", "set API_KEY_2 in the env"),
        ("example.com", "mail alice@example.com today"),
        ("alice", "mail alice@example.com today"),
        ("#1234", "fixed in #1234"),
        ("1234", "fixed in #1234"),
        ("lexical.py", "see src/hub/memory/lexical.py"),
        ("github.com/org/repo", "cloned https://github.com/org/repo/issues/12."),
        ("issue 12", "cloned https://github.com/org/repo/issues/12."),
        ("user name", "call getUserName()"),
        ("http server", "an HTTPServer instance"),
        ("sha256", "hash with sha256"),
        ("7731", "ＲＯＯＭ７７３１"),
    ],
)
def test_numbers_and_identifiers_match(query: str, document: str) -> None:
    assert _overlap(query, document)


def test_compounds_keep_the_whole_and_useful_parts() -> None:
    assert tokenize("API_KEY_2") == ["api_key_2", "api", "key", "2"]
    assert tokenize("v2.1.0") == ["v2.1.0", "2.1.0", "2.1", "v2"]
    assert tokenize("3.14") == ["3.14"]
    assert tokenize("user@example.com") == [
        "user@example.com",
        "user",
        "example.com",
        "exampl",
        "com",
    ]
    url = "https://docs.example.com/api/v1?page=2"
    tokens = tokenize(url)
    assert tokens[0] == url
    assert {"docs.example.com", "api", "v1", "page", "2"} <= set(tokens)
    assert tokenize("#1234") == ["#1234", "1234"]
    assert set(tokenize("src/hub/memory.py")) >= {"src/hub/memory.py", "hub", "memory.py"}


def test_numbers_are_not_cut_into_digits() -> None:
    assert "1" not in tokenize("v2.1.0")
    assert "14" not in tokenize("3.14")
    assert _overlap("room 7731", "room 7732") == {"room"}


def test_token_ids_are_stable_literals() -> None:
    assert token_id("東京") == 3179978821
    assert token_id("7731") == 319429666


def test_token_ids_are_the_same_in_another_process() -> None:
    code = "from hub.memory.lexical import sparse_vector; print(sparse_vector('東京 7731 meeting'))"
    for seed in ("0", "12345"):
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert result.stdout.strip() == str(sparse_vector("東京 7731 meeting"))


def test_sparse_vector_shape() -> None:
    indices, values = sparse_vector("Deploy v2.1.0 to 東京 on 2024-05-01; deploy again later.")
    assert indices == sorted(set(indices))
    assert len(values) == len(indices)
    assert all(0.0 < value < K1 + 1.0 for value in values)


def test_repeats_saturate_and_length_normalizes() -> None:
    once = dict(zip(*sparse_vector("meeting"), strict=True))
    thrice = dict(zip(*sparse_vector("meeting meeting meeting"), strict=True))
    padded = dict(zip(*sparse_vector("meeting " + "filler " * 500), strict=True))
    key = token_id("meet")
    assert list(thrice) == [key]
    assert once[key] < thrice[key] < 3 * once[key]
    assert padded[key] < once[key]


def test_query_vector_is_binary() -> None:
    indices, values = query_vector("meeting meeting room 7731")
    assert indices == sorted(token_id(t) for t in ("meet", "room", "7731"))
    assert values == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("text", ["", "   \n\t", "!!! ... ---", "the of and"])
def test_empty_text_gives_empty_vectors(text: str) -> None:
    assert sparse_vector(text) == ([], [])
    assert query_vector(text) == ([], [])


def test_large_texts_tokenize() -> None:
    prose = "Deploy v2.1.0 of API_KEY_2 to https://x.example.com/a 会議は東京で 7731. " * 1500
    assert len(prose) > 100_000
    assert len(tokenize(prose)) > 10_000
    blob = "QUJD" * 25_000 + "/a.b-c" * 100  # one 100 KB run without spaces
    assert tokenize(blob)
    assert sparse_vector(blob)[0]


def test_ranks_in_qdrant_with_idf_modifier() -> None:
    """End to end on qdrant-client's in-process engine: the IDF modifier does the rest."""
    docs = [
        "会議は東京で行います",
        "The door code for room 7731 changed",
        "我们正在训练机器学习模型",
        "Released v2.1.0 with the new API_KEY_2 setting",
        "Lunch is at noon in room 12",
    ]
    client = QdrantClient(":memory:")
    sparse = models.SparseVectorParams(modifier=models.Modifier.IDF)
    client.create_collection("t", vectors_config={}, sparse_vectors_config={"lexical": sparse})
    points = []
    for number, doc in enumerate(docs):
        indices, values = sparse_vector(doc)
        vector = models.SparseVector(indices=indices, values=values)
        points.append(models.PointStruct(id=number, vector={"lexical": vector}))
    client.upsert("t", points)
    for query, expected in [("東京 会議", 0), ("room 7731", 1), ("机器学习", 2), ("2.1.0", 3)]:
        indices, values = query_vector(query)
        vector = models.SparseVector(indices=indices, values=values)
        hits = client.query_points("t", query=vector, using="lexical", limit=1).points
        assert [hit.id for hit in hits] == [expected], query
