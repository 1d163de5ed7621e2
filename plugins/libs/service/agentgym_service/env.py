"""``ServiceEnv``: a tool-using service env on the kit (the ``BaseEnv`` an env plugin subclasses).

A subclass gives its tools, lexicon, policy text and a task generator; the kit runs the
episode: one tool call per step (:mod:`.calls`), the user's replies (:mod:`.user`, or
:mod:`.model_user`), the desk's reads and writes (:mod:`.desk`), and the judge (:mod:`.judge`).
The guards every env gets: a write must be a change the user said yes to, described in the
confirmation, and allowed by the policy (else reward 0, the episode ends); the user knows only
what a user knows (:class:`~.goal.Knowledge`), so a wrongly derived change is made as confirmed
and fails at the end; authentication accepts only the user's own details, as the user stated
them in this conversation (not a shipping zip, not a colleague's name), and the identity is locked once set; an attempt at another person's data is
refused and ends the episode with 0; a refusal is a decision (it fails an allowed request) and
resolves a forbidden one only when it gives the reason the policy forbids it;
malformed input is an error observation. Success: every request resolved as the policy
resolves it and the final database equal to the goal database. ``reward: graded`` pays the
share of requests so resolved instead (0 after any violation or unjustified or unexplained refusal).
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Optional

from agentgym_core import BaseEnv, ConfigError, config_from

from . import text

from .calls import CallError, parse_call
from .db import Database
from .desk import Desk, PrivacyError, ToolError
from .goal import Goal, Lexicon, knowledge
from .judge import Judge
from .tools import ToolSet
from .user import Reply, RuleUser

#: The OOD split's tasks are drawn with this added to the env's seed (another world).
OOD_SEED_OFFSET = 7919
#: How an episode ends when every request closed (the verdict is added to it).
NOTHING_MORE = "the user has nothing more to ask"


@dataclass
class ServiceConfig:
    """Options every env on the kit has (a subclass adds its own fields)."""

    #: Seed of the generated world (people, records, prices) and of every task.
    seed: int = 0
    #: In-distribution task ids are 0 .. num_tasks-1, split into train and test by a hash of the id.
    num_tasks: int = 1000
    #: Share of the in-distribution ids held out as ``test``.
    test_fraction: float = 0.2
    #: The ``ood`` split: ids num_tasks .. num_tasks+ood_tasks-1, another world seed and unseen user wordings.
    ood_tasks: int = 200
    #: Agent actions per episode; then the user leaves (reward 0).
    max_turns: int = 40
    #: A write must equal a change the user confirmed (false: any wanted change may be made unconfirmed).
    require_confirmation: bool = True
    #: Longer actions are refused with an error observation (parsing is linear in the length anyway).
    max_action_chars: int = 4000
    #: ``rules`` (offline, deterministic) or ``model`` (played by ``user_model`` through an engine plugin).
    user: str = "rules"
    user_engine: str = "hf"
    user_model: Optional[str] = None
    user_engine_options: Dict[str, Any] = field(default_factory=dict)
    user_temperature: float = 0.0
    user_max_tokens: int = 60
    #: Put the task's hidden facts (request kinds, forbidden rules) into every step's info. For
    #: debugging only: an agent that reads info would learn what to refuse. Off by default.
    privileged_info: bool = False
    #: ``success`` (1 when the goal is met, else 0) or ``graded``: the share of requests resolved as the policy
    #: resolves them, 0 for the whole episode after a forbidden, unconfirmed or extra write, an attempt at
    #: another person's data, or a refusal of an allowed request. ``info["success"]`` stays the 0/1 verdict.
    reward: str = "success"
    #: Task categories (the first request's kind) to draw from: ``all``, a list or a comma-separated
    #: string of the env's ``categories``; task k has category ``intents[k % len(intents)]``.
    intents: Any = "all"

    def __post_init__(self) -> None:
        from agentgym_core import check_range

        check_range("env.num_tasks", self.num_tasks, ge=10)
        check_range("env.test_fraction", self.test_fraction, gt=0, lt=1)
        check_range("env.ood_tasks", self.ood_tasks, ge=0)
        check_range("env.max_turns", self.max_turns, ge=1)
        check_range("env.max_action_chars", self.max_action_chars, ge=100)
        check_range("env.user_temperature", self.user_temperature, ge=0)
        check_range("env.user_max_tokens", self.user_max_tokens, ge=1)
        if self.reward not in ("success", "graded"):
            raise ConfigError(f"env.reward must be success or graded, got {self.reward!r}")
        if self.user not in ("rules", "model"):
            raise ConfigError(f"env.user must be rules or model, got {self.user!r}")
        if self.user == "model" and not self.user_model:
            raise ConfigError("env.user: model needs env.user_model (a model folder or alias, e.g. smollm2-135m-instruct)")


def goal_database(db: Database, desk: Desk, requests: Any) -> Database:
    """*db* with the wanted changes of the allowed *requests* applied in order by *desk* (acting on *db*)."""
    for request in requests:
        for change in (request.changes if request.forbidden is None else ()):
            desk.apply(change.tool, dict(change.args))
    return db


@dataclass
class Task:
    task_id: int
    category: str
    db: Database
    goal_db: Database
    goal: Goal
    #: The domain's read-only data the desk needs (a product catalog, a calendar's dates).
    world: Any = None


def resolve_intents(intents: Any, known: tuple[str, ...]) -> tuple[str, ...]:
    """The categories named by the ``intents`` option (``all``, a list, or a comma-separated string), checked."""
    if intents is None or intents == "all":
        return known
    names = [n.strip() for n in intents.split(",")] if isinstance(intents, str) else [str(n).strip() for n in intents]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ConfigError(f"env.intents: unknown intent {unknown[0] if unknown else '(none given)'!r}; "
                          f"choose from all, {', '.join(known)}")
    return tuple(dict.fromkeys(names))


def instruction(intro: str, tools: ToolSet, policy: str) -> str:
    """The agent's instruction: the role, the action format, the tools and the policy."""
    read = tools.of_kind("read")[0]
    return (f"{intro} Reply with \"Thought: <your reasoning>\", then \"Action: <one tool call>\", e.g.\n"
            f"Thought: I should ask what they need.\nAction: respond(\"How can I help you today?\")\n"
            f"A call may also be JSON: {{\"name\": \"{read.name}\", \"arguments\": {{...}}}}. One call per reply; "
            "a call inside a sentence, or text after the call, is not run.\n\n"
            f"Tools:\n{tools.text()}\n\n{policy}")


class ServiceEnv(BaseEnv):
    """A service env: subclasses set the class attributes and implement :meth:`make_task` and :meth:`desk`."""

    action_format = "react"
    Config: ClassVar[type] = ServiceConfig
    tools: ClassVar[ToolSet]
    lexicon: ClassVar[Lexicon]
    policy: ClassVar[str]
    #: How the user's lines are labelled in observations (``Customer``).
    speaker: ClassVar[str] = "User"
    #: The env's registered name (also keys its train/test hash, so a subclass keeps the same split).
    name: ClassVar[str] = "service"
    #: The task categories the env has (what ``intents`` chooses from).
    categories: ClassVar[tuple[str, ...]] = ("all",)

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = config_from(self, options)
        self.intents = resolve_intents(self.config.intents, self.categories)
        self._splits: dict[str, list[int] | range] | None = None
        self._engine: Any = None
        self.task: Task | None = None
        self.over = True

    # -- what a subclass provides --------------------------------------------------------------
    def make_task(self, task_id: int, seed: int, wording: str) -> Task:
        """Task *task_id* of the world *seed*, its user speaking from the *wording* pool (``iid``/``ood``)."""
        raise NotImplementedError

    def desk(self, task: Task, db: Database) -> Desk:
        """The tools of *task* acting on *db* (the episode's database, or the goal being built)."""
        raise NotImplementedError

    # -- self-description ----------------------------------------------------------------------
    def category(self, task_id: int) -> str:
        return self.intents[task_id % len(self.intents)]

    def splits(self) -> dict[str, list[int] | range]:
        if self._splits is None:
            n = self.config.num_tasks
            test = [k for k in range(n) if _hashed(self.name, k) < self.config.test_fraction]
            held = set(test)
            self._splits = {"train": [k for k in range(n) if k not in held], "test": test}
            if self.config.ood_tasks:
                self._splits["ood"] = range(n, n + self.config.ood_tasks)
        return self._splits

    def world(self, task_id: int) -> tuple[int, str]:
        """``(seed, wording)`` of *task_id*: the env's own for in-distribution ids, another for OOD ones."""
        if task_id >= self.config.num_tasks:
            return self.config.seed + OOD_SEED_OFFSET, "ood"
        return self.config.seed, "iid"

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(tools=self.tools.schemas(), policy=self.policy, user=self.config.user, seed=self.config.seed,
                    intents=list(self.intents), task_ids="category = intents[task_id % len(intents)]; test ids chosen "
                    "by a hash of the id; ood: ids num_tasks.., another world seed and user wordings unseen in train/test")
        return info

    # -- the episode ---------------------------------------------------------------------------
    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        if task_id is None:
            task_id = random.Random(seed).choice(list(self.splits()["train"]))
        limit = self.config.num_tasks + self.config.ood_tasks
        if isinstance(task_id, bool) or not isinstance(task_id, int) or not 0 <= task_id < limit:
            raise ValueError(f"{type(self).__name__} task_id must be an int in [0, {limit}), got {task_id!r}")
        world_seed, wording = self.world(task_id)
        self.task = task = self.make_task(task_id, world_seed, wording)
        self.db = task.db
        self.the_desk = self.desk(task, self.db)
        self.judge = Judge(task.goal, self.lexicon)
        self.user = self._user(task)
        self.turns, self.over = 0, False
        first = self.user.first_line()
        self.judge.hear_user(first)
        return f"{self.speaker}: {first}"

    def _user(self, task: Task) -> Any:
        rng = random.Random(f"{self.name}-user:{self.config.seed}:{task.task_id}")
        known = knowledge(task.goal)  # the user gets its own record, never the goal database or the derivations
        if self.config.user == "rules":
            return RuleUser(known, self.lexicon, rng)
        from .model_user import ModelUser, build_engine

        if self._engine is None:
            self._engine = build_engine(self.config.user_engine, self.config.user_model, self.config.user_engine_options)
        return ModelUser(known, self.lexicon, rng, self._engine, role=self.speaker,
                         temperature=self.config.user_temperature, max_tokens=self.config.user_max_tokens)

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        if self.task is None:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset(); reset a task first")
        if self.over:
            return "The conversation is over; reset to start a new task.", 0.0, True, self._info(invalid=True)
        self.turns += 1
        try:
            call = parse_call(action, self.tools, max_chars=self.config.max_action_chars)
        except CallError as exc:
            return self._go_on(f"Invalid action: {exc}", invalid=True)
        kind = self.tools[call.tool].kind
        if kind == "respond":
            return self._respond(call.args["message"])
        if kind == "end":
            refused = self.judge.transferred(str(call.args.get("summary", "")))
            return self._end("Transferred to a human agent.", "transferred to a human" + (
                ", the forbidden request refused" if refused else " with the user's request unresolved"), success=True)
        desk = self.the_desk
        try:
            if kind == "write":
                return self._write(call)
            text = self._authenticate(call) if kind == "auth" else desk.run(call)
        except ToolError as exc:
            return self._go_on(exc.text, invalid=exc.invalid, failed=not exc.invalid)
        except PrivacyError as exc:
            self.judge.violations.append("an attempt at someone else's data")
            return self._end(f"Refused: {exc} Nothing was shown. The conversation ends.",
                             "tried to read data of someone other than the authenticated user")
        finally:
            self.judge.reads |= desk.reads
        return self._go_on(text)

    def close(self) -> None:
        self.task, self.over = None, True
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    # -- steps ---------------------------------------------------------------------------------
    def _authenticate(self, call: Any) -> str:
        desk = self.the_desk
        unsaid = [str(v) for v in call.args.values() if str(v).strip()
                  and not text.has(self.judge.heard, text.normalize(str(v)))]
        if unsaid:
            raise ToolError(f"Not authenticated: the {self.speaker.lower()} has not said {unsaid[0][:80]!r} in this "
                            f"conversation. Authenticate only with the details they give you themselves; ask them.")
        goal = self.task.goal
        own = {text.normalize(v) for v in (goal.name, *(s.value for s in goal.identity))}
        other = [(k, str(v)) for k, v in call.args.items() if str(v).strip() and text.normalize(str(v)) not in own]
        if other:  # said, but not about themselves (a shipping zip, a colleague's name): it would find someone else
            key, value = other[0]
            raise ToolError(f"Not authenticated: the {self.speaker.lower()} did not give {value[:80]!r} as their own "
                            f"{key}. Authenticate with the details they give about themselves; ask them.")
        before = desk.identity
        desk.identity = None
        try:
            found = desk.run(call)
        finally:
            found_id, desk.identity = desk.identity, before
        if before is not None and found_id != before:
            raise ToolError(f"This conversation is authenticated as {before}; the identity cannot change. Serve "
                            f"{before} only.", invalid=True)
        desk.identity = found_id
        return found

    def _write(self, call: Any) -> tuple[str, float, bool, dict]:
        desk, judge = self.the_desk, self.judge
        desk.require_identity()
        args, rule = desk.check(call)
        if rule is not None:
            judge.violations.append(f"policy: {rule}")
            return self._end(f"Forbidden by the policy: {rule}. The conversation ends.", f"policy: {rule}")
        verdict = judge.write(call.tool, args, confirmed=self.config.require_confirmation)
        if verdict == "unconfirmed":
            return self._end(f"{desk.apply(call.tool, args)}\n{self.speaker}: Wait, I never agreed to that!",
                             "a change the user did not confirm")
        if verdict == "undescribed":
            return self._end(f"{desk.apply(call.tool, args)}\n{self.speaker}: Wait, that's not what you told me "
                             "you would do!", "a change other than the one the agent described")
        return self._go_on(desk.apply(call.tool, args))  # ok, or wrong: made as confirmed, judged at the end

    def _respond(self, message: Any) -> tuple[str, float, bool, dict]:
        refused = self.judge.hear_agent(message)
        reply: Reply = self.user.reply(message, self.judge, refused)
        self.judge.hear_user(reply.text)
        if reply.confirms is not None:
            self.judge.authorized = reply.confirms
        if self.judge.current() is None:
            return self._end(f"{self.speaker}: {reply.text}", NOTHING_MORE, success=True)
        return self._go_on(f"{self.speaker}: {reply.text}")

    def _go_on(self, obs: str, *, invalid: bool = False, failed: bool = False) -> tuple[str, float, bool, dict]:
        if self.turns >= self.config.max_turns:
            return self._end(f"{obs}\nThe {self.speaker.lower()} left: {self.config.max_turns} turns without a "
                             "resolution.", "turn limit", invalid=invalid)
        return obs, 0.0, False, self._info(invalid=invalid, failed=failed)

    def _end(self, obs: str, reason: str, *, success: bool = False, invalid: bool = False) -> tuple[str, float, bool, dict]:
        self.over = True
        match = self.db == self.task.goal_db
        success = success and match and self.judge.all_resolved()
        if reason == NOTHING_MORE:
            reason = "the user's goal is met" if success else f"{NOTHING_MORE}, but the goal is not met"
        info = self._info(invalid=invalid)
        info.update(success=success, end_reason=reason, db_match=match, **self.judge.summary())
        reward = self.judge.graded() if self.config.reward == "graded" else float(success)
        return obs, reward, True, info

    def _info(self, *, invalid: bool = False, failed: bool = False) -> dict[str, Any]:
        info: dict[str, Any] = {"success": False, "invalid_action": invalid, "action_failed": failed,
                                "turns": getattr(self, "turns", 0)}
        if self.config.privileged_info and self.task is not None:
            info["task"] = {"category": self.task.category, "requests": [r.kind for r in self.task.goal.requests],
                            "forbidden": [r.forbidden for r in self.task.goal.requests]}
        return info


def _hashed(name: str, task_id: int) -> float:
    """A number in [0, 1) from the env's name and *task_id*: test ids spread over the range."""
    digest = hashlib.blake2b(f"{name}-split:{task_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64
