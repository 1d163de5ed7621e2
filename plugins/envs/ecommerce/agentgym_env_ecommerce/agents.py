"""Reference policies: a scripted agent that serves every customer by the policy, and a random agent.

The scripted agent sees only the observations (no access to the hidden goal): it reads the
request from the customer's first line, asks for what it needs, looks up the customer and
order, checks the policy, confirms, acts and tells the facts, or refuses. Tests use it to
prove every task is solvable through the dialogue; ``bench/ecommerce_agents.py`` scores both.
Each is a callable ``policy(observation) -> action`` (the shape ``play_over_http`` takes).
"""
from __future__ import annotations

import json
import random
import re
from typing import Any

from .store import RETURN_DAYS

_REQUESTS = (("status", r"status|where is|shipped yet"), ("cancel", r"cancel"), ("return", r"return"),
             ("exchange", r"exchange"), ("address", r"address"), ("items", r"change|option"))
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_NAME = re.compile(r"(?:I'm|name is|This is) ([A-Z][a-z]+ [A-Z][a-z]+)")
_ZIP = re.compile(r"zip(?: code)?(?: is)? (\d{5})")
_ORDER = re.compile(r"#W\d{4}")
_ADDRESS = re.compile(r"\d+ [A-Za-z ]+, [A-Za-z ]+, \d{5}")
_ITEM = re.compile(r"(\d{5}) ([^;(]+?) \((P\d\d): ([^)]*)\) \$(\d+\.\d\d)( final sale)?")
_VARIANT = re.compile(r"(\d{5}) ([^;$]+?) \$(\d+\.\d\d)( out of stock)?")


def call(tool: str, **args: Any) -> str:
    """``tool(key="value", ...)`` as the agent writes it (lists as JSON)."""
    return f"{tool}({', '.join(f'{k}={json.dumps(v)}' for k, v in args.items())})"


def respond(message: str) -> str:
    return call("respond", message=message)


class ReferenceAgent:
    """Serves one customer; make a new one per episode."""

    def __init__(self) -> None:
        self.request: str | None = None
        self.said = ""  # everything the customer said
        self.customer_id: str | None = None
        self.methods: dict[str, str] = {}  # payment method id -> kind
        self.order: dict[str, Any] | None = None
        self.products: dict[str, list[tuple[str, dict[str, str], float, bool]]] = {}
        self.confirmed = self.asked_confirm = self.done = False
        self.summary = ""

    def __call__(self, observation: str) -> str:
        self._read(observation)
        if self.done:
            return respond(f"Done, as agreed: {self.summary}.")
        if self.request is None:
            return respond("How can I help you today?")
        if self.customer_id is None:
            name, zip_code = _NAME.search(self.said), _ZIP.search(self.said)
            if _EMAIL.search(self.said):
                return call("find_customer", email=_EMAIL.search(self.said).group(0).rstrip("."))
            if name and zip_code:
                return call("find_customer", name=name.group(1), zip=zip_code.group(1))
            return respond(self._ask(identity=True))
        if self.order is None:
            order = _ORDER.findall(self.said)
            return call("get_order", order_id=order[-1]) if order else respond(self._ask())
        return self._serve()

    # -- reading observations ---------------------------------------------------------------------
    def _read(self, obs: str) -> None:
        if obs.startswith("Customer:"):
            text = obs[len("Customer:"):].strip()
            if self.request is None:
                self.request = next((r for r, pattern in _REQUESTS if re.search(pattern, text.lower())), None)
            self.said += " " + text
            if self.asked_confirm and text.startswith("Yes"):
                self.confirmed = True
            self.asked_confirm = False
        elif m := re.match(r"Found customer (\S+)\.", obs):
            self.customer_id = m.group(1)
        elif obs.startswith("Customer ") and "Payment methods:" in obs:
            for method in re.findall(r"((credit_card|paypal|gift_card)_\d{4})", obs):
                self.methods[method[0]] = method[1]
        elif m := re.match(r"Order (#W\d{4}): (\w+)(?: (\d+) days ago)?.*? with (\S+)\. Items: (.*)$", obs):
            items = [{"id": i[0], "name": i[1], "product": i[2], "options": i[3], "price": float(i[4]),
                      "final_sale": bool(i[5])} for i in _ITEM.findall(m.group(5))]
            self.order = {"id": m.group(1), "status": m.group(2), "days": int(m.group(3) or 0),
                          "payment": m.group(4), "items": items, "text": obs}
        elif m := re.match(r"Product (P\d\d) ", obs):
            self.products[m.group(1)] = [
                (v[0], dict(o.split(" ", 1) for o in v[1].split(", ")), float(v[2]), not v[3])
                for v in _VARIANT.findall(obs.split(": ", 1)[1])]
        elif re.match(r"(Order #W\d{4} (cancelled|will ship|items changed)|Return of|Exchange of)", obs):
            self.done = True

    # -- deciding ---------------------------------------------------------------------------------
    def _ask(self, identity: bool = False) -> str:
        wants = ["your email (or your name and zip code)"] if identity else []
        if not _ORDER.search(self.said):
            wants.append("the order id")
        extra = {"cancel": "the reason for cancelling", "return": "which items you want to return, and whether the "
                 "refund should go to the original payment method or a gift card",
                 "exchange": "which item you want to exchange and the new option, and the payment method for any price "
                 "difference", "items": "which item you want to change and the new option, and the payment method "
                 "for any price difference", "address": "the new shipping address"}.get(self.request)
        return "Sure. Could you give me " + ", ".join(wants + ([extra] if extra else [])) + "?"

    def _refuse(self, why: str) -> str:
        return respond(f"I'm sorry, but I cannot do that: {why}.")

    def _serve(self) -> str:
        order, request = self.order, self.request
        status = order["status"]
        if request == "status":
            tracking = re.search(r"tracking (\d+)", order["text"])
            extra = f", tracking number {tracking.group(1)}" if status == "shipped" else ""
            word = "was delivered" if status == "delivered" else f"is {status}"
            return respond(f"Your order {order['id']} {word}{extra}.")
        if request in ("cancel", "address", "items") and status != "pending":
            return self._refuse(f"order {order['id']} is {status}, and only pending orders can be changed")
        if request in ("return", "exchange") and (status != "delivered" or order["days"] > RETURN_DAYS):
            return self._refuse(f"order {order['id']} was not delivered within the last {RETURN_DAYS} days")
        plan = self._plan()
        if isinstance(plan, str):
            return plan
        tool, args, self.summary = plan
        if not self.confirmed:
            self.asked_confirm = True
            return respond(f"I will {self.summary}. Do you confirm?")
        return call(tool, **args)

    def _plan(self) -> str | tuple[str, dict[str, Any], str]:
        """The write to make as ``(tool, args, summary)``, or the next action, which gets what is missing."""
        order, request, said = self.order, self.request, self.said
        oid = order["id"]
        if request == "cancel":
            if not re.search(r"need|mistake", said):
                return respond("What is the reason for cancelling?")
            reason = "ordered by mistake" if "mistake" in said else "no longer needed"
            return ("cancel_order", {"order_id": oid, "reason": reason},
                    f"cancel order {oid} ({reason}) and refund ${self._total():.2f} to {order['payment']}")
        if request == "address":
            address = _ADDRESS.findall(said)
            if not address:
                return respond("What is the new shipping address?")
            return ("modify_address", {"order_id": oid, "address": address[-1]},
                    f"change the shipping address of order {oid} to {address[-1]}")
        items = [i for i in order["items"] if f"the {i['name']} ({i['options']})" in said]
        if not items:
            return respond("Which items is it about?")
        if request != "items" and any(i["final_sale"] for i in items):
            return self._refuse("final-sale items cannot be returned or exchanged")
        new = None
        if request != "return":
            new = self._new_variant(items[0])
            if isinstance(new, str):
                return new
        method, action = self._method()
        if method is None:
            return action
        if request == "return":
            amount = sum(i["price"] for i in items)
            ids = [i["id"] for i in items]
            return ("return_items", {"order_id": oid, "item_ids": ids, "payment_method_id": method},
                    f"return {', '.join(ids)} from order {oid} and refund ${amount:.2f} to {method}")
        item, (new_id, wanted, price) = items[0], new
        diff = price - item["price"]
        tool, verb = ("exchange_items", "exchange") if request == "exchange" else ("modify_items", "change")
        direction = "charged to" if diff > 0 else "refunded to"
        return (tool, {"order_id": oid, "item_ids": [item["id"]], "new_item_ids": [new_id], "payment_method_id": method},
                f"{verb} item {item['id']} for {new_id} ({wanted}) in order {oid}; the price difference "
                f"${abs(diff):.2f} is {direction} {method}")

    def _new_variant(self, item: dict[str, Any]) -> str | tuple[str, str, float]:
        """``(item id, options text, price)`` of the option the customer wants, or the next action."""
        swap = re.search(rf"the {re.escape(item['name'])} \({re.escape(item['options'])}\) for (?:a )?(.+?)(?: instead)?\.",
                         self.said)
        if swap is None:
            return respond("Which option would you like instead?")
        wanted = swap.group(1)
        options = dict(o.split(" ", 1) for o in item["options"].split(", "))
        change = [w.split(" ", 1) for w in wanted.split(", ")]
        if any(len(c) != 2 or c[0] not in options for c in change):
            return self._refuse("an item can only be exchanged for another option of the same product")
        if item["product"] not in self.products:
            return call("get_product", product_id=item["product"])
        options.update(dict(change))
        new = next((v for v in self.products[item["product"]] if v[1] == options and v[3]), None)
        return (new[0], wanted, new[2]) if new else self._refuse(f"{wanted} is out of stock")

    def _method(self) -> tuple[str | None, str | None]:
        """``(payment method id, None)`` the customer wants, or ``(None, next action)``."""
        said = self.said.lower()
        if "paypal" in said and self.request == "return" and not self.order["payment"].startswith("paypal"):
            return None, self._refuse("refunds go to the original payment method or a gift card, not PayPal")
        if "gift card" in said:
            if not self.methods:
                return None, call("get_customer", customer_id=self.customer_id)
            cards = [m for m, kind in self.methods.items() if kind == "gift_card"]
            return (cards[0], None) if cards else (None, self._refuse("you have no gift card"))
        if "original" in said or "same method" in said:
            return self.order["payment"], None
        return None, respond("Which payment method should I use: the original one or a gift card?")

    def _total(self) -> float:
        return float(re.search(r"Paid \$([\d.]+?)\.? with", self.order["text"]).group(1))


class RefusingAgent(ReferenceAgent):
    """Identifies the customer, looks at the order, then refuses whatever was asked: the score of doing nothing."""

    def _serve(self) -> str:
        return self._refuse("the policy does not allow it")


class RandomAgent:
    """Uniformly random tools with arguments drawn from ids seen so far, and canned replies."""

    REPLIES = ("Hello! How can I help you?", "Could you give me your email?", "What is your order id?",
               "Let me check that for you.", "Sorry, I cannot do that.", "Is there anything else?",
               "Do you confirm the change to order {order}?")

    def __init__(self, rng: random.Random) -> None:
        from .calls import TOOLS

        self.rng, self.tools = rng, list(TOOLS.values())
        self.seen: dict[str, set[str]] = {"order_id": set(), "customer_id": set(), "item": set(), "method": set(),
                                          "email": set(), "product_id": set()}

    def __call__(self, observation: str) -> str:
        s = self.seen
        s["order_id"].update(_ORDER.findall(observation))
        s["customer_id"].update(re.findall(r"customer (\w+_\w+_\d{4})", observation))
        s["item"].update(re.findall(r"\b\d{5}\b", observation))
        s["method"].update(re.findall(r"\b(?:credit_card|paypal|gift_card)_\d{4}\b", observation))
        s["email"].update(e.rstrip(".") for e in _EMAIL.findall(observation))
        s["product_id"].update(re.findall(r"\bP\d\d\b", observation))
        tool = self.rng.choice(self.tools)
        if tool.name == "respond":
            return respond(self.rng.choice(self.REPLIES).format(order=self._pick("order_id")))
        args: dict[str, Any] = {}
        for param in tool.params:
            if tool.name == "find_customer" and param != "email":
                continue
            key = {"item_ids": "item", "new_item_ids": "item", "payment_method_id": "method"}.get(param, param)
            value = self._pick(key)
            args[param] = [value] if param in tool.lists else value
        return call(tool.name, **args)

    def _pick(self, key: str) -> str:
        pool = sorted(self.seen.get(key, ()))
        return self.rng.choice(pool) if pool else self.rng.choice(("#W1000", "x", "no longer needed", "1 Main St, Salem, 97301"))


def play(env: Any, task_id: int, agent: Any) -> tuple[float, dict[str, Any], list[tuple[str, str]]]:
    """Play *task_id* on *env* with *agent* (``agent(observation) -> action``) to the end.

    Returns the last reward, the last info and the ``(action, observation)`` steps; the
    env's own ``max_turns`` bounds the episode.
    """
    obs, steps = env.reset(task_id=task_id), []
    reward, info, done = 0.0, {}, False
    while not done:
        action = agent(obs)
        obs, reward, done, info = env.step(action)
        steps.append((action, obs))
    return reward, info, steps


async def play_pool(pool: Any, task_ids: list[int], make_agent: Any, concurrency: int = 16) -> dict[int, tuple[float, dict]]:
    """Play *task_ids* through an env pool (``HTTPEnvPool`` or ``LocalEnvPool``) with *concurrency* sessions.

    ``make_agent(task_id)`` gives a fresh agent per episode. Steps are numbered, as rollout
    sends them. Returns ``{task_id: (last reward, last info)}``.
    """
    import asyncio

    todo, results = list(reversed(task_ids)), {}

    async def worker() -> None:
        session = await pool.create()
        try:
            while todo:
                task_id = todo.pop()
                obs, agent, seq, done = await pool.reset(session, task_id), make_agent(task_id), 0, False
                while not done:
                    seq += 1
                    obs, reward, done, info = await pool.step(session, agent(obs), seq=seq)
                results[task_id] = (reward, info)
        finally:
            await pool.close(session)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(task_ids)))))
    return results
