"""``agentgym serve-policy``: a model behind an OpenAI-compatible endpoint that records token-exact traces.

    agentgym serve-policy --model smollm2-135m-instruct --api-key s3cret --traces traces.jsonl
    agentgym serve-policy --model runs/quickstart -c configs/quickstart.yaml engine.decode=static

Any agent points its OpenAI client at it (``base_url=http://127.0.0.1:8000/v1``). The API key is
the secret, optionally followed by ``:<episode name>``; each name is an episode of its own
(calls without a name share the episode ``default``). ``POST /agentgym/episode/finish`` (same key,
optional body ``{"reward": 1.0, "success": true}``) ends an episode and appends its trajectory --
every prompt and sampled token, log-probs, segments where the agent's history broke -- to
``--traces``; episodes still open when the server stops are written then.
"""
from __future__ import annotations

import hmac
import json
import secrets
import sys
import threading
from pathlib import Path
from typing import Any

import click

from agentgym_core import AgentGymError


def standalone_server(engine: Any, chat_template: str | None, *, secret: str, traces: str | None,
                      max_new_tokens: int, max_context: int | None, model_name: str, host: str, port: int) -> Any:
    """A :class:`~agentgym_external.server.PolicyServer` opening an episode per name under *secret*."""
    from agentgym_core import ChatFormat, GenerationBatcher, Trajectory

    from .episode import Limits, PolicyEpisode, Sampling
    from .prompt import PromptRenderer
    from .server import PolicyServer

    chat = ChatFormat(engine.tokenizer, chat_template)
    renderer = PromptRenderer(chat)
    batchers: list[GenerationBatcher] = []

    async def generate(request: Any) -> Any:  # on the endpoint's own event loop
        if not batchers:
            batchers.append(GenerationBatcher(engine))
        return await batchers[0].generate(request)

    class Standalone(PolicyServer):
        written = 0
        write_lock = threading.Lock()

        def episode_name(self, key: str) -> str | None:
            given, _, name = key.partition(":")
            return (name or "default") if hmac.compare_digest(given.encode(), secret.encode()) else None

        def resolve_key(self, key: str) -> Any:
            name = self.episode_name(key)
            if name is None:
                return None
            episode = PolicyEpisode(name, renderer, generate, key=key, limits=Limits(
                max_new_tokens=max_new_tokens, max_context=max_context), sampling=Sampling(
                stop_strings=chat.stop_strings, stop_token_ids=chat.stop_token_ids, from_request=True))
            with self._lock:
                return self.episodes.setdefault(key, episode)

        def finish(self, episode: Any, body: dict[str, Any]) -> dict[str, Any]:
            self.close(episode.key)
            traj = Trajectory(episode_id=episode.name, env_name="external", task_id=0, group_id=0, token_ids=[],
                              loss_mask=[], logprobs=[], prompt_len=0, end_reason="returned")
            episode.fill(traj)
            if "reward" in body or "success" in body:
                from .runner import interpret

                traj.score, traj.success = interpret(body if "reward" in body else bool(body["success"]))
            if traces:
                with self.write_lock, open(traces, "a", encoding="utf-8") as f:
                    f.write(json.dumps(traj.to_dict(), ensure_ascii=False) + "\n")
                    self.written += 1
            from agentgym_core import training_segments

            return {"episode": episode.name, "calls": len(traj.turns), "segments": len(training_segments(traj)),
                    "prefix_breaks": episode.trace.prefix_breaks, "tokens": len(traj.token_ids),
                    "generated": traj.num_generated, "written_to": traces}

    server = Standalone(model_name, host=host, port=port)
    server.resolve = server.resolve_key
    return server


@click.command("serve-policy")
@click.option("--model", "model", default=None, help="Model folder, run directory (its latest checkpoint) or bundled "
                                                     "alias [default: the config's model.path].")
@click.option("-c", "--config", "files", multiple=True, type=click.Path(), help="Run config YAML(s) for the model and "
                                                                                 "engine sections.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port (0: a free one).")
@click.option("--api-key", envvar="AGENTGYM_POLICY_KEY", default=None,
              help="The secret clients send as API key (or KEY:episode). Default: $AGENTGYM_POLICY_KEY, else a "
                   "random one, printed.")
@click.option("--traces", type=click.Path(), default=None, help="Append each finished episode's trajectory to this "
                                                                "JSONL file.")
@click.option("--max-tokens", "max_new_tokens", type=int, default=512, show_default=True,
              help="The most new tokens of one reply (a request may ask for fewer).")
@click.option("--model-name", default="agentgym-policy", show_default=True, help="The name /v1/models lists.")
@click.argument("overrides", nargs=-1)
def serve_policy(model: str | None, files: tuple[str, ...], host: str, port: int, api_key: str | None,
                 traces: str | None, max_new_tokens: int, model_name: str, overrides: tuple[str, ...]) -> None:
    """Serve a model behind an OpenAI-compatible endpoint (/v1/chat/completions, /v1/models) that records
    every prompt and sampled token per episode. OVERRIDES are config overrides (engine.decode=static)."""
    from agentgym_core import build_component, get_plugin_manager, load_config

    if max_new_tokens < 1:
        raise AgentGymError("--max-tokens must be >= 1")
    if traces and Path(traces).suffix != ".jsonl":
        raise AgentGymError(f"--traces {traces!r}: give a .jsonl file name")
    manager = get_plugin_manager()
    cfg = load_config(list(files), list(overrides), manager=manager)
    path = model or cfg.model.path
    if model:
        from agentgym_core.cli.eval_cmd import resolve_model

        path, _ = resolve_model(model)
    secret = api_key or f"agk-{secrets.token_hex(12)}"
    click.echo(f"loading {path} ({cfg.engine.name} engine, model.dtype={cfg.model.dtype}) ...", err=True)
    engine = build_component(manager, "engines", cfg.engine, str(path), dtype=cfg.model.dtype,
                             chat_template=cfg.model.chat_template, max_context=int(cfg.model.max_context))
    server = standalone_server(engine, cfg.model.chat_template, secret=secret, traces=traces,
                               max_new_tokens=max_new_tokens, max_context=int(cfg.model.max_context),
                               model_name=model_name, host=host, port=port)
    url = server.start()
    shown = secret if not api_key else "<the --api-key you gave>"
    click.echo(f"serving {path} at {url}/v1 (model name {model_name!r}); API key {shown} (KEY:name for an episode "
               f"of its own); traces -> {traces or 'not written (--traces FILE.jsonl)'}. Ctrl-C stops.", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        for key in list(server.episodes):
            episode = server.episodes.get(key)
            if episode is not None and episode.completions:
                server.finish(episode, {})
        server.stop()
        engine.close()
        click.echo(f"stopped; {server.written} episode(s) written to {traces}" if traces else "stopped", err=True)
    sys.exit(0)

