"""The registry's argument check (hub/model/tool_registry.py): no argument a tool does not declare,
and no
object where an object belongs given as something else; scalars stay lenient."""

from __future__ import annotations

from typing import Any

from hub.model.tool_registry import Tool, ToolContext, ToolRegistry, check_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "window": {"type": "object", "properties": {"since": {"type": "string"}}},
        "tags": {"type": "array"},
    },
}


def test_undeclared_and_misshapen_arguments_are_named() -> None:
    assert check_arguments(SCHEMA, {"query": "x", "window": {"since": "2026"}}) is None
    assert check_arguments(SCHEMA, {"query": 1, "window": None}) is None  # lenient scalars
    unknown = check_arguments(SCHEMA, {"query": "x", "scopes": ["person:dana"]})
    assert unknown is not None and "no argument 'scopes'" in unknown
    assert "no argument 'window.until'" in str(check_arguments(SCHEMA, {"window": {"until": 1}}))
    assert "window must be a JSON object" in str(check_arguments(SCHEMA, {"window": "all"}))
    assert "tags must be a JSON array" in str(check_arguments(SCHEMA, {"tags": "a,b"}))
    assert check_arguments({"type": "object"}, {"anything": 1}) is None


async def _ran(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"ran for {ctx.person_id}"


async def test_a_refused_call_never_reaches_the_handler() -> None:
    registry = ToolRegistry()
    registry.register(Tool("note", "", SCHEMA, _ran))
    ctx = ToolContext("aria", "mallory", False, "c", "UTC")
    assert await registry.call("note", '{"query": "x"}', ctx) == "ran for mallory"
    refused = await registry.call("note", '{"query": "x", "person": "dana"}', ctx)
    assert refused.startswith("error: note: no argument 'person'")
    assert "no argument changes whose memory" in refused
