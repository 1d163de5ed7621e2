"""Task *k* of a store: a customer (two others in the store, sometimes with the same name), their
orders, and 2-4 requests, raised one at a time.

Every task hinges on the written policy twice, at any places in the conversation (the *hinges*):

- a request the policy forbids (:mod:`.forbidden`: a shipped order cancelled or changed, a return or
  exchange after 30 days, of a final-sale item or of an order not delivered, a refund to PayPal, a card
  that has expired, item options changed twice), to be refused, with the rule's reason, once its details
  are known. Its rule is drawn first, each of the seven as often (:data:`FORBIDDEN_BY_REASON`), so no
  reason is a safe guess;
- an allowed request whose write the policy decides and the customer does not state
  (:func:`.requests.exchange_left`, in every task: the new option left to the store is the one in stock
  closest in price, among four or more, and the difference goes back to the card paid with, or to the gift
  card when that card has expired, each half the time; :func:`.requests.return_left`, an extra hinge, the
  refund the same way), so no habit (the first option, the cheapest, always the gift card, always the
  original) pays.

The write an agent makes when it does what the customer says without applying the policy breaks a rule
and ends the episode with 0, so an agent blind to the rules wins nothing; one that refuses a request by a
guess must guess which request, which rule, which option and which way the difference goes. Every task also
carries an allowed request that needs a write, so refusing everything fails too; and the allowed requests
come near the rules (a return on day 30, an order with a final-sale item that is not returned, a refund
left to the store while the card is valid, an expired card on the profile that nobody asks about), so
neither a surface feature nor a place in the conversation tells which request to refuse.

The category (``intents[k % len(intents)]``) is the task's main request: an allowed kind (the first
request the customer raises apart from the hinges), or ``forbidden`` (a forbidden request, at any
place, beside an allowed write).
"""
from __future__ import annotations

import random

from agentgym_service.env import Task, goal_database
from agentgym_service.goal import Goal, Slot
from agentgym_service.wording import Words

from .catalog import catalog
from .desk import StoreDesk
from .forbidden import FORBIDDEN
from .records import new_database
from .requests import ALLOWED, BUILDERS, WRITES, Ctx, exchange_left, return_left
from .wording import WORDS
from .world import IdPool, background_orders, expired_card, make_customer

INTENTS = ALLOWED + ("forbidden",)
QUESTIONS = ("order_status", "product_search")
#: The hinges: requests the policy forbids whose asked-for write the desk refuses (``exchange_other_product`` asks
#: for a write no tool makes: it only opens a ``forbidden`` task), by the reason (:data:`.lexicon.REASONS`) a
#: refusal must give; and allowed requests whose write the policy decides.
FORBIDDEN_BY_REASON = {
    "not_pending": ("cancel_shipped", "address_shipped", "items_shipped", "payment_shipped"),
    "window": ("return_late", "exchange_late"),
    "final_sale": ("return_final_sale", "exchange_final_sale"),
    "undelivered": ("return_undelivered",),
    "refund_method": ("refund_elsewhere",),
    "changed_once": ("items_twice",),
    "expired": ("pay_expired",),
}
FORBIDDEN_HINGES = tuple(k for kinds in FORBIDDEN_BY_REASON.values() for k in kinds)
VALUE_HINGES = ("return_left", "exchange_left")
#: The value hinge every task has: an exchange whose new option and whose difference the customer leaves to the store
#: (a choice among four or more options, and one of two methods), so a guess rarely hits it.
VALUE_HINGE = "exchange_left"
BUILD = {**BUILDERS, **FORBIDDEN, "return_left": return_left, "exchange_left": exchange_left}


def forbidden_hinge(rng: random.Random) -> str:
    """A forbidden request: its reason first, each as likely, then one of the requests that break that rule."""
    return rng.choice(FORBIDDEN_BY_REASON[rng.choice(sorted(FORBIDDEN_BY_REASON))])


def hinge(rng: random.Random) -> str:
    """Another hinge: half the time an allowed request whose write the policy decides, else a forbidden one."""
    return rng.choice(VALUE_HINGES) if rng.random() < 0.5 else forbidden_hinge(rng)


def kinds_of(intent: str, rng: random.Random) -> list[str]:
    """The request builders (keys of :data:`BUILD`) of a task of category *intent*, in the order the customer
    raises them: the category's request (for ``forbidden``, one the policy forbids), an allowed write when that
    is a question or forbidden, sometimes another write or question, then the hinges inserted at any place: a
    forbidden request (the ``forbidden`` category's request is one), three times in ten another hinge when that
    keeps the task to three requests, and an exchange whose option and difference the policy decides
    (:data:`VALUE_HINGE`: the allowed write drawn beside the category's request becomes one, or one is inserted). A request for
    another product (``exchange_other_product``) comes first: no tool makes it as asked, and an agent that stalls
    there has resolved nothing a graded reward would pay for."""
    kinds = [] if intent == "forbidden" else [intent]
    side = None  # where the allowed write drawn beside the category's request is
    if intent in QUESTIONS or intent == "forbidden" or rng.random() < 0.35:
        side = len(kinds)
        kinds.append(rng.choice(WRITES))
    if rng.random() < 0.12:
        kinds.append(rng.choice(QUESTIONS))

    def insert(at: int, kind: str) -> None:
        nonlocal side
        kinds.insert(at, kind)
        side = None if side is None else side + (at <= side)

    def anywhere() -> int:  # (after a request for another product, which comes first)
        return rng.randint(kinds[:1] == ["exchange_other_product"], len(kinds))

    if intent == "forbidden" and rng.random() < 1 / len(FORBIDDEN):
        insert(0, "exchange_other_product")
    else:
        insert(anywhere(), forbidden_hinge(rng))
    if rng.random() < 0.3 and len(kinds) < 3:
        insert(anywhere(), hinge(rng))
    if VALUE_HINGE not in kinds:
        value = VALUE_HINGE
        if side is None:
            insert(anywhere(), value)
        else:
            kinds[side] = value
    return kinds


def make_task(task_id: int, seed: int, wording: str, intents: tuple[str, ...]) -> Task:
    rng = random.Random(f"ecommerce-task:{seed}:{task_id}")
    cat = catalog(seed)
    intent = intents[task_id % len(intents)]
    kinds = kinds_of(intent, rng)
    ids = IdPool(rng)
    customer = make_customer(rng, ids, gift_card=rng.random() < 0.5)
    if rng.random() < 0.2:  # an old card on the profile that no request is about
        expired_card(rng, ids, customer)
    first, last = customer.name.split()
    others = []
    for n in range(2):
        other = make_customer(rng, ids, name=(first, last) if n == 0 and rng.random() < 0.5 else None)
        while other.zip == customer.zip:  # name and zip identify one customer
            other = make_customer(rng, ids, name=(first, last))
        others.append(other)
    words = Words(WORDS, rng, wording)
    c = Ctx(rng, ids, cat, customer, words)
    orders = [o for person in [customer, *others] for o in background_orders(rng, ids, cat, person, rng.randint(1, 2))]
    requests = []
    for kind in kinds:
        requests.append(BUILD[kind](c))
    db = new_database()
    for person in [customer, *others]:
        db.customers.add(person)
    for order in orders + c.orders:
        db.orders.add(order)
    goal_db = db.copy()
    goal_database(goal_db, StoreDesk(goal_db, cat), requests)
    knows_email = rng.random() < 0.6
    identity = ((Slot("email", customer.email, words("email", email=customer.email)),) if knows_email else ()) + (
        Slot("name", customer.name, words("name", name=customer.name)),
        Slot("zip", customer.zip, words("zip", zip=customer.zip)))
    unknown = {} if knows_email else {"email": words("no_email", name=customer.name, zip=customer.zip)}
    goal = Goal(customer.name, identity, tuple(requests), unknown, rng.choice(("polite", "terse", "chatty")), wording)
    return Task(task_id, intent, db, goal_db, goal, world=cat)
