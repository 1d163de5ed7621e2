"""The user played by a language model through any engine plugin (env option ``user: model``).

The model gets the user's :class:`~.goal.Knowledge` as its system prompt (who it is, its requests in
order, the details to give only when asked, the parts of each change it named itself; never a
value the policy derives) and writes one short line per turn. The guards do
not depend on the model: a confirmation authorizes a change only if the model's line is a yes
*and* the agent's message describes a change the user wants (:func:`~.user.match_confirmation`);
answers, refusals and the end of the episode are judged as with the rule-based user. The engine
(and torch) is imported only when this user is used.
"""
from __future__ import annotations

import random
import re
from typing import Any

from .goal import Goal, Knowledge, Lexicon, knowledge
from .judge import Judge
from .user import LINES, Reply, match_confirmation

_YES = re.compile(r"^\W*(yes|yeah|yep|sure|ok|okay|correct|please do|go ahead|that's right|confirm)\b", re.IGNORECASE)
_NO = re.compile(r"\b(no|not|don't|wrong|isn't)\b", re.IGNORECASE)


def build_engine(name: str, model: str, options: dict[str, Any]) -> Any:
    """Engine plugin *name* from the registry, loaded with *model*."""
    from agentgym_core import get_plugin_manager

    cls = get_plugin_manager().registry("engines").get(name).load()
    return cls(model, **options)


def system_prompt(goal: Goal | Knowledge, role: str) -> str:
    """The user's brief: who it is, what it wants in order, what it may say only when asked."""
    known = goal if isinstance(goal, Knowledge) else knowledge(goal)
    lines = [f"You are {known.name}, a {role.lower()} ({known.tone}) chatting with a support agent. Stay in character.",
             "Identity details, only when asked: " + " ".join(s.answer for s in known.identity)
             + (" " + " ".join(known.unknown.values()) if known.unknown else "")]
    for n, request in enumerate(known.requests, 1):
        details = " ".join(s.answer for s in request.slots)
        lines.append(f"Request {n} (raise it only after the previous one is handled): {request.openings[0]} "
                     f"Details, only when asked: {details or 'none'}.")
    lines.append("You know only these details; the agent works out the rest from its records and its policy. Say yes "
                 "when the agent describes a change that fits what you asked for and asks you to confirm; say no and "
                 "correct it when it contradicts your details. When you do not understand the agent, say so. Write "
                 "one or two short sentences as the user, nothing else.")
    return "\n".join(lines)


class ModelUser:
    """A user whose lines a model writes (the interface of :class:`~.user.RuleUser`)."""

    def __init__(self, goal: Goal | Knowledge, lexicon: Lexicon, rng: random.Random, engine: Any, *, role: str = "User",
                 temperature: float = 0.0, max_tokens: int = 60) -> None:
        self.known = goal if isinstance(goal, Knowledge) else knowledge(goal)
        self.lexicon, self.rng, self.engine = lexicon, rng, engine
        self.temperature, self.max_tokens = temperature, max_tokens
        self.messages = [{"role": "system", "content": system_prompt(self.known, role)},
                         {"role": "user", "content": "(The support chat opens. Write your first message.)"}]

    def _say(self) -> str:
        from agentgym_core import GenerationRequest, SamplingParams

        tokenizer = self.engine.tokenizer
        prompt = tokenizer.apply_chat_template(self.messages, add_generation_prompt=True, tokenize=True)
        if isinstance(prompt, dict) or hasattr(prompt, "input_ids"):
            prompt = prompt["input_ids"]
        params = SamplingParams(temperature=self.temperature, max_new_tokens=self.max_tokens,
                                stop_strings=("\n",), seed=self.rng.randrange(2**31))
        result = self.engine.generate([GenerationRequest(list(prompt), params)])[0]
        lines = tokenizer.decode(result.token_ids, skip_special_tokens=True).strip().splitlines()
        line = (lines[0] if lines else "").strip()[:400] or "Sorry, could you say that again?"
        self.messages.append({"role": "assistant", "content": line})
        return line

    def first_line(self) -> str:
        return self._say()

    def reply(self, message: str, judge: Judge, refused: list[int]) -> Reply:
        current = judge.current()
        if current is None:
            return Reply(self.rng.choice(LINES["closing"][0]))
        self.messages.append({"role": "user", "content": message})
        line = self._say()
        said_yes = bool(_YES.search(line)) and not _NO.search(line)
        found, _ = match_confirmation(message, self.known, judge, self.lexicon, current) if said_yes else (None, None)
        return Reply(line, confirms=found)
