"""The customer played by a language model through an engine plugin (env option ``customer: model``).

The model gets the persona, the request and the details to reveal only when asked as its
system prompt, plays the customer ("assistant") against the agent ("user"), and writes one
short line per turn. The store, the policy, the reward and when the episode ends are the
same as with the rule-based customer: only the wording of the customer changes. The engine
(and torch) is imported only when this customer is used.
"""
from __future__ import annotations

import random
import re
from typing import Any

from .catalog import Catalog
from .customer import CLOSING, OPENINGS, Context, Reply, RuleCustomer
from .scenarios import Scenario

_YES = re.compile(r"^\W*(yes|yeah|yep|sure|ok|okay|correct|please do|go ahead|confirm)", re.IGNORECASE)
_NO = re.compile(r"\b(no|not|don't|wrong)\b", re.IGNORECASE)


def build_engine(name: str, model: str, options: dict[str, Any]) -> Any:
    """Engine *name* from the plugin registry, loaded with *model*."""
    from agentgym_core.plugins import get_plugin_manager

    cls = get_plugin_manager().registry("engines").get(name).load()
    return cls(model, **options)


def system_prompt(s: Scenario, catalog: Catalog) -> str:
    """The customer's brief: who it is, what it wants, what it may reveal when asked."""
    c, d = s.customer, s.details
    rules = RuleCustomer(s, catalog, random.Random(0))
    known = [f"your name is {c['name']} and your zip code is {c['zip']}"]
    if s.persona.knows_email:
        known.append(f"your email is {c['email']}")
    known.append(f"the order id is {s.order_id}")
    if "items" in d:
        known.append(rules._items_text())
    for key in ("reason", "payment", "address"):
        if key in d:
            known.append(rules._answer(key, "") or "")
    return (f"You are {c['name']}, a customer ({s.persona.tone}) chatting with the support agent of an online store. "
            f"What you want: {OPENINGS[s.request][0]} Tell the agent these facts only when asked: "
            + "; ".join(k for k in known if k) + ". When the agent asks you to confirm the change you want, say yes. "
            "Write one or two short sentences as the customer, nothing else.")


class ModelCustomer:
    """A customer whose lines a model writes (same interface as :class:`~.customer.RuleCustomer`)."""

    def __init__(self, scenario: Scenario, catalog: Catalog, rng: random.Random, engine: Any, *,
                 temperature: float = 0.0, max_tokens: int = 60) -> None:
        self.s, self.rng, self.engine = scenario, rng, engine
        self.temperature, self.max_tokens = temperature, max_tokens
        self.messages = [{"role": "system", "content": system_prompt(scenario, catalog)},
                         {"role": "user", "content": "(The support chat opens. Write your first message.)"}]

    def _say(self) -> str:
        from agentgym_core.engine import GenerationRequest, SamplingParams

        tokenizer = self.engine.tokenizer
        prompt = tokenizer.apply_chat_template(self.messages, add_generation_prompt=True, tokenize=True)
        if isinstance(prompt, dict) or hasattr(prompt, "input_ids"):
            prompt = prompt["input_ids"]
        params = SamplingParams(temperature=self.temperature, max_new_tokens=self.max_tokens,
                                stop_strings=("\n",), seed=self.rng.randrange(2**31))
        result = self.engine.generate([GenerationRequest(list(prompt), params)])[0]
        text = tokenizer.decode(result.token_ids, skip_special_tokens=True).strip().splitlines()
        line = (text[0] if text else "").strip()[:300] or "Sorry, could you say that again?"
        self.messages.append({"role": "assistant", "content": line})
        return line

    def opening(self) -> str:
        return self._say()

    def reply(self, message: str, ctx: Context) -> Reply:
        self.messages.append({"role": "user", "content": message})
        line = self._say()
        return Reply(line, confirmed=bool(_YES.search(line)) and not _NO.search(line))

    def closing(self) -> str:
        return self.rng.choice(CLOSING)

    def accept_refusal(self) -> str:
        return "Okay, I understand. Goodbye."
