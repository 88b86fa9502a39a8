"""Admin and user commands: `/anima …` and `/whoami`, with RBAC and the audit log (DESIGN §2).

- `parse`: typed text into a `Command` (`parse_command`), `COMMAND_NAMES`, `USAGE`.
- `state`: `AnimaStates`: pause, resume, `is_paused`, and holding messages for paused Animas.
- `handler`: `CommandService`: runs a persisted command once and answers it.
"""

from hub.commands.handler import CommandService, HeartbeatTrigger
from hub.commands.parse import COMMAND_NAMES, USAGE, is_command_text, parse_command
from hub.commands.state import HELD, AnimaStates, paused_notice

__all__ = [
    "COMMAND_NAMES",
    "HELD",
    "USAGE",
    "AnimaStates",
    "CommandService",
    "HeartbeatTrigger",
    "is_command_text",
    "parse_command",
    "paused_notice",
]
