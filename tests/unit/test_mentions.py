"""Which people a text names (hub/memory/mentions.py): recall's people retriever reads it."""

from __future__ import annotations

from hub.memory.mentions import Mentions, Named

PEOPLE = Mentions(
    [
        (("caroline",), "Caroline"),
        (("sam-lee", "sam-old"), "Sam Lee"),  # merged into sam-lee: both ids
        (("sam-ray",), "Sam Ray"),
        (("sato",), "佐藤 陽翔"),
        (("al",), "Al Smith"),
    ]
)


def test_display_and_first_names_are_matched_as_whole_words() -> None:
    assert PEOPLE.named_in("When did Caroline go to the support group?") == ("caroline",)
    assert PEOPLE.named_in("what did CAROLINE's sister say") == ("caroline",)
    assert PEOPLE.named_in("Carolines and Carolinea") == ()
    assert PEOPLE.named_in("Samantha was there") == ()


def test_a_full_name_names_one_person_and_a_shared_first_name_names_both() -> None:
    assert PEOPLE.named_in("Ask Sam Lee about it") == ("sam-lee", "sam-old")
    assert PEOPLE.named_in("ask sam about it") == ("sam-lee", "sam-old", "sam-ray")


def test_cjk_names_match_inside_running_text_and_short_first_names_do_not_count() -> None:
    assert PEOPLE.named_in("佐藤 陽翔さんに送ってください") == ("sato",)
    assert PEOPLE.named_in("佐藤さんの担当は？") == ("sato",)
    assert PEOPLE.named_in("Al said") == ()  # "Al" alone is too short to mean Al Smith
    assert PEOPLE.named_in("al smith said") == ("al",)


def test_nobody_known_names_nobody() -> None:
    assert Mentions([]).named_in("Caroline") == ()
    assert PEOPLE.named_in("") == ()


def test_a_query_is_embedded_with_the_names_it_holds_in_the_first_person() -> None:
    # The people retriever finds whose words; the embedding reads what about them, as the
    # person says it of themselves.
    assert PEOPLE.find("What did Caroline research?") == Named(
        ("caroline",), "What did I research?"
    )
    assert PEOPLE.find("What is CAROLINE’s identity?").unnamed == "What is my identity?"
    assert PEOPLE.find("Ask Sam Lee and sam").unnamed == "Ask I and I"
    assert PEOPLE.find("Carolines and Samantha").unnamed == "Carolines and Samantha"
    assert PEOPLE.find("Al said").unnamed == "Al said"  # names nobody: as written
    assert PEOPLE.find("佐藤さんの担当は？") == Named(("sato",), "佐藤さんの担当は？")  # unmeasured
