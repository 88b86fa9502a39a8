"""LoCoMo conversations as the benchmarks read them: each turn "Speaker: text" (plus
"[image: caption]" when it shared a picture) at its session's date, and each question of
categories 1-4 with the turns its evidence names (see `recall_locomo.py`'s docstring)."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    text: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Question:
    category: int
    text: str
    evidence: frozenset[str]  # dia_ids of turns of this conversation
    unmapped: tuple[str, ...]  # evidence entries that name no turn


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]


def parse_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), _DATE_FORMAT).replace(tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [image: {caption}]" if caption else text


def normalize_evidence(raw: list[str], known: set[str]) -> tuple[set[str], list[str]]:
    """The turns an evidence list names, and the entries that name none."""
    found: set[str] = set()
    unmapped: list[str] = []
    for entry in raw:
        ids = [f"D{s}:{t}" for s, t in _DIA_ID.findall(entry)]
        if not ids:
            unmapped.append(entry)
        for dia_id in ids:
            if dia_id in known:
                found.add(dia_id)
            else:
                unmapped.append(dia_id)
    return found, unmapped


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = sorted(
        (int(m.group(1)), key) for key in data if (m := _SESSION.fullmatch(key)) and data[key]
    )
    turns = [
        Turn(raw["dia_id"], turn_text(raw), parse_date(data[f"{key}_date_time"]))
        for _n, key in sessions
        for raw in data[key]
    ]
    known = {t.dia_id for t in turns}
    questions = []
    for qa in data["qa"]:
        if qa["category"] in CATEGORIES:
            evidence, unmapped = normalize_evidence(qa.get("evidence") or [], known)
            if not evidence and not unmapped:
                unmapped = ["<no evidence>"]
            questions.append(
                Question(qa["category"], qa["question"], frozenset(evidence), tuple(unmapped))
            )
    return Conversation(path.stem, turns, questions)


def load_all(data: Path, only: str) -> list[Conversation]:
    files = sorted(data.glob("*.json"))
    if only:
        wanted = {name.strip() for name in only.split(",")}
        files = [f for f in files if f.stem in wanted]
    if not files:
        sys.exit(f"no conversation files in {data}")
    return [load_conversation(f) for f in files]
