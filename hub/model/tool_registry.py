"""The tool registry the LLM calls into. Later issues register memory, delegation, ..."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

log = logging.getLogger(__name__)
# Whose data a tool reaches comes from the ToolContext, never from the model's arguments
# (DESIGN §7.3): an argument a tool does not declare is refused, not silently dropped, so
# a model talked into "scopes": ["person:dana"] learns that no argument can widen it.
_NOT_WIDENED = (
    "tools act only for the person and conversation of this turn; no argument changes "
    "whose memory, files or rights they reach"
)
_SHAPES: dict[str, type] = {"object": dict, "array": list}


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is asking: tools with side effects check the caller's rights against this."""

    anima: str
    person_id: str | None
    person_is_admin: bool
    conversation: str
    timezone: str
    channel_key: str = ""
    is_dm: bool = False
    turn: str = ""  # the inbox id of the turn: what a tool's side effect is keyed by
    task_id: int | None = None  # the task this turn works on (hub/tasks/runner.py)
    # Where a turn nobody asked for posts (a schedule's targets, a task's): the hub's own
    # list, which a tool may name again (hub/tasks/addressing.py); a person's turn has none.
    addressable: tuple[str, ...] = ()


ToolHandler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]
# Whether a tool is offered in a turn (e.g. read_attachment: only where there are files).
ToolAvailable = Callable[[ToolContext], bool]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object
    handler: ToolHandler
    available: ToolAvailable | None = None  # None: in every turn

    def offered(self, ctx: ToolContext | None) -> bool:
        return self.available is None or ctx is None or self.available(ctx)

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self, ctx: ToolContext | None = None) -> list[dict[str, Any]]:
        """The tools offered to the model; with `ctx`, only those available in that turn."""
        tools = (self._tools[name] for name in self.names())
        return [tool.schema() for tool in tools if tool.offered(ctx)]

    async def call(self, name: str, arguments: str, ctx: ToolContext) -> str:
        """Run a tool; failures come back as text the model can read and act on."""
        tool = self._tools.get(name)
        if tool is None or not tool.offered(ctx):
            offered = [n for n in self.names() if self._tools[n].offered(ctx)]
            log.info("refused %s for %s: not a tool of this turn", name, ctx.person_id)
            return f"error: no tool named {name!r} here; available: {', '.join(offered)}"
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"error: arguments are not valid JSON ({exc.msg})"
        if not isinstance(args, dict):
            return "error: arguments must be a JSON object"
        problem = check_arguments(tool.parameters, args)
        if problem is not None:
            log.info("refused %s%s for %s: %s", name, args, ctx.person_id, problem)
            return f"error: {name}: {problem}"
        return await tool.handler(args, ctx)


def check_arguments(schema: dict[str, Any], args: dict[str, Any], at: str = "") -> str | None:
    """What is wrong with `args` against an object schema's declared properties: an
    undeclared argument, or an object or array given as something else (scalars are left
    to the handlers, which read them leniently, e.g. 1 for "1"). None when they fit."""
    declared = schema.get("properties")
    if not isinstance(declared, dict):
        return None  # a schema that declares nothing constrains nothing
    for key, value in args.items():
        spec = declared.get(key)
        if spec is None:
            known = ", ".join(declared) or "none"
            return f"no argument '{at}{key}' (arguments: {known}); {_NOT_WIDENED}"
        shape = _SHAPES.get(str(spec.get("type")))
        if shape is not None and value is not None and not isinstance(value, shape):
            return f"{at}{key} must be a JSON {spec['type']}, not {json.dumps(value)}"
        if shape is dict and isinstance(value, dict):
            problem = check_arguments(spec, value, f"{at}{key}.")
            if problem is not None:
                return problem
    return None


async def _current_time(args: dict[str, Any], ctx: ToolContext) -> str:
    zone_name = str(args.get("timezone") or ctx.timezone or "UTC")
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"error: unknown timezone {zone_name!r}"
    return datetime.now(zone).strftime(f"%Y-%m-%d %H:%M:%S %A ({zone_name})")


CURRENT_TIME = Tool(
    name="current_time",
    description="The current date and time, in the given IANA timezone or the Anima's own.",
    parameters={
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": "e.g. Asia/Tokyo"}},
    },
    handler=_current_time,
)


def builtin_tools() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(CURRENT_TIME)
    return registry
