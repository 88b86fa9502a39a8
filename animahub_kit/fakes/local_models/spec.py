"""What a fake local server is, read from the command that starts the real one.

README gives, for each server, the one command that starts it; `spec_from_commands` reads
those words the way the server does (its default port, the model it serves, the flags that
turn tool calling on, a key it demands), so a fake built from them answers as that server
would: a README that dropped `--enable-auto-tool-choice`, or named another port in its
hub.toml lines, fails its test.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

VLLM, LM_STUDIO, LLAMA_CPP, OLLAMA = "vllm", "lmstudio", "llamacpp", "ollama"
DEFAULT_PORTS = {VLLM: 8000, LM_STUDIO: 1234, LLAMA_CPP: 8080, OLLAMA: 11434}


@dataclass(frozen=True)
class ServerSpec:
    kind: str  # VLLM, LM_STUDIO, LLAMA_CPP or OLLAMA
    port: int  # where the real server listens with these commands
    models: tuple[str, ...] = ()  # the names it answers to; () = any (llama-server)
    api_key: str | None = None  # started with --api-key: requests must bear it
    tools: bool = True  # False: a request that offers tools is refused, as the server does

    def serves(self, model: str) -> bool:
        if not self.models:
            return True
        return ollama_tag(model) in self.models if self.kind == OLLAMA else model in self.models


def ollama_tag(name: str) -> str:
    """Ollama's full name of a model: `llama3.1` is `llama3.1:latest`."""
    return name if ":" in name else f"{name}:latest"


def _option(words: list[str], *names: str) -> str | None:
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _port(words: list[str], kind: str) -> int:
    given = _option(words, "--port")
    return int(given) if given else DEFAULT_PORTS[kind]


def _vllm(words: list[str]) -> ServerSpec:
    # vllm serve MODEL [--served-model-name NAME] [--port P] [--api-key K]
    #   [--enable-auto-tool-choice --tool-call-parser PARSER]
    model = words[2]
    name = _option(words, "--served-model-name") or model
    tools = (
        "--enable-auto-tool-choice" in words and _option(words, "--tool-call-parser") is not None
    )
    api_key = _option(words, "--api-key")
    return ServerSpec(VLLM, _port(words, VLLM), (name,), api_key, tools)


def _llama_cpp(words: list[str]) -> ServerSpec:
    # llama-server -hf REPO[:QUANT] | -m FILE [--port P] [--jinja] [--api-key K]
    # --jinja (chat templates, which tool calling needs) is on by default since late 2025;
    # the fake is an older build, which refuses tools without it.
    return ServerSpec(
        LLAMA_CPP, _port(words, LLAMA_CPP), (), _option(words, "--api-key"), "--jinja" in words
    )


def spec_from_commands(commands: list[str]) -> ServerSpec:
    """The fake of the server these shell commands (lines, `&&` and `# comments` allowed)
    start, and load a model into."""
    parts = [part for c in commands for line in c.splitlines() for part in line.split("&&")]
    lines = [words for part in parts if (words := shlex.split(part, comments=True))]
    for words in lines:
        if words[:2] == ["vllm", "serve"]:
            return _vllm(words)
        if words[0] == "llama-server":
            return _llama_cpp(words)
    heads = {tuple(words[:2]): words for words in lines}
    if ("lms", "server") in heads:
        loaded = tuple(w[2] for w in lines if w[:2] == ["lms", "load"])
        return ServerSpec(LM_STUDIO, _port(heads[("lms", "server")], LM_STUDIO), loaded)
    if ("ollama", "serve") in heads or ("ollama", "pull") in heads:
        pulled = tuple(ollama_tag(w[2]) for w in lines if w[:2] == ["ollama", "pull"])
        return ServerSpec(OLLAMA, DEFAULT_PORTS[OLLAMA], pulled)
    raise ValueError(f"no known model server is started by {commands!r}")
