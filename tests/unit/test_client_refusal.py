"""What the CLI prints when the hub refuses a request (`hub.cli.client.refusal`): the hub's own
words, and for a request that failed validation each field with its problem, not a list's
repr."""

from __future__ import annotations

import httpx

from hub.cli.client import refusal


def test_a_refusal_is_the_hubs_detail() -> None:
    assert refusal(httpx.Response(404, json={"detail": "no Anima named 'x'"})) == (
        "no Anima named 'x'"
    )


def test_a_validation_error_names_each_field() -> None:
    body = {
        "detail": [
            {"loc": ["query", "limit"], "msg": "Input should be greater than or equal to 1"},
            {"loc": ["body", "task", "title"], "msg": "Field required"},
        ]
    }
    assert refusal(httpx.Response(422, json=body)) == (
        "limit: Input should be greater than or equal to 1; task.title: Field required"
    )


def test_a_body_that_is_not_json_is_shown_as_text() -> None:
    assert refusal(httpx.Response(502, text="Bad Gateway")) == "Bad Gateway"
