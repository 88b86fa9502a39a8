"""The synthetic world of `priming_latency.py`: a seeded generator of memory items (turns,
facts, procedures, important notes in English, Japanese and Chinese, over 50 people and 8
channels) and of the queries people send, with the same distributions, and the people's
profiles as the hub writes them.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hub.markdown_files import write_document
from hub.memory.documents import IMPORTANT_MARK, Layer, MemoryItem, episode_path
from hub.memory.profiles import LEARNED
from hub.memory.recall import RecallScope
from hub.memory.slugs import slug
from hub.people.identity import slugify

ANIMA = "aria"
DAYS = 90
LINK_SHARE = 0.6  # notes about a project that [[link]] its page


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
