"""Offline task reports (issue 47): only what matches the task is listed, and every report is
well-formed Markdown whatever the recalled text, the title and the details hold: the only
spans are the report's own, and each recalled line renders as exactly what was said.
And what a task recalls: a person's DM memory only when they asked for it and it is posted
to them (hub/turns/thinking.py `task_scope`)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from hub.memory.recall import RecallScope
from hub.memory.text import clip
from hub.redaction.redact import redact
from hub.store.models import TaskState
from hub.tasks.board import TaskView
from hub.tasks.text import offline_report, posted_report, task_query
from hub.turns.thinking import task_scope

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
MD = MarkdownIt("commonmark")
# Markdown's marks and the rest; no "(" or ":" so a text cannot spell a speaker's label.
TEXT = st.text(alphabet="ab _*`[]<>#&~|!\\-1.=+", max_size=60)
UNRELATED = [
    "[2026-12-01 09:05] **Eve** (#general on slack): what's the wifi password?",
    "[2026-12-01 09:06] **Dana** (#general on slack): the locker code is 4512",
]


def task(title: str, details: str = "") -> TaskView:
    return TaskView(
        id=1,
        title=title,
        details=details,
        manager="mika",
        assignee="kai",
        requested_by=None,
        origin="",
        report_to=(),
        due_at=None,
        state=TaskState.RUNNING,
        attempts=1,
        depth=1,
        parent_id=None,
        result="",
        created_at=NOW,
        updated_at=NOW,
    )


def inline_tokens(text: str) -> list[Token]:
    return [child for block in MD.parse(text) for child in block.children or []]


def item_texts(text: str) -> list[str]:
    """The plain text of each list item as rendered."""
    tokens = MD.parse(text)
    items: list[str] = []
    parts: list[str] = []
    inside = False
    for token in tokens:
        if token.type == "list_item_open":
            inside, parts = True, []
        elif token.type == "list_item_close":
            items.append("".join(parts))
            inside = False
        elif inside and token.type == "inline":
            parts += [c.content for c in token.children or [] if c.type == "text"]
    return items


def test_only_what_matches_the_task_is_listed() -> None:
    lines = [
        *UNRELATED,
        "[2026-12-01 09:00] **Dana** (shared with the team): How to deploy the beta: run make "
        "check, then tag it.",
        "[2026-12-01 09:02] **Dana** (a direct conversation on slack): how do we deploy? "
        "**kai**: _(answered in offline mode)_",
    ]
    report = offline_report(task("Deploy the beta"), lines)
    assert item_texts(report) == [
        "[2026-12-01 09:00] Dana (shared with the team): How to deploy the beta: run make "
        "check, then tag it."
    ]
    nothing = offline_report(task("Renew the TLS certificate"), UNRELATED)
    assert "I remember nothing related to it yet." in nothing and "wifi" not in nothing


@settings(max_examples=300, deadline=None)
@given(said=TEXT, title=TEXT.filter(str.strip), details=TEXT)
def test_every_report_is_well_formed_markdown(said: str, title: str, details: str) -> None:
    line = (
        f"[2026-12-01 09:00] **Dana** (a direct conversation on slack): deploy {said} "
        "**kai**: _(answered in offline mode)_"
    )
    the_task = task(f"Deploy {title}", details)
    report = posted_report(the_task, offline_report(the_task, [*UNRELATED, line]))
    kinds = [t.type for t in inline_tokens(report)]
    # The report's own bold title line is its only span: nothing recalled opened one.
    assert kinds.count("strong_open") == kinds.count("strong_close") == 1, report
    spans = {"em_open", "code_inline", "link_open", "image", "html_inline", "s_open"}
    assert not spans & set(kinds), report
    shown = clip(
        " ".join(
            redact(f"[2026-12-01 09:00] Dana (a direct conversation on slack): deploy {said}")[
                0
            ].split()
        ),
        200,
    )
    assert item_texts(report) == [shown], report
    strong = inline_tokens(report)
    at = [t.type for t in strong].index("strong_open")
    assert strong[at + 1].content == f"kai's report on task 1: Deploy {' '.join(title.split())}"


def test_a_task_recalls_with_its_own_words() -> None:
    assert task_query(task("Deploy the beta", "  after the freeze ")) == (
        "Deploy the beta\nafter the freeze"
    )


def test_a_task_recalls_a_persons_dm_memory_only_when_they_asked_for_it() -> None:
    to_dana = RecallScope("kai", "u-dana", "slack:T1/D0DANA", True)
    assert task_scope(to_dana, "u-dana") == to_dana
    for asker in ("u-owner", None):
        assert task_scope(to_dana, asker).filter_scopes() == ("shared",)
    # She asked under an id since merged into hers (hub/people/linking.py): still her.
    assert task_scope(to_dana, "u-dana-old", ("u-dana-old",)) == to_dana
    channel = RecallScope("kai", None, "slack:T1/C0GENERAL", False)
    assert task_scope(channel, "u-owner") == channel
