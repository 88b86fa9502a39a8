"""An Anima's model and timezone: its own in anima.toml, else the hub's (hub/animas.py), the
one lookup every part asks."""

from __future__ import annotations

from pathlib import Path

from hub.animas import Anima, AnimaFile, effective_model, effective_timezone
from hub.settings import HubSection, LLMSection


def anima(**spec: str) -> Anima:
    return Anima(AnimaFile(name="aria", role="assistant", **spec), "", Path("animas/aria"))


def test_its_own_model_else_the_hubs_else_none() -> None:
    hub = LLMSection(model="openai/gpt-4o-mini")
    assert effective_model(anima(model="ollama_chat/llama3"), hub) == "ollama_chat/llama3"
    assert effective_model(anima(), hub) == "openai/gpt-4o-mini"
    assert effective_model(None, hub) == "openai/gpt-4o-mini"  # an Anima no longer there
    assert effective_model(anima(), LLMSection()) == ""  # the offline mode


def test_its_own_timezone_else_the_hubs() -> None:
    hub = HubSection(timezone="Europe/Paris")
    assert effective_timezone(anima(timezone="Asia/Tokyo"), hub) == "Asia/Tokyo"
    assert effective_timezone(anima(), hub) == "Europe/Paris"
    assert effective_timezone(None, hub) == "Europe/Paris"
    assert effective_timezone(anima(), HubSection()) == "UTC"
