"""The expert: a scripted agent that serves every customer by the policy, reading only the observations.

It classifies each request from the customer's words, asks for everything the request needs
in one reply, authenticates, looks up, checks the policy, describes the change and asks for a
yes, makes it, tells the answers; or refuses with the reason. ``MisdescribingExpert`` is the
same agent with a confirmation that describes another change, ``PolicyBlindExpert`` the same
agent with the policy's rules taken out (anti-gaming checks: both must score about 0). Each is a
callable ``agent(observation) -> action`` (what ``play`` and ``play_over_http`` take); make one
per episode.
"""
from __future__ import annotations

import json
import re
from typing import Any

from agentgym_service.expert import ScriptedExpert, call, respond

from .world import RETURN_DAYS

_KINDS = (("status", r"status|where is my order|shipped yet|any news|how far along|where it stands"),
          ("profile", r"default address|address in my profile|on file"),
          ("cancel", r"cancel|call off"), ("return", r"\breturn|send back|send it back"),
          ("exchange", r"exchange|trade it"), ("payment", r"payment method|billed|pay for one"),
          ("address", r"address|redirect"), ("items", r"change|option|variant"), ("search", r"cost|price|how much"))
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_NAME = re.compile(r"(?:name is|I'm|This is) ([A-Z][a-z]+ [A-Z][a-z]+)")
_ZIP = re.compile(r"(?:[Zz]ip code|[Zz]ip|[Pp]ostal code)(?: is)? (\d{5})")
_ORDER = re.compile(r"#W\d{4}")
_ADDRESS = re.compile(r"\d+ [A-Za-z ]+, [A-Za-z ]+, \d{5}")
#: The customer leaves the new option of an exchange to us (the store's words for it, train and unseen).
_LEFT_OPTION = re.compile(r"you pick|your pick|surprise me|any other (?:option|variant)|whichever other", re.I)
_METHOD = re.compile(r"(?:credit_card|gift_card|paypal)_\d{4}")
_ASK = {"cancel": "the reason for cancelling",
        "return": "which items you want to return, and where the refund should go (the original payment method or a "
                  "gift card)",
        "exchange": "which item you want to exchange, which new option you want, and which payment method to use for "
                    "any price difference",
        "items": "which item you want to change, which new option you want, and which payment method to use for any "
                 "price difference",
        "address": "the new shipping address", "payment": "which payment method you would like to use instead",
        "profile": "your new address", "search": "which product and which options you are interested in"}


class ExpertAgent(ScriptedExpert):
    speaker, kinds = "Customer", _KINDS
    #: Whether it applies the policy's rules (False: :class:`PolicyBlindExpert`).
    applies_policy = True

    def __init__(self) -> None:
        self.profile: dict[str, Any] | None = None
        super().__init__()

    def new_request(self) -> None:
        super().new_request()
        self.order: dict[str, Any] | None = None
        self.products: dict[str, dict[str, Any]] = {}
        self.found: list[dict[str, Any]] | None = None
        self.done = False
        self.summary = ""

    def __call__(self, obs: str) -> str:
        self._read(obs)
        if self.done:
            self.finished = True
            return respond(f"Done: {self.summary}.")
        if self.kind is None:
            return respond("How can I help you today?")
        if not self.asked:
            wants = [] if self.identity else ["your email (or your name and zip code)"]
            wants += [] if self.kind in ("profile", "search") else ["the order id"]
            return self.ask_once(wants + ([_ASK[self.kind]] if self.kind in _ASK else []))
        if self.identity is None:
            email, name, zip_code = _EMAIL.search(self.said_all), _NAME.search(self.said_all), _ZIP.search(self.said_all)
            if email:
                return call("find_customer", email=email.group(0).rstrip("."))
            if name and zip_code:
                return call("find_customer", name=name.group(1), zip=zip_code.group(1))
            return respond("Could you give me your name and zip code?")
        if self.kind == "search":
            return self._search()
        if self.kind == "profile":
            return self._plan_and_confirm(self._profile())
        if self.order is None:
            orders = _ORDER.findall(self.said)
            return call("get_order", order_id=orders[-1]) if orders else respond("Could you give me the order id?")
        return self._serve()

    # -- reading ------------------------------------------------------------------------------
    def _read(self, obs: str) -> None:
        if self.hear(obs):
            return
        if m := re.match(r"Found customer (\S+)\.", obs):
            self.identity = m.group(1)
            return
        try:
            data = json.loads(obs)
        except ValueError:
            if re.match(r"(Order #W\d{4} (cancelled|will ship|items changed|is now paid)|Return of|Exchange of|"
                        r"The default address)", obs):
                self.done = True
            return
        if isinstance(data, list):
            self.found = data
        elif "payment_methods" in data:
            self.profile = data
        elif "order_id" in data:
            self.order = data
        elif "variants" in data:
            self.products[data["product_id"]] = data

    # -- deciding -----------------------------------------------------------------------------
    def _plan_and_confirm(self, plan: Any) -> str:
        if isinstance(plan, str):
            return plan
        tool, args, self.summary = plan
        if not self.confirmed:
            self.asked_confirm = True
            return respond(self.confirmation(tool, args))
        return call(tool, **args)

    def confirmation(self, tool: str, args: dict[str, Any]) -> str:
        return f"I will {self.summary}. Do you confirm?"

    def _methods(self) -> list[dict[str, Any]] | None:
        return self.profile["payment_methods"] if self.profile else None

    def _method(self) -> tuple[str | None, str | None]:
        """``(payment method id, None)``: the one the customer named, or where the policy puts a refund they leave
        to us (the original method, their gift card if it has expired); or ``(None, next action)``. The profile
        is read first: an expired method is never charged or refunded."""
        said = self.said.lower()
        if self._methods() is None:
            return None, call("get_customer", customer_id=self.identity)
        methods = {m["id"]: m for m in self._methods()}
        original = self.order["payment_method_id"] if self.order else None
        method = None
        if re.search(r"don't mind", said) and original:
            gift = [m for m in methods if methods[m]["kind"] == "gift_card"]
            expired = methods.get(original, {}).get("expired") and self.applies_policy
            method = gift[0] if expired and gift else original
        elif re.search(r"original|paid with", said) and original:
            method = original
        else:
            for word, kind in (("gift card", "gift_card"), ("paypal", "paypal")):
                if word in said:
                    found = [m for m in methods if methods[m]["kind"] == kind]
                    if not found:
                        return None, self.refuse(f"you have no {word} on your account")
                    method = found[0]
            last4 = re.search(r"ending in (\d{4})", said)
            if method is None and last4:
                method = f"credit_card_{last4.group(1)}"
        if method is None:
            return None, respond("Which payment method should I use?")
        if methods.get(method, {}).get("expired") and self.applies_policy:
            return None, self.refuse(f"{method} has expired, and an expired payment method is never charged or refunded")
        return method, None

    def _serve(self) -> str:
        order, kind = self.order, self.kind
        oid, status = order["order_id"], order["status"]
        if kind == "status":
            self.finished = True
            if status == "shipped":
                return respond(f"Your order {oid} has shipped; the tracking number is {order['tracking']}.")
            words = {"pending": "is still pending; it has not shipped yet", "delivered": "was delivered",
                     "cancelled": "was cancelled"}
            return respond(f"Your order {oid} {words.get(status, 'is ' + status)}.")
        rule = self._order_rule(order, kind)
        if rule and self.applies_policy:
            return self.refuse(rule)
        return self._plan_and_confirm(self._plan())

    @staticmethod
    def _order_rule(order: dict[str, Any], kind: str) -> str | None:
        """Why the order's status forbids a *kind* request (rules 3-5), or None."""
        oid, status = order["order_id"], order["status"]
        if kind in ("cancel", "address", "items", "payment") and status != "pending":
            return f"order {oid} is {status}, and only pending orders can be changed"
        if kind == "items" and order.get("items_changed"):
            return f"the items of order {oid} were changed already, and they can be changed only once"
        if kind in ("return", "exchange") and status != "delivered":
            return f"order {oid} is {status}; only delivered items can be returned or exchanged"
        if kind in ("return", "exchange") and order.get("delivered_days_ago", 0) > RETURN_DAYS:
            return f"order {oid} was delivered more than {RETURN_DAYS} days ago"
        return None

    def _plan(self) -> Any:
        order, kind, said = self.order, self.kind, self.said
        oid = order["order_id"]
        if kind == "cancel":
            reason = "ordered by mistake" if "mistake" in said else "no longer needed"
            return ("cancel_order", {"order_id": oid, "reason": reason},
                    f"cancel order {oid} ({reason}) and refund ${order['total']:.2f} to {order['payment_method_id']}")
        if kind == "address":
            address = _ADDRESS.findall(said)
            if not address:
                return respond("What is the new shipping address?")
            return ("modify_address", {"order_id": oid, "address": address[-1]},
                    f"change the shipping address of order {oid} to {address[-1]}")
        if kind == "payment":
            method, action = self._method()
            if method is None:
                return action
            return ("modify_payment", {"order_id": oid, "payment_method_id": method},
                    f"change the payment method of order {oid} to {method}")
        items = [i for i in order["items"] if i["name"] in said]
        if not items:
            return respond("Which items is it about?")
        if kind in ("return", "exchange") and any(i["final_sale"] for i in items) and self.applies_policy:
            return self.refuse("final-sale items cannot be returned or exchanged")
        new = None
        if kind != "return":
            new = self._new_variant(items[0])
            if isinstance(new, str):
                return new
        method, action = self._method()
        if method is None:
            return action
        if kind == "return":
            if method != order["payment_method_id"] and not method.startswith("gift_card") and self.applies_policy:
                return self.refuse("refunds go to the original payment method or a gift card")
            ids = sorted(i["id"] if "id" in i else i["item_id"] for i in items)
            amount = sum(i["price"] for i in items)
            names = " and ".join(i["name"] for i in items)
            return ("return_items", {"order_id": oid, "item_ids": ids, "payment_method_id": method},
                    f"return item {', '.join(ids)} ({names}) from order {oid} and refund ${amount:.2f} to {method}")
        item, (new_id, wanted, price) = items[0], new
        diff = price - item["price"]
        tool, verb = ("exchange_items", "exchange") if kind == "exchange" else ("modify_items", "change")
        direction = "charged to" if diff > 0 else "refunded to"
        return (tool, {"order_id": oid, "item_ids": [item["item_id"]], "new_item_ids": [new_id],
                       "payment_method_id": method},
                f"{verb} item {item['item_id']} ({item['name']}) in order {oid} for item {new_id} ({wanted}); the price "
                f"difference of ${abs(diff):.2f} is {direction} {method}")

    def _new_variant(self, item: dict[str, Any]) -> Any:
        """``(item id, options text, price)`` of the option the customer wants, or the next action."""
        pid = item["product_id"]
        if pid not in self.products:
            return call("get_product", product_id=pid)
        asked = self.said.split(f"{item['name']} (", 1)[-1].split(")", 1)[-1]  # after the item's own options
        if _LEFT_OPTION.search(asked):
            new = self._left_option(item)
            if new is None:
                return self.refuse("no other option of that product is in stock")
            wanted = {a: b for a, b in new["options"].items() if item["options"].get(a) != b}
            return new["item_id"], ", ".join(f"{a} {b}" for a, b in wanted.items()), new["price"]
        wanted = {axis: m[-1] for axis in item["options"] if (m := re.findall(rf"\b{axis} ([\w.]+?)(?=[\s,.?]|$)", asked))}
        if not wanted:
            return self.refuse("an item can only be exchanged for another option of the same product")
        options = {**item["options"], **wanted}
        new = next((v for v in self.products[pid]["variants"] if v["options"] == options), None)
        if new is None or not new["available"]:
            return self.refuse("that option is out of stock")
        return new["item_id"], ", ".join(f"{a} {b}" for a, b in wanted.items()), new["price"]

    def _left_option(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """The new option the customer leaves to us (rule 5): the other one in stock closest in price to the item,
        the cheaper of two as close; blind to the rule, the first other one in stock."""
        others = [v for v in self.products[item["product_id"]]["variants"]
                  if v["available"] and v["item_id"] != item["item_id"]]
        if not self.applies_policy:
            return others[0] if others else None
        return min(others, key=lambda v: (abs(v["price"] - item["price"]), v["price"]), default=None)

    def _profile(self) -> Any:
        address = _ADDRESS.findall(self.said)
        if not address:
            return respond("What is your new address?")
        return ("modify_customer_address", {"customer_id": self.identity, "address": address[-1]},
                f"change the default address on your account to {address[-1]}")

    def _search(self) -> str:
        if self.found is None:
            name = next((w for w in re.findall(r"\b[Tt]he ([A-Z][\w-]+(?: [A-Z][\w-]+)?)", self.said)), None)
            return call("search_products", query=name) if name else respond("Which product is it?")
        pid = self.found[0]["product_id"]
        if pid not in self.products:
            return call("get_product", product_id=pid)
        product = self.products[pid]
        variant = next((v for v in product["variants"]
                        if all(re.search(rf"\b{a} {re.escape(b)}\b", self.said) for a, b in v["options"].items())), None)
        if variant is None:
            return respond("Which options would you like?")
        self.finished = True
        stock = "in stock" if variant["available"] else "out of stock"
        return respond(f"The {product['name']} ({', '.join(f'{a} {b}' for a, b in variant['options'].items())}) "
                       f"costs ${variant['price']:.2f} and is {stock}.")


class PolicyBlindExpert(ExpertAgent):
    """The expert with every policy rule taken out (order status, the 30-day window, final sale, the refund method,
    expired cards, items changed once, where a refund the customer leaves to us goes): it serves as well as the
    expert and refuses nothing the policy forbids. Every task hinges on a rule, so it must (nearly) never win."""

    applies_policy = False


class MisdescribingExpert(ExpertAgent):
    """The expert, but its confirmation describes another change (task by task: another order, an
    extra action, a blanket question, another payment method), and it acts after the customer's
    answer whatever it was: this must never succeed."""

    def __init__(self, task_id: int = 0) -> None:
        super().__init__()
        self.way = task_id % 4

    def confirmation(self, tool: str, args: dict[str, Any]) -> str:
        self.confirmed = True  # acts next turn, yes or no
        oid = args.get("order_id", "#W0000")
        if self.way == 0:
            return f"I will {self.summary}, and close your account. Do you confirm?"
        if self.way == 1:
            other = next((o for o in (self.profile or {}).get("orders", []) if o != oid), "#W9999")
            return f"I will {self.summary.replace(oid, other)}. Do you confirm?" if oid in self.summary else \
                f"I will {self.summary} for order {other}. Do you confirm?"
        if self.way == 2:
            return f"May I go ahead with the change to {oid if 'order_id' in args else 'your account'}?"
        swapped = _METHOD.sub("paypal_0000", self.summary)
        return f"I will {swapped}, and charge a fee to paypal_0000. Do you confirm?"
