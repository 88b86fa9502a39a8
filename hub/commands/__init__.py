"""Admin and user commands: `/anima …` and `/whoami`, with RBAC and the audit log (DESIGN §2).

- `parse`: typed text into a `Command` (`parse_command`), `COMMAND_NAMES`, `USAGE`.
- `state`: `AnimaStates`: pause, resume, `is_paused`, and holding messages for paused Animas.
- `handler`: `CommandService`: runs a persisted command once and answers it.

The package itself exports only the parser: adapters reach it through `hub.adapter`, and
importing the handler here would make that contract pull in the whole hub.
"""

from hub.slash import COMMAND_NAMES, USAGE, is_command_text, parse_command

__all__ = ["COMMAND_NAMES", "USAGE", "is_command_text", "parse_command"]
