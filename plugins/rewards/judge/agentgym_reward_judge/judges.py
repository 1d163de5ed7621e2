"""Judges: chat messages in, the judge's answer text out, many at a time.

``openai``: any OpenAI-compatible ``/chat/completions`` endpoint, through one pooled ``httpx``
client, at most ``judge.concurrency`` requests in flight, each with timeouts and ``tenacity``
retries (exponential backoff) on 5xx, 429, timeouts and connection errors. An endpoint that stays
down raises :class:`JudgeUnavailable` naming the URL and what was tried: a judge that cannot
answer never turns into a silent reward of 0. ``engine``: a local engine plugin (``hf`` by
default) loaded with any model path or alias, asked in one batch; torch is imported only then.
Both judge greedily (temperature 0) with a fixed seed unless told otherwise.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from agentgym_core import AgentGymError, ConfigError

KINDS = ("openai", "engine")
#: The model of a local judge (``kind: engine``) whose ``model`` is unset.
BUNDLED_JUDGE = "smollm2-135m-instruct"


class JudgeError(AgentGymError):
    """The judge endpoint refused a request, or answered with something that is not a chat completion."""


class JudgeUnavailable(JudgeError):
    """The judge could not be reached after every retry."""


@dataclass
class JudgeSettings:
    """The reward's ``judge`` section: which judge and how to ask it."""

    #: ``openai`` (an OpenAI-compatible endpoint at ``url``) or ``engine`` (a local engine plugin).
    kind: str = "openai"
    #: The endpoint's base URL, with its ``/v1`` (``http://127.0.0.1:8000/v1``); ``kind: openai`` only.
    url: Optional[str] = None
    #: The model: the endpoint's model name, or (``kind: engine``) a model folder or alias (unset: the bundled
    #: ``smollm2-135m-instruct``, enough to try the plumbing, not to judge well).
    model: str = ""
    #: The environment variable holding the API key (unset: no key sent).
    api_key_env: str = "OPENAI_API_KEY"
    #: ``kind: engine``: the engine plugin (or, from Python, a built engine: it is used as it is, and
    #: ``model`` only names it), its options and the weights' dtype.
    engine: Any = "hf"
    engine_options: Dict[str, Any] = field(default_factory=dict)
    dtype: str = "auto"
    #: Most judge requests in flight at once.
    concurrency: int = 8
    #: Seconds one request may take (reading the answer); connecting gets ``connect_timeout``.
    timeout: float = 120.0
    connect_timeout: float = 10.0
    #: Tries per request (the first included) on 5xx, 429, timeouts and connection errors.
    attempts: int = 4
    #: Backoff before retry *n*: ``backoff * 2**(n-1)`` seconds, at most ``backoff_max``.
    backoff: float = 0.5
    backoff_max: float = 8.0
    #: Sampling: greedy with a fixed seed by default.
    temperature: float = 0.0
    seed: Optional[int] = 0
    max_tokens: int = 256
    #: Write the start of the judge's answer for it (``Score:``; ``Scores:`` for a group) and take the rest of
    #: that line: a small local model then only has to name the number. None: on for ``kind: engine``, off for
    #: ``openai`` (a chat endpoint takes no partial answer; True there is refused).
    prefill: Optional[bool] = None

    def __post_init__(self) -> None:
        from agentgym_core import check_range

        if self.kind not in KINDS:
            raise ValueError(f"judge.kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        check_range("judge.concurrency", self.concurrency, ge=1)
        check_range("judge.attempts", self.attempts, ge=1)
        check_range("judge.max_tokens", self.max_tokens, ge=1)
        for key in ("timeout", "connect_timeout"):
            check_range(f"judge.{key}", getattr(self, key), gt=0)
        for key in ("backoff", "backoff_max", "temperature"):
            check_range(f"judge.{key}", getattr(self, key), ge=0)
        if self.prefill and self.kind == "openai":
            raise ValueError("judge.prefill needs judge.kind: engine (an OpenAI-compatible endpoint takes no partial "
                             "answer to continue); drop it, or judge with a local engine")

    @property
    def prefills(self) -> bool:
        """Whether the judge's answer is started for it (see ``prefill``)."""
        return self.kind == "engine" if self.prefill is None else bool(self.prefill)

    def require(self) -> None:
        """Refuse settings no judge can work with (the defaults leave url and model open)."""
        if self.kind == "openai" and not self.url:
            raise ConfigError("judge.url is not set: give the OpenAI-compatible endpoint's base URL, e.g. "
                              "judge: {url: 'http://127.0.0.1:8000/v1', model: NAME} (or judge.kind: engine)")
        if not self.model and self.kind == "openai":
            raise ConfigError("judge.model is not set: give the endpoint's model name")
        if not self.model and isinstance(self.engine, str):
            self.model = BUNDLED_JUDGE


@dataclass
class Answer:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


class _Retryable(Exception):
    """A 5xx or 429 answer: worth another try."""


class OpenAIJudge:
    """An OpenAI-compatible chat endpoint as a judge; see the module docstring."""

    def __init__(self, settings: JudgeSettings) -> None:
        settings.require()
        self.settings = settings
        self.url = settings.url.rstrip("/") + "/chat/completions"  # type: ignore[union-attr]
        self.name = f"openai:{settings.model}"
        self._client: Any = None
        self._limit: Optional[asyncio.Semaphore] = None

    def _setup(self) -> None:
        import httpx

        s = self.settings
        if self._client is None:
            key = os.environ.get(s.api_key_env, "") if s.api_key_env else ""
            headers = {"authorization": f"Bearer {key}"} if key else {}
            self._client = httpx.AsyncClient(
                headers=headers, timeout=httpx.Timeout(s.timeout, connect=s.connect_timeout),
                limits=httpx.Limits(max_connections=s.concurrency, max_keepalive_connections=s.concurrency))
            self._limit = asyncio.Semaphore(s.concurrency)

    async def ask_many(self, prompts: Sequence[list[dict[str, str]]]) -> list[Any]:
        """One answer per prompt, all in flight together (within the limit); a prompt whose request
        failed gets its exception in its place, so the answers that came are kept."""
        self._setup()
        return list(await asyncio.gather(*(self.ask(p) for p in prompts), return_exceptions=True))

    async def ask(self, messages: list[dict[str, str]]) -> Answer:
        """One chat completion, retried; :class:`JudgeUnavailable` when every try failed."""
        import httpx
        from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        self._setup()
        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature,
                                "max_tokens": s.max_tokens}
        if s.seed is not None:
            body["seed"] = s.seed
        tried: list[str] = []
        started = time.monotonic()
        retrying = AsyncRetrying(
            stop=stop_after_attempt(s.attempts), reraise=True,
            wait=wait_exponential(multiplier=s.backoff, min=s.backoff, max=s.backoff_max),
            retry=retry_if_exception_type((_Retryable, httpx.TimeoutException, httpx.TransportError)))
        try:
            async for attempt in retrying:
                with attempt:
                    try:
                        return await self._post(body, started)
                    except (_Retryable, httpx.TimeoutException, httpx.TransportError) as exc:
                        tried.append(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
                        raise
        except (_Retryable, httpx.TimeoutException, httpx.TransportError):
            raise JudgeUnavailable(
                f"judge endpoint {self.url} did not answer: {len(tried)} attempt(s) in "
                f"{time.monotonic() - started:.1f} s (timeout {s.timeout:g} s each, connect {s.connect_timeout:g} s, "
                f"backoff {s.backoff:g}-{s.backoff_max:g} s); last error: {tried[-1]}. Check that the server runs at "
                f"judge.url, or raise judge.attempts / judge.timeout") from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _post(self, body: dict[str, Any], started: float) -> Answer:
        assert self._limit is not None
        async with self._limit:
            response = await self._client.post(self.url, json=body)
        if response.status_code >= 500 or response.status_code == 429:
            raise _Retryable(f"HTTP {response.status_code}: {response.text[:200]}")
        if response.status_code >= 400:
            hint = (f" (the API key comes from ${self.settings.api_key_env}: is it set to a valid key?)"
                    if response.status_code in (401, 403) else "")
            raise JudgeError(f"judge endpoint {self.url} refused the request: HTTP {response.status_code}: "
                             f"{response.text[:300]}{hint}")
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeError(f"judge endpoint {self.url} answered HTTP {response.status_code} with no chat completion: "
                             f"{response.text[:300]}") from None
        usage = data.get("usage") or {}
        return Answer(str(text or ""), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                      time.monotonic() - started)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


#: Tokens a prefilled answer may add (a group's scores: a few per episode); it ends at its first line break.
PREFILL_TOKENS = 32


class EngineJudge:
    """A local engine plugin as a judge: its tokenizer's chat template, one ``generate`` batch per call. A
    prompt whose last message is the assistant's is a prefilled answer: the template renders the messages
    before it with the generation prompt, the prefill follows as text, and the answer is the prefill plus
    what the model adds up to its first line break."""

    def __init__(self, settings: JudgeSettings) -> None:
        settings.require()
        self.settings = settings
        given = not isinstance(settings.engine, str)
        self.name = f"{type(settings.engine).__name__ if given else settings.engine}:{settings.model or 'given'}" + \
            ("+prefill" if settings.prefills else "")
        self._engine: Any = settings.engine if given else None
        self._owns = not given
        self._lock = threading.Lock()

    def engine(self) -> Any:
        """The engine, built on first use from the registry (the way ``agentgym_service.model_user`` does)."""
        with self._lock:
            if self._engine is None:
                from agentgym_core import get_plugin_manager

                s = self.settings
                cls = get_plugin_manager().registry("engines").get(s.engine).load()
                self._engine = cls(s.model, dtype=s.dtype, **dict(s.engine_options))
            return self._engine

    async def ask_many(self, prompts: Sequence[list[dict[str, str]]]) -> list[Answer]:
        return await asyncio.to_thread(self._generate, list(prompts))

    def _generate(self, prompts: list[list[dict[str, str]]]) -> list[Answer]:
        from agentgym_core import GenerationRequest, SamplingParams

        engine, s = self.engine(), self.settings
        tokenizer = engine.tokenizer
        requests, prefixes = [], []
        for messages in prompts:
            prefix = messages[-1]["content"] if messages[-1]["role"] == "assistant" else None
            ids = tokenizer.apply_chat_template(messages[:-1] if prefix is not None else messages,
                                                add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
            ids = list(ids)
            if prefix is not None:
                ids += tokenizer.encode(prefix, add_special_tokens=False)
            params = SamplingParams(temperature=s.temperature, seed=s.seed,
                                    max_new_tokens=s.max_tokens if prefix is None else min(s.max_tokens, PREFILL_TOKENS),
                                    stop_strings=() if prefix is None else ("\n",))
            requests.append(GenerationRequest(ids, params))
            prefixes.append(prefix)
        answers: list[Answer] = []
        for start in range(0, len(requests), s.concurrency):
            chunk = requests[start:start + s.concurrency]
            began = time.monotonic()
            results = engine.generate(chunk)
            seconds = (time.monotonic() - began) / max(1, len(chunk))
            for q, r, prefix in zip(chunk, results, prefixes[start:start + s.concurrency]):
                text = tokenizer.decode(r.token_ids, skip_special_tokens=True)
                if prefix is not None:
                    text = prefix + text.split("\n", 1)[0]
                answers.append(Answer(text, len(q.prompt_ids), len(r.token_ids), seconds))
        return answers

    async def aclose(self) -> None:
        if self._engine is not None and self._owns:
            self._engine.close()
            self._engine = None


def make_judge(settings: JudgeSettings) -> Any:
    return OpenAIJudge(settings) if settings.kind == "openai" else EngineJudge(settings)


class LoopThread:
    """An event loop of its own in a daemon thread, so the synchronous reward interface can run async judges
    (from plain code, or from inside another event loop) and keep one pooled client between calls."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self._loop is not None

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._serve, args=(self._loop,), name="agentgym-judge",
                                                daemon=True)
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        try:
            loop.run_forever()
        finally:
            loop.close()

    def shutdown(self, last: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``last()`` on the loop, then stop it, without waiting (for a finalizer, which may run on any
        thread, the loop's own included)."""
        with self._lock:
            loop, self._loop, self._thread = self._loop, None, None
        if loop is None:
            return

        async def final() -> None:
            try:
                await last()
            finally:
                loop.stop()

        try:
            loop.call_soon_threadsafe(lambda: loop.create_task(final()))
        except RuntimeError:  # the loop is closed already
            pass

    def stop(self) -> None:
        """Stop the loop and wait for its thread to end (a later :meth:`run` starts a new one)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
