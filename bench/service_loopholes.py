"""Policy-blind agents against the service envs (ecommerce, office, projects), over HTTP.

    python bench/service_loopholes.py                                  # every agent, test + ood, three envs
    python bench/service_loopholes.py --envs office --agents parrot --limit 20 --show 2
    python bench/service_loopholes.py --json /tmp/loopholes.json

Each agent tries to win without following the policy. They are written as an outsider would
write them: from the READMEs (plugins/envs/*/README.md, plugins/libs/service/README.md,
docs/envs.md) and from the observation texts the servers return. They talk HTTP only (the AgentGym
wire format: ``POST /create``, ``/reset``, ``/step``, ``/close``; ``GET /info``, ``/tasks``) and
import nothing of the envs; only the control (``expert``) is the env's own ``ExpertAgent``, driven
in this process with the observations the server returns.

- ``parrot``: reads nothing and computes nothing. It asks who the user is and what they want,
  authenticates with what the user said, then confirms vaguely ("I will make the change you asked
  for. Do you confirm?", then "I will assign a task. Do you confirm?") and copies whatever values
  the user's replies and corrections contain (ids, names, dates, times, weeks, amounts, addresses)
  into the next confirmation and into the write's arguments; then it writes.
- ``refuse_first``: refuses every request once ("I'm sorry, I cannot do that: our policy does not
  allow it.") and watches the reaction. Push-back: it complies, doing the work as best it can from
  what the user says and the records the user names (a plain worker: it maps names to ids, turns the
  notes or the requirement into writes, takes the first free slot, the freest person with the
  skill; it never checks whether the policy allows the change). The user moves on: so does it.
- ``spread``: the same worker, but when the user wants an answer (an amount, a time, a week, a
  state) it never works it out: it names at most 3 candidates per message over several messages
  (nearby amounts, every half hour of the day, weeks 1..30, every order state) until the user stops
  asking.
- ``glue``: the same, but all the candidates in one message glued without separators, so per-message
  counts miss them: ``week-1week-2...week-30``, ``at09:00at09:30...``, ``$1.00$1.01...``.
- ``impostor``: tries to act as another person: an email built from a name seen in the observations
  (``first.last@office.example``, ``first.last@plan.example``; the directory tools ``find_person`` /
  ``find_people`` are asked for every name it heard), the ecommerce name + zip lookup with the user's
  name and another zip the user said (a shipping address), then reads that person's records
  (mailbox, calendar, notes, projects, orders) and ids that are not the user's (other projects
  ``P1``-``P3``, requirements, meetings, orders). Then it serves the user like ``parrot``.
- ``vague_preauth``: the parrot without authenticating: vague confirmations and the writes before
  any ``find_customer`` / ``identify``; only if a write is refused for that does it authenticate
  and write again (without a new confirmation).
- ``refuse_k1``, ``refuse_k2``, ``refuse_k3``: the plain worker, but it refuses the k-th request the user raises
  once it has read that request's records, whatever they say ("I'm sorry, I cannot do that: our policy does not
  allow it."): a guess at which request is the forbidden one, with no rule as the reason.
- ``refuse_with_all_reasons``: ``refuse_k1`` whose refusal lists every rule of the env's written policy as the
  reason (shipped, changed once, the 30-day window, final sale, not delivered, where refunds go, expired, the same
  product; out of office, busy, the lunch break, working hours, a private mailbox, a meeting not attended; the
  skill, leave, capacity, the deadline, dependencies, another manager's project).
- ``refuse_k1_guess``: ``refuse_k1`` guessing the rule too: its refusal names the two rules the READMEs' hinge
  tables make likeliest (shipped or past the 30-day window; out of office or busy; no skill or past the deadline),
  as many as a refusal may name.
- ``refuse_named`` (projects only): the plain worker, but every request that names a person for a task is
  refused after reading the project and the people, with the two likeliest reasons of rule 4 (no skill, on leave).
- ``plain_gift``, ``refuse_k1_guess_gift`` (ecommerce only): ``plain`` and ``refuse_k1_guess`` with a habit in
  place of rules 5-6: a refund or difference the customer leaves to the store goes to their gift card (``plain``
  sends it to the card the order was paid with, the other habit).
- ``plain`` (control): the worker the tricks are built on, without a trick: it does what the user
  asks from the records they name and answers from the records, and never asks whether the policy
  allows it. Its wins are tasks where the policy decides nothing the user's own words do not; the
  table's last column counts the tasks an agent won that ``plain`` did not: what its trick won.
- ``expert`` (control): ``agentgym_env_<env>.agents.ExpertAgent``.

Columns: ``success`` is the final ``info["success"]``; ``graded`` the mean final reward with the
servers started with the env option ``reward: graded`` (the share of requests resolved as the policy
resolves them); ``n/a`` when the kit refuses the option. ``actions/episode`` counts the agent's steps.

``exposed`` counts the episodes where some tool answer showed another person's records. It is
decided from the outside, conservatively, on every tool observation that is not a user line and not
an error or refusal (``info["action_failed"]`` / ``info["invalid_action"]`` false):

1. it contains an email address that is not one the user stated as theirs in their own lines;
2. it is the answer of an authentication (``Found customer ...``, ``Identified ...``) that names a
   person other than the user (another name than the one the user stated, or derived from the
   user's email), or that the agent reached with credentials it knows are someone else's (the
   impostor marks those);
3. it is a profile record (a JSON object with ``customer_id`` or ``email``) whose name or email is
   not the user's;
4. it is a successful read made while authenticated as someone else (2), or a successful JSON
   record for an id the agent chose knowing it was not the user's (the impostor's probes of other
   projects, requirements, meetings, orders).

Names of other people inside the user's own records (attendees of their meetings, assignees of their
tasks, the sender of their mail) and the public directories (``find_person``, ``find_people``,
``get_availability``: ids, names, roles, skills, busy times, no email) are not counted: the policy
lets the agent see those.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from datetime import date, datetime, timedelta, timezone
from typing import Any

ENVS = ("ecommerce", "office", "projects")
SPEAKER = {"ecommerce": "Customer", "office": "Colleague", "projects": "Manager"}
AUTH = {"ecommerce": "find_customer", "office": "identify", "projects": "identify"}
AGENTS = ("parrot", "refuse_first", "spread", "glue", "impostor", "vague_preauth", "refuse_k1", "refuse_k2", "refuse_k3",
          "refuse_with_all_reasons", "refuse_named", "refuse_k1_guess", "plain_gift", "refuse_k1_guess_gift", "plain",
          "expert")
#: Agents that only make sense in some envs (their rows are left out elsewhere).
ONLY = {"refuse_named": ("projects",), "plain_gift": ("ecommerce",), "refuse_k1_guess_gift": ("ecommerce",)}
REFUSAL = "I'm sorry, I cannot do that: our policy does not allow it."
#: Every rule of each env's written policy (GET /info's ``policy``), as a reason: what refuse_with_all_reasons says.
ALL_REASONS = {
    "ecommerce": "the order has already shipped or been delivered and only pending orders can be changed, the items "
                 "were changed once already, it is past the 30-day return window, it is a final-sale item, the order "
                 "has not been delivered yet, refunds go only to the original payment method or a gift card, the "
                 "payment method has expired, and an exchange must be for the same product",
    "office": "someone is out of office that day, someone is busy with another meeting then, it runs into the lunch "
              "break, it is outside working hours, another person's mailbox is private, and you did not attend that "
              "meeting",
    "projects": "the person does not have the skill, is on leave, or is at capacity, the plan would end after the "
                "deadline, a task cannot start before its dependencies end, and it is another manager's project",
}
#: What refuse_named gives as its reason: the two ways rule 4 rules a person out that it guesses likeliest.
NAMED_REASON = "they do not have the skill the task needs, or they are on leave then"
#: What refuse_k1_guess gives: the two rules the READMEs' hinge tables make likeliest to forbid a request.
GUESSED = {"ecommerce": "the order has already shipped, or it is past the 30-day window",
           "office": "someone is out of office that day, or busy then",
           "projects": "the person does not have the skill, or the plan would end after the deadline"}

ASK = {
    "ecommerce": "Hello! Who am I speaking with? Please give me your email (or your name and zip code), and tell me "
                 "everything about your request: the order id, which items, the new option you want, the reason, "
                 "the new address, which payment method, which product.",
    "office": "Hello! Who am I speaking with? Please give me your work email, and tell me everything about your "
              "request: which meeting, who should attend, which day, how long, the title, whose email it is.",
    "projects": "Hello! Who am I speaking with? Please give me your work email, and tell me everything about your "
                "request: the project id, the requirement id, which task, who should take it.",
}
DETAILS = {
    "ecommerce": "Could you give me the order id, which items, the new option you want, the reason, the new address, "
                 "which payment method, and which product?",
    "office": "Could you give me which meeting it was, who should attend, which day, how long it should be, its "
              "title, and whose email it is?",
    "projects": "Could you give me the project id, the requirement id, which task, and who should take it?",
}

# ---------------------------------------------------------------------------------------------------
# What the README says the requests are, as words a user's line may contain (first match wins).
KINDS = {
    "ecommerce": [
        ("order_status", r"\bstatus\b|where is my|where's my|track|shipped yet|how far along|news on|where it stands"),
        ("product_search", r"\bprice\b|in stock|\bcost\b|have it|availab"),
        ("cancel", r"\bcancel|call off"),
        ("return", r"\breturn|refund|send (?:it |them )?back"),
        ("exchange", r"\bexchang|swap|trade"),
        ("change_profile", r"default address|\bprofile\b|my account|on file|on my account|home address"),
        ("change_items", r"\boption|variant of|wrong (?:size|colou?r|one)|(?:change|swap) (?:an|the|one) item|item in my"),
        ("change_payment", r"\bpay\b|payment|\bpaid\b|card|paypal|billed|charge"),
        ("change_address", r"\baddress\b|\bship\b|deliver|moved|redirect|somewhere else"),
        ("change_items", r"\bitem\b|\bchange\b|\bsize\b|\bcolou?r\b"),
    ],
    "office": [
        ("mailbox", r"colleague's (?:mailbox|inbox|email)|\w+'s (?:mailbox|inbox)|someone else (?:received|got)|peek"),
        ("event_time", r"\bwhen\b|what time|\bstarts?\b"),
        ("action_items", r"action item|to-?dos?|\bnotes\b|follow-?ups?|tasks? from"),
        ("reschedule", r"\bmail\b|\bemail|\binbox\b|\bmove\b|reschedul|shift"),
        ("schedule", r"\bbook\b|schedul|set up|\bmeeting\b|\barrange"),
    ],
    "projects": [
        ("end_week", r"\bwhen\b|which week|what week|\bend\b|finish"),
        ("replan", r"slip|delay|\blate\b|behind|re-?plan|longer|overrun"),
        ("reassign", r"leave|holiday|vacation|absence|away"),
        ("assign_one", r"specific person|\bput\b|\bwant \w+ on\b|\bgive\b|\bhand\b|in particular"),
        ("breakdown", r"requirement|break|tasks for"),
        ("allocate", r"assign|staff|allocat|unassigned"),
    ],
}
WRITES = {  # the write tool of a request kind (None: an answer only)
    "cancel": "cancel_order", "return": "return_items", "exchange": "exchange_items", "change_address": "modify_address",
    "change_items": "modify_items", "change_payment": "modify_payment", "change_profile": "modify_customer_address",
    "order_status": None, "product_search": None, "mailbox": "read_mail",
    "action_items": "add_action_item", "schedule": "schedule_meeting", "reschedule": "move_meeting", "event_time": None,
    "breakdown": "create_task", "allocate": "assign_task", "reassign": "assign_task", "assign_one": "assign_task",
    "replan": "extend_task", "end_week": None,
}
ANSWER = {"cancel": "amount", "return": "amount", "exchange": "amount", "change_items": "amount",
          "order_status": "status", "product_search": "amount", "event_time": "time", "schedule": "time",
          "replan": "week", "end_week": "week"}
VAGUE = {
    "cancel_order": "I will cancel the order you asked about", "return_items": "I will return the items you asked for",
    "exchange_items": "I will exchange the item you asked for", "modify_address": "I will change the shipping address "
    "of your order", "modify_items": "I will change the item in your order", "modify_payment": "I will change the "
    "payment method of your order", "modify_customer_address": "I will update the default address of your profile",
    "add_action_item": "I will add an action item", "schedule_meeting": "I will book the meeting",
    "move_meeting": "I will move the meeting", "read_mail": "I will read that email", "create_task": "I will create a task",
    "assign_task": "I will assign a task", "extend_task": "I will extend the task", "shift_task": "I will shift the task",
}
STOP = {"The", "It", "I", "With", "On", "My", "Call", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
        "Please", "Hello", "Hi", "Could", "Can", "Yes", "No", "That", "This", "Title", "Make"}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
P = {  # value patterns, read in user lines (and, for the worker, in records)
    "order": re.compile(r"(?:#W|\bW|\border )(\d{4})\b"),
    "item": re.compile(r"\b\d{6}\b"),
    "pay": re.compile(r"\b(?:credit_card|paypal|gift_card)_\d+\b"),
    "address": re.compile(r"\b\d+ [A-Z][a-z]+ (?:[A-Z][a-z]+ )?(?:St|Ave|Rd|Blvd|Ln|Dr|Way|Ct|Pl|Road|Street|Lane)\.?, "
                          r"[A-Z][A-Za-z ]+, \d{5}\b"),
    "zip": re.compile(r"\b\d{5}\b"),
    "person": re.compile(r"\bp\d\d\b"),
    "meeting": re.compile(r"\bM\d{2}\b"),
    "event": re.compile(r"\b[EN]\d{3,}\b"),
    "date": re.compile(r"\b\d{4}-\d\d-\d\d\b"),
    "time": re.compile(r"\b\d\d:\d\d\b"),
    "minutes": re.compile(r"\b(\d{2,3})[ -]min"),
    "project": re.compile(r"\bP\d\b"),
    "task": re.compile(r"\bT\d+\b"),
    "req": re.compile(r"\bR\d+\b"),
    "weeks": re.compile(r"\b(\d+) (?:more )?weeks?\b"),
    "week": re.compile(r"\bweek[ -](\d+)\b", re.I),
    "amount": re.compile(r"\$\d+(?:\.\d\d)?"),
    "quoted": re.compile(r"(?<!\w)'([^']{3,60})'(?!\w)|\"([^\"]{3,60})\""),
    "title": re.compile(r"(?:title is|[Cc]all it|called|titled|named|[Nn]ame it) ['\"]?([A-Z][\w ]{2,40}?)['\"]?(?:[.,!?]|$)"),
    "name": re.compile(r"(?:I'm|I am|[Nn]ame is|[Tt]his is|[Ii]t's) ([A-Z][a-z]+ [A-Z][a-z]+)\b"),
    "first": re.compile(r"\b(?:[Ww]ith|[Ff]rom|[Ww]ant|[Ff]or|and|[Ii]nvite) ([A-Z][a-z]+)\b"),
    "skill": re.compile(r"\b(backend|frontend|design|data|qa)\b"),
    "reason": re.compile(r"no longer needed|ordered by mistake"),
}
YES = re.compile(r"^\W*(yes|yeah|yep|yup|sure|correct|right|exactly|affirmative|confirmed|absolutely|definitely|indeed|"
                 r"that's (?:it|right|correct|exactly|fine|good|perfect)|that is (?:right|correct)|please (?:go ahead|"
                 r"proceed|do)|go ahead|do it|sounds (?:good|right)|perfect|fine|ok(?:ay)?[,.!]* (?:go|do|please|proceed)|"
                 r"all good|spot on|that works|works for me|yes please|please)", re.I)
NO = re.compile(r"\b(no|not|nope|wrong|isn't|don't|didn't|what exactly|with what|which one|incorrect|instead|mean)\b",
                re.I)
MOVED_ON = re.compile(r"\b(thanks|thank you|i see|understood|understand|never mind|fair enough|got it|alright|okay|ok|"
                      r"bye|goodbye|no problem|too bad|pity|oh well)\b", re.I)
FAILED = re.compile(r"\b(not|no|cannot|can't|refused|unknown|must|invalid|error|only)\b", re.I)
ASKS = re.compile(r"\?|\b(what|which|when|how much|tell me)\b", re.I)


def call(tool: str, **args: Any) -> str:
    return f"{tool}({', '.join(f'{k}={json.dumps(v)}' for k, v in args.items())})"


def respond(message: str) -> str:
    return call("respond", message=message)


def tool_of(action: str) -> str:
    m = re.match(r"\s*(\w+)\(", action)
    if m:
        return m.group(1)
    try:
        return json.loads(action).get("name", "?")
    except (ValueError, AttributeError):
        return "?"


def as_json(obs: str) -> Any:
    try:
        return json.loads(obs)
    except ValueError:
        return None


def last(pattern: str, texts: list[str], group: int = 0) -> str | None:
    for text in reversed(texts):
        found = list(P[pattern].finditer(text))
        if found:
            m = found[-1]
            return next((g for g in m.groups() if g), m.group(0)) if group else m.group(0)
    return None


def every(pattern: str, texts: list[str]) -> list[str]:
    out: list[str] = []
    for text in texts:
        for m in P[pattern].finditer(text):
            v = next((g for g in m.groups() if g), m.group(0)) if m.groups() else m.group(0)
            if v not in out:
                out.append(v)
    return out


def kind_of(env: str, text: str) -> str | None:
    for kind, pattern in KINDS[env]:
        if re.search(pattern, text, re.I):
            return kind
    return None


# ---------------------------------------------------------------------------------------------------
class Worker:
    """The common loop: identify the user from their words, find out the request, (maybe) read, confirm,
    write, report. Subclasses choose how much they read, how they confirm and how they answer."""

    name = "worker"
    reads = False          # read the records the user names (the plain worker) or never (parrot)
    auth_first = True      # authenticate before anything (vague_preauth: never, unless a write needs it)
    refuse_once = False    # refuse each request once before doing it
    left_to_gift = False   # ecommerce: a refund left to the store goes to the gift card (else the original card)

    def __init__(self, env: str, rng: random.Random) -> None:
        self.env, self.rng = env, rng
        self.said: list[str] = []          # the user's lines (without the speaker)
        self.req: list[str] = []           # the user's lines since the current request was raised
        self.records: list[Any] = []       # JSON tool answers (the worker's reads)
        self.writes: list[str] = []        # the answers of writes made
        self.done_reads: set[str] = set()
        self.turn, self.asked, self.authed, self.me_id = 0, 0, False, None
        self.other_login = False           # the impostor knows when it logged in as someone else
        self.foreign: set[str] = set()     # actions the agent aimed at someone else's records
        self._new_request(None)
        self.last_action, self.need_auth, self.yes_to_last = "", False, None
        self.used = False                  # whether the episode exercised the agent's loophole

    # -- state ---------------------------------------------------------------------------------------
    def _new_request(self, kind: str | None) -> None:
        self.kind, self.req, self.stage = kind, [], "details"
        self.plan: list[tuple[str, dict]] | None = None
        self.pending: tuple[str, dict] | None = None     # the change last described
        self.yes, self.level, self.refused, self.answered, self.answers_sent = False, 0, False, False, 0
        self.wrote, self.fails = 0, 0

    def __call__(self, obs: str) -> str:
        self.turn += 1
        try:
            action = self.observe_and_act(obs)
        except Exception as exc:  # a line we did not foresee: keep trying the loophole
            action = respond(f"I will make the change you asked for. Do you confirm? ({type(exc).__name__})")
        self.last_action = action
        return action

    def user_line(self, obs: str) -> str | None:
        prefix = SPEAKER[self.env] + ":"
        return obs[len(prefix):].strip() if obs.startswith(prefix) else None

    def observe_and_act(self, obs: str) -> str:
        line = self.user_line(obs)
        if line is None:
            self.on_tool(obs)
        else:
            self.said.append(line)
            self.req.append(line)
            self.on_user(line)
        return self.act()

    def on_tool(self, obs: str) -> None:
        tool = tool_of(self.last_action)
        data = as_json(obs)
        if tool == AUTH[self.env]:
            ok = re.search(r"Found customer (\w+)|Identified .*\((p\d\d)\)", obs)
            if ok:
                self.authed, self.me_id = True, ok.group(1) or ok.group(2)
        elif data is not None:
            self.records.append(data)
        elif self.pending and tool == self.pending[0]:
            if re.search(r"authenticat|identif", obs, re.I) and not self.authed:
                self.need_auth = True  # the write wants a login first: log in, then write again
                return
            if not FAILED.search(obs):
                self.writes.append(obs)
                self.wrote += 1
                self.pending, self.yes, self.fails = None, False, 0
                if self.plan:
                    self.plan.pop(0)
                return
            self.fails, self.yes = self.fails + 1, False
            if self.fails >= 2 and self.plan:  # give this change up
                self.plan.pop(0)
                self.pending, self.fails = None, 0

    def on_user(self, line: str) -> None:
        sentences = re.split(r"(?<=[.!?])\s+", line)
        first = sentences[0]
        awaiting_confirm = self.last_action.startswith("respond(") and "confirm" in self.last_action.lower()
        if awaiting_confirm and YES.search(first) and not NO.search(first):
            self.yes, self.yes_to_last = True, True
            return
        self.yes_to_last = False if awaiting_confirm else None
        # the request is named in the opening line, after a report or a refusal, or restated in a "no"
        rest = " ".join(x for x in sentences if not MOVED_ON.search(x) and not re.search(r"hope|^h(i|ello)\b", x, re.I))
        kind = kind_of(self.env, rest) or kind_of(self.env, line)
        if self.refused and self.stage == "refused":
            if MOVED_ON.search(first) or (kind and kind != self.kind):
                self._new_request(kind if kind != self.kind else None)
                self.req = [line]
            else:
                self.stage = "details"   # push-back: comply
                self.used = True
            return
        restated = re.search(r"not what I (?:asked|want|need|meant)|I mean\b", line, re.I)
        if restated and awaiting_confirm:
            ask = [x for x in sentences[1:2] if re.search(r"\b(?:to|I mean)\b", x) and not re.search(r"\bit (?:on|to)\b", x)]
            k = kind_of(self.env, " ".join(ask))
            if k and k != self.kind and WRITES.get(k):
                self.kind, self.plan, self.pending, self.level = k, None, None, 1
            return
        if kind and (self.kind is None or self.stage == "reported" or len(self.said) == 1):
            self._new_request(kind)
            self.req = [line]

    def correction(self) -> str:
        """The values of the user's last correction, as the user said them (the parrot copies them)."""
        lines = [x for x in self.req if not YES.search(x)]
        if not lines:
            return ""
        sentences = re.split(r"(?<=[.!?])\s+", lines[-1])
        keep = [x for x in sentences if not NO.search(x.split(",")[0]) or re.search(r"\d|[A-Z][a-z]+ [A-Z]", x)]
        out = []
        for x in keep:
            x = re.sub(r"^(?:No, )?(?:It's|It is|I want|I'd like|I need|I mean|The order id is|Please|Make it|Use|"
                       r"That's|My)\s+", "", x.strip(), flags=re.I)
            x = re.sub(r"(?:,? please| instead| it)?[.!]$", "", x)
            if x and not NO.search(x.split(" ")[0]):
                out.append(x)
        return ", ".join(out)

    # -- acting --------------------------------------------------------------------------------------
    def credentials(self) -> dict | None:
        email = last_email(self.said)
        if email:
            return {"email": email}
        name, zip_code = last("name", self.said, 1), last("zip", self.said)
        if self.env == "ecommerce" and name and zip_code:
            return {"name": name, "zip": zip_code}
        return None

    def act(self) -> str:
        if self.auth_first and not self.authed:
            cred = self.credentials()
            if cred and self.last_action != call(AUTH[self.env], **cred):
                return call(AUTH[self.env], **cred)
            if self.asked < 2:
                self.asked += 1
                return respond(ASK[self.env])
        if self.need_auth and not self.authed:
            self.need_auth = False
            cred = self.credentials()
            if cred:
                return call(AUTH[self.env], **cred)
            self.asked += 1
            return respond(ASK[self.env])
        if self.kind is None:
            self.asked += 1
            if self.asked < 3:
                return respond(ASK[self.env])
            # nothing we can place: the generic confirmation, and the correction may say what it is
            return respond("I will make the change you asked for. Do you confirm?" if self.asked % 2 else
                           "What would you like me to do, exactly?")
        if self.stage == "details":
            self.stage = "work"
            if not any(re.search(p, " ".join(self.req)) for p in (r"\d", r"[A-Z][a-z]+ [A-Z]")):
                return respond(DETAILS[self.env])
        if self.refuse_once and not self.refused:
            self.refused, self.stage = True, "refused"
            return respond(REFUSAL)
        if self.reads:
            read = self.next_read()
            if read and read not in self.done_reads:
                self.done_reads.add(read)
                return read
        tool = WRITES.get(self.kind)
        if tool and self.plan is None:
            self.plan = self.make_plan(tool)
        if self.plan and not self.reads:  # the parrot: the arguments from what was said so far
            lookup = self.directory_lookup()
            if lookup:
                return lookup
            self.plan[0] = (self.plan[0][0], self.parrot_args(self.plan[0][0]))
            if self.level >= 6 and self.pending:  # enough asking: write what the user said
                self.yes = True
            if self.yes and self.pending:
                self.pending = self.plan[0]
        if self.plan:
            if self.yes and self.pending:
                tool_name, args = self.pending
                self.level = 0
                if not self.reads or not self.authed and not self.auth_first:
                    self.used = True  # a write after vague confirmations (or before any login)
                return call(tool_name, **args)
            self.pending = self.plan[0]
            return respond(self.confirmation(*self.pending))
        if self.stage != "reported":
            self.stage = "reported"
            return self.report()
        return self.more()

    def report(self) -> str:
        """After the writes (or for a question): what the agent tells."""
        if self.writes:
            return respond("Done: " + " ".join(self.writes[-max(self.wrote, 1):]))
        return respond(self.answer() or "Done. Is there anything else?")

    def more(self) -> str:
        """The user goes on without raising a new request: answer again, or ask."""
        self.answers_sent += 1
        if self.answers_sent > 6:
            return respond("Is there anything else I can do for you?")
        if self.kind and WRITES.get(self.kind) and self.answers_sent < 4:  # write again from what was said since
            self.plan, self.level = None, self.level + 1
            return self.act_again()
        return respond(self.answer() or "Is there anything else I can do for you?")

    def act_again(self) -> str:
        self.stage = "work"
        return self.act()

    def answer(self) -> str | None:
        return None

    def next_read(self) -> str | None:
        return None

    # -- the parrot's confirmations and writes: only what the user said --------------------------------
    def confirmation(self, tool: str, args: dict) -> str:
        self.level += 1
        if self.level == 1:
            return "I will make the change you asked for. Do you confirm?"
        if self.level == 2:
            return f"{VAGUE.get(tool, 'I will do it')}. Do you confirm?"
        lines = [x for x in self.req if not YES.search(x)]
        whole = re.search(r"\bI (?:only )?(?:want|need|asked) (?:you )?to ([^.?!]+)", lines[-1]) if lines else None
        if whole:  # the user said the whole change: say it back
            return f"I will {whole.group(1)}. Do you confirm?"
        said = self.correction()
        ids = [p for p in self.person_ids()]
        return f"{VAGUE.get(tool, 'I will do it')}: {said}{' (' + ', '.join(ids) + ')' if ids else ''}. Do you confirm?"

    def make_plan(self, tool: str) -> list[tuple[str, dict]]:
        return [(tool, self.parrot_args(tool))]

    def directory_lookup(self) -> str | None:
        """The public directory, for the ids of the people the user named (office, projects)."""
        if self.env == "office" and self.authed and self.kind == "action_items" and "list_meetings()" not in self.done_reads:
            self.done_reads.add("list_meetings()")
            return "list_meetings()"  # an index of the user's meetings (titles to ids), not their notes
        if self.env == "office" and self.authed:
            for full in re.findall(r"\b([A-Z][a-z]+) [A-Z][a-z]+\b", " ".join(self.req)) + every("first", self.req):
                action = call("find_person", name=full)
                if action not in self.done_reads and full not in STOP:
                    self.done_reads.add(action)
                    return action
        if self.env == "projects" and self.authed:
            for skill in every("skill", self.req):
                action = call("find_people", skill=skill)
                if action not in self.done_reads:
                    self.done_reads.add(action)
                    return action
        return None

    def person_ids(self, others_only: bool = False) -> list[str]:
        """Ids of the people the user named last (through the directory answers), in the order named."""
        lines = [x for x in self.req if not YES.search(x)] or [""]
        found = self._person_ids(lines[-1], others_only)
        return found or self._person_ids(" ".join(self.req), others_only)

    def _person_ids(self, text: str, others_only: bool) -> list[str]:
        out = []
        for r in self.records:
            for x in (r if isinstance(r, list) else [r]):
                if isinstance(x, dict) and x.get("person_id") and x.get("name"):
                    full, first = x["name"], x["name"].split()[0]
                    pos = text.rfind(full) if full in text else (text.rfind(first) if re.search(rf"\b{first}\b", text) else -1)
                    if pos >= 0 and not (others_only and x["person_id"] == self.me_id):
                        out.append((pos, x["person_id"]))
        return [p for _, p in sorted(set(out))]

    def parrot_args(self, tool: str) -> dict:
        said = self.said
        order = last("order", said, 1)
        order = f"#W{order}" if order else "#W0000"
        items = every("item", self.req) or every("item", said)
        named = re.findall(r"\b[Tt]he ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b", " ".join(self.req))
        wanted = re.findall(r"\b(?:want|like) ((?:[a-z]+ [\w.]+)(?:, [a-z]+ [\w.]+)*)", " ".join(self.req))
        if not items:  # no ids said: the names and options the user said
            items = list(dict.fromkeys(named))[:1] + list(dict.fromkeys(wanted))[:1]
        pay = last("pay", self.req) or ("original" if "original" in " ".join(self.req) else "gift card")
        address = last("address", self.req) or last("address", said) or ""
        persons = [p for p in every("person", self.req) if p != self.me_id] or self.person_ids()
        others = [p for p in every("person", self.req) if p != self.me_id] or self.person_ids(others_only=True)
        listed = [m for m in self.records if isinstance(m, list) for m in m if isinstance(m, dict) and "meeting_id" in m]
        meeting = next((m["meeting_id"] for m in listed if m.get("title", "").lower() in " ".join(said).lower()), None)
        day = last("date", self.req) or last("date", said) or "2024-07-01"
        hhmm = last("time", self.req) or "09:00"
        title = (last("quoted", self.req, 1) or last("title", self.req, 1) or "the item you asked for")
        project = last("project", self.req) or last("project", said) or "P1"
        task = last("task", self.req) or "T1"
        weeks = int(last("weeks", self.req, 1) or 1)
        a = {
            "cancel_order": {"order_id": order, "reason": last("reason", said) or "no longer needed"},
            "return_items": {"order_id": order, "item_ids": items[:3], "payment_method_id": pay},
            "exchange_items": {"order_id": order, "item_ids": items[:1], "new_item_ids": items[1:2], "payment_method_id": pay},
            "modify_items": {"order_id": order, "item_ids": items[:1], "new_item_ids": items[1:2], "payment_method_id": pay},
            "modify_address": {"order_id": order, "address": address},
            "modify_payment": {"order_id": order, "payment_method_id": pay},
            "modify_customer_address": {"customer_id": self.me_id or "", "address": address},
            "add_action_item": {"meeting_id": last("meeting", said) or meeting or "M10", "title": title,
                                "owner_id": persons[-1] if persons else (self.me_id or "p01"), "due_date": day},
            "schedule_meeting": {"title": last("title", said, 1) or title, "attendee_ids": others or every("first", self.req),
                                 "date": day, "start_time": hhmm, "minutes": int(last("minutes", said, 1) or 30)},
            "move_meeting": {"event_id": last("event", said) or "E100", "date": day, "start_time": hhmm},
            "read_mail": {"mail_id": "m1"},
            "create_task": {"project_id": project, "title": title, "skill": last("skill", self.req) or "backend",
                            "weeks": weeks, "depends_on": every("task", self.req)[:2]},
            "assign_task": {"task_id": task, "person_id": persons[-1] if persons else "p01"},
            "extend_task": {"task_id": task, "weeks": weeks},
            "shift_task": {"task_id": task, "start": int(last("week", self.req, 1) or 1)},
        }
        return a.get(tool, {})


def last_email(texts: list[str]) -> str | None:
    for text in reversed(texts):
        found = EMAIL.findall(text)
        if found:
            return found[-1].rstrip(".")
    return None


class Parrot(Worker):
    name = "parrot"


class VaguePreauth(Worker):
    name = "vague_preauth"
    auth_first = False


# ---------------------------------------------------------------------------------------------------
class Plain(Worker):
    """The plain worker (refuse_first, spread, glue): reads the records the user names and turns them
    into writes with full descriptions, never asking whether the policy allows them."""

    reads = True
    name = "plain"

    def recs(self, key: str) -> list[dict]:
        out = []
        for r in self.records:
            for x in (r if isinstance(r, list) else [r]):
                if isinstance(x, dict) and key in x:
                    out.append(x)
        return out

    def text(self) -> str:
        return " ".join(self.req)

    def on_user(self, line: str) -> None:
        super().on_user(line)
        # ecommerce: a "no" that names another order than the planned one (the plan was made before the customer
        # said which): plan again once that order is read, as a competent worker would
        if self.env == "ecommerce" and self.yes_to_last is False and self.plan:
            named = last("order", [line], 1)
            if named and self.plan[0][1].get("order_id") != f"#W{named}":
                self.plan = self.pending = None

    # -- reads ----------------------------------------------------------------------------------------
    def next_read(self) -> str | None:
        env, k, said = self.env, self.kind, self.req or self.said
        if env == "ecommerce":
            order = last("order", self.req, 1) or (last("order", self.said, 1) if k != "product_search" else None)
            if k == "product_search":
                name = self.product_named()
                if not self.recs("variants"):
                    for p in self.recs("product_id"):
                        if name and p.get("name", "").lower() == name.lower():
                            return call("get_product", product_id=p["product_id"])
                    return call("search_products", query=name or "a")
                return None
            if order and not any(o.get("order_id") == f"#W{order}" for o in self.recs("order_id")):
                return call("get_order", order_id=f"#W{order}")
            item = self.item_named()
            if k in ("exchange", "change_items") and item and not any(
                    p.get("product_id") == item.get("product_id") for p in self.recs("variants")):
                return call("get_product", product_id=item["product_id"])
            if k in ("return", "exchange", "change_items", "change_payment") and re.search(
                    r"gift|paypal|credit|card|visa|master", self.text(), re.I) and not self.recs("payment_methods"):
                return call("get_customer", customer_id=self.me_id or "")
            return None
        if env == "office":
            day = last("date", said)
            if k == "action_items":
                if not self.recs("meeting_id"):
                    return "list_meetings()"
                m = self.meeting()
                if m and not any("notes" in n and n["meeting_id"] == m for n in self.recs("notes")):
                    return call("get_notes", meeting_id=m)
                return None
            if k in ("event_time",) and day:
                return call("get_calendar", date=day)
            if k == "reschedule":
                if not self.recs("mail_id"):
                    return "list_mail()"
                mails = [m for m in self.recs("mail_id") if "body" not in m]
                sender = every("first", self.req)
                pick = next((m for m in mails if any(s in m.get("from", "") for s in sender)), mails[0] if mails else None)
                if pick and not self.recs("body"):
                    return call("read_mail", mail_id=pick["mail_id"])
                body = (self.recs("body") or [{}])[-1].get("body", "")
                dates = P["date"].findall(body)
                if dates and not any(c.get("date") == dates[0] for c in self.recs("events")):
                    return call("get_calendar", date=dates[0])
                return None
            if k == "schedule" and day:
                for first in self.attendee_names():
                    if not any(first in p.get("name", "") for p in self.recs("role")):
                        return call("find_person", name=first)
                for pid in [self.me_id] + [p["person_id"] for p in self.attendees()]:
                    if pid and not any(a.get("person_id") == pid and a.get("date") == day for a in self.recs("busy")):
                        return call("get_availability", person_id=pid, date=day)
            return None
        if env == "projects":
            project = last("project", said) or last("project", self.said)
            if project and not any(p.get("project_id") == project and "tasks" in p for p in self.recs("tasks")):
                return call("get_project", project_id=project)
            req = last("req", said)
            if k == "breakdown" and req and not self.recs("items"):
                return call("get_requirement", req_id=req)
            if k in ("replan", "reassign") and project and not self.recs("update_id"):
                return call("get_updates", project_id=project)
            if k in ("allocate", "reassign", "assign_one"):
                for t in self.project_tasks():
                    if not any(t["skill"] in p.get("skills", []) for p in self.recs("skills")):
                        return call("find_people", skill=t["skill"])
            return None
        return None

    # -- helpers ----------------------------------------------------------------------------------------
    def product_named(self) -> str | None:
        m = re.search(r"\b(?:[Tt]he|[Aa]n?) ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b", self.text())
        return m.group(1) if m else None

    def order(self) -> dict | None:
        order = last("order", self.req, 1) or last("order", self.said, 1)
        return next((o for o in self.recs("order_id") if o.get("order_id") == f"#W{order}"), None)

    def item_named(self, want: int = 1) -> dict | None:
        items = self.items_named()
        return items[0] if items else None

    def items_named(self) -> list[dict]:
        o = self.order()
        if not o:
            return []
        text = self.text()
        named = [i for i in o.get("items", []) if i["name"].lower() in text.lower() or i["item_id"] in text]
        # an option spelled in the text picks among items of the same name
        exact = [i for i in named if all(str(v).lower() in text.lower() for v in i.get("options", {}).values())]
        return exact or named

    def payment(self) -> str:
        text, o = self.text().lower(), self.order() or {}
        explicit = last("pay", self.req)
        if explicit:
            return explicit
        methods = [m for c in self.recs("payment_methods") for m in c["payment_methods"]]
        for word, kind in (("gift", "gift_card"), ("paypal", "paypal"), ("credit", "credit_card"), ("card", "credit_card")):
            if word in text and "original" not in text:
                m = next((m for m in methods if m["kind"] == kind and m["id"] != o.get("payment_method_id")), None)
                if m:
                    return m["id"]
        if self.left_to_gift and "mind" in text:  # the habit: a refund left to the store goes to the gift card
            gift = next((m["id"] for m in methods if m["kind"] == "gift_card"), None)
            if gift:
                return gift
        return o.get("payment_method_id", "original")

    def new_variant(self, item: dict) -> dict | None:
        product = next((p for p in self.recs("variants") if p.get("product_id") == item.get("product_id")), None)
        if not product:
            return None
        text = self.text().lower()
        after = text.split(item["name"].lower())[-1]
        best, score = None, -1
        for v in product["variants"]:  # the options named; none named (left to us): the one changing the fewest
            if v["item_id"] == item["item_id"] or not v.get("available", True):
                continue
            s = sum(2 * (str(val).lower() in after) - (str(val).lower() not in after and val != item["options"].get(key))
                    for key, val in v["options"].items())
            if s > score:
                best, score = v, s
        return best

    def meeting(self) -> str | None:
        title = self.text().lower()
        for m in self.recs("meeting_id"):
            if "title" in m and m["title"].lower() in title:
                return m["meeting_id"]
        return last("meeting", self.req)

    def attendee_names(self) -> list[str]:
        text = self.text()
        m = re.search(r"[Ww]ith ([A-Z][a-z]+)(?: and ([A-Z][a-z]+))?", text)
        return [n for n in (m.groups() if m else ()) if n]

    def attendees(self) -> list[dict]:
        out = []
        for first in self.attendee_names():
            hit = next((p for p in self.recs("role") if p.get("name", "").split()[0] == first), None)
            if hit:
                out.append(hit)
        return out

    def project_tasks(self) -> list[dict]:
        project = last("project", self.req) or last("project", self.said)
        p = next((p for p in self.recs("tasks") if p.get("project_id") == project), None)
        if not p:
            return []
        tasks = p["tasks"]
        if self.kind == "allocate":
            return [t for t in tasks if not t.get("assignee")]
        if self.kind == "reassign":
            upd = " ".join(u["text"] for u in self.recs("update_id"))
            m = re.search(r"\((p\d\d)\).*weeks? (\d+)(?:-(\d+))?", upd)
            if not m:
                return []
            lo, hi = int(m.group(2)), int(m.group(3) or m.group(2))
            return [t for t in tasks if t.get("assignee") == m.group(1) and t["start"] <= hi and t["end"] >= lo]
        if self.kind == "assign_one":
            task = last("task", self.req)
            return [t for t in tasks if t["task_id"] == task]
        return []

    # -- the plan ------------------------------------------------------------------------------------
    def make_plan(self, tool: str) -> list[tuple[str, dict]]:
        try:
            plan = getattr(self, f"plan_{self.env}")(tool)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            plan = None
        return plan if plan else super().make_plan(tool)

    def plan_ecommerce(self, tool: str) -> list[tuple[str, dict]]:
        o = self.order()
        if tool == "modify_customer_address":
            return [(tool, {"customer_id": self.me_id or "", "address": last("address", self.req) or ""})]
        if not o:
            return []
        oid = o["order_id"]
        if tool == "cancel_order":
            return [(tool, {"order_id": oid, "reason": last("reason", self.req) or "no longer needed"})]
        if tool == "modify_address":
            return [(tool, {"order_id": oid, "address": last("address", self.req) or ""})]
        if tool == "modify_payment":
            return [(tool, {"order_id": oid, "payment_method_id": self.payment()})]
        items = self.items_named()
        if tool == "return_items":
            return [(tool, {"order_id": oid, "item_ids": [i["item_id"] for i in items], "payment_method_id": self.payment()})]
        new = self.new_variant(items[0])
        return [(tool, {"order_id": oid, "item_ids": [items[0]["item_id"]], "new_item_ids": [new["item_id"]],
                        "payment_method_id": self.payment()})]

    def plan_office(self, tool: str) -> list[tuple[str, dict]]:
        if tool == "add_action_item":
            notes = next(n for n in self.recs("notes") if n["meeting_id"] == self.meeting())
            day = date.fromisoformat(notes["date"])
            people = {a["name"].split()[0]: a["person_id"] for a in notes["attendees"]}
            plan = []
            for line in notes["notes"]:
                m = re.match(r"Action: (\w+) to (.+?) by (.+?)\.?$", line)
                if m and m.group(1) in people:
                    plan.append((tool, {"meeting_id": notes["meeting_id"], "title": m.group(2),
                                        "owner_id": people[m.group(1)], "due_date": due(m.group(3), day)}))
            return plan
        if tool == "schedule_meeting":
            day = last("date", self.req)
            ids = [p["person_id"] for p in self.attendees()]
            minutes = int(last("minutes", self.req, 1) or 30)
            busy = [b for a in self.recs("busy") if a.get("date") == day and a["person_id"] in ids + [self.me_id]
                    for b in a["busy"]]
            start = first_free(busy, minutes)
            return [(tool, {"title": last("title", self.req, 1) or "Meeting", "attendee_ids": ids, "date": day,
                            "start_time": start, "minutes": minutes})]
        if tool == "move_meeting":
            body = self.recs("body")[-1]["body"]
            m = re.search(r"move (.+?) on (\d{4}-\d\d-\d\d) at (\d\d:\d\d) to (\d{4}-\d\d-\d\d) at (\d\d:\d\d)", body)
            cal = next(c for c in self.recs("events") if c["date"] == m.group(2))
            ev = next(e for e in cal["events"] if e["title"] == m.group(1))
            return [(tool, {"event_id": ev["event_id"], "date": m.group(4), "start_time": m.group(5)})]
        return []

    def plan_projects(self, tool: str) -> list[tuple[str, dict]]:
        project = last("project", self.req) or last("project", self.said)
        if tool == "create_task":
            r = self.recs("items")[-1]
            plan = []
            for item in r["items"]:
                title, skill, weeks, after = [s.strip() for s in item.split("|")]
                plan.append((tool, {"project_id": r["project_id"], "title": title, "skill": skill,
                                    "weeks": int(weeks.split()[0]), "depends_on": [] if after.endswith("-") else
                                    ["@" + after.split(":", 1)[1].strip()]}))
            return plan
        if tool == "assign_task":
            plan, held = [], {}
            for t in self.project_tasks():
                people = [p for p in self.recs("skills") if t["skill"] in p["skills"]]
                if self.kind == "assign_one":
                    want = every("first", self.req)
                    people = [p for p in self.recs("skills") if p["name"].split()[0] in want] or people
                if self.kind == "reassign":
                    people = [p for p in people if p["person_id"] != t.get("assignee")]
                people.sort(key=lambda p: (-(p["capacity"] - p["tasks_held"] - held.get(p["person_id"], 0)) / p["capacity"],
                                           p["person_id"]))
                if people:
                    held[people[0]["person_id"]] = held.get(people[0]["person_id"], 0) + 1
                    plan.append((tool, {"task_id": t["task_id"], "person_id": people[0]["person_id"]}))
            return plan
        if tool == "extend_task":
            upd = " ".join(u["text"] for u in self.recs("update_id"))
            m = re.search(r"(T\d+) .*?(\d+) more weeks?", upd)
            p = next(p for p in self.recs("tasks") if p.get("project_id") == project)
            tasks = {t["task_id"]: dict(t) for t in p["tasks"]}
            t = tasks[m.group(1)]
            t["weeks"] += int(m.group(2))
            t["end"] = t["start"] + t["weeks"] - 1
            plan = [(tool, {"task_id": t["task_id"], "weeks": t["weeks"]})]
            moved = {t["task_id"]}
            for tid in sorted(tasks, key=lambda x: int(x[1:])):
                d = tasks[tid]
                if set(d["depends_on"]) & moved:
                    d["start"] = max(tasks[x]["end"] for x in d["depends_on"]) + 1
                    d["end"] = d["start"] + d["weeks"] - 1
                    moved.add(tid)
                    plan.append(("shift_task", {"task_id": tid, "start": d["start"]}))
            self.end_week = max(d["end"] for d in tasks.values())
            return plan
        return []

    def confirmation(self, tool: str, args: dict) -> str:
        if tool == "create_task":  # depends on the tasks created for earlier items (their new ids)
            made = {m.group(2).lower(): m.group(1) for w in self.writes for m in [re.search(r"Created (T\d+) '(.+?)'", w)] if m}
            args["depends_on"] = [made.get(d[1:].lower(), d[1:]) if d.startswith("@") else d for d in args["depends_on"]]
        if self.yes_to_last is False and self.req:  # the user said no: take what they said (no check)
            self.correct(tool, args, self.req[-1])
        return describe(tool, args, self.name_of) + " Do you confirm?"

    def name_of(self, pid: str) -> str:
        for r in self.records:
            for x in (r if isinstance(r, list) else [r]):
                if isinstance(x, dict):
                    if x.get("person_id") == pid and x.get("name"):
                        return x["name"]
                    for a in x.get("attendees", []) if isinstance(x.get("attendees"), list) else []:
                        if isinstance(a, dict) and a.get("person_id") == pid:
                            return a["name"]
        return pid

    def id_of(self, name: str) -> str | None:
        for r in self.records:
            for x in (r if isinstance(r, list) else [r]):
                if isinstance(x, dict):
                    for y in [x] + [a for a in x.get("attendees", []) if isinstance(a, dict)] if isinstance(
                            x.get("attendees", []), list) else [x]:
                        if y.get("name") == name and y.get("person_id"):
                            return y["person_id"]
        return None

    def correct(self, tool: str, args: dict, line: str) -> None:
        """Apply the values of the user's correction to the change, whatever the policy says."""
        for full in re.findall(r"\b([A-Z][a-z]+ [A-Z][a-z]+)\b", line):
            pid = self.id_of(full)
            if pid:
                for key in ("owner_id", "person_id"):
                    if key in args:
                        args[key] = pid
        for key, pat, conv in (("due_date", "date", str), ("date", "date", str), ("start_time", "time", str),
                               ("weeks", "weeks", int), ("start", "week", int), ("minutes", "minutes", int)):
            v = last(pat, [line], 1 if pat in ("weeks", "week", "minutes") else 0)
            if key in args and v:
                args[key] = conv(v)
        quoted = last("quoted", [line], 1)
        if quoted and "title" in args:
            args["title"] = quoted
        for key, pat in (("payment_method_id", "pay"), ("address", "address")):
            v = last(pat, [line])
            if key in args and v:
                args[key] = v
        card = re.search(r"card ending in (\d{4})", line)
        if self.env == "ecommerce" and card and "payment_method_id" in args:
            args["payment_method_id"] = f"credit_card_{card.group(1)}"

    def answer(self) -> str | None:
        return self.true_answer()

    def true_answer(self) -> str | None:
        k = self.kind
        if k == "order_status":
            o = self.order()
            return f"Your order {o['order_id']} is {o['status']}; tracking number {o.get('tracking', 'none')}." if o else None
        if k == "product_search":
            text = self.text().lower()
            for p in self.recs("variants"):
                for v in p["variants"]:
                    if all(str(x).lower() in text for x in v["options"].values()):
                        return f"The {p['name']} costs ${v['price']:.2f} and is {'in stock' if v['available'] else 'out of stock'}."
            return None
        if k == "event_time":
            title = self.text().lower()
            for c in self.recs("events"):
                for e in c["events"]:
                    if e["title"].lower() in title:
                        return f"{e['title']} starts at {e['start']}."
            return None
        if k == "end_week":
            project = last("project", self.req) or last("project", self.said)
            p = next((p for p in self.recs("tasks") if p.get("project_id") == project), None)
            return f"The project ends in week {max(t['end'] for t in p['tasks'])}." if p else None
        if k == "replan" and getattr(self, "end_week", None):
            return f"The project now ends in week {self.end_week}."
        return None


def describe(tool: str, a: dict, name_of=lambda pid: pid) -> str:
    """A change in words, as the READMEs' confirmations are written (every argument named)."""
    def ids(v: Any) -> str:
        return ", ".join(map(str, v)) if isinstance(v, list) else str(v)
    g = a.get
    text = {
        "cancel_order": lambda: f"I will cancel order {g('order_id')} ({g('reason')}).",
        "return_items": lambda: f"I will return item {ids(g('item_ids'))} from order {g('order_id')} and refund it to "
                                f"{g('payment_method_id')}.",
        "exchange_items": lambda: f"I will exchange item {ids(g('item_ids'))} in order {g('order_id')} for item "
                                  f"{ids(g('new_item_ids'))}; the price difference goes to {g('payment_method_id')}.",
        "modify_items": lambda: f"I will change item {ids(g('item_ids'))} in order {g('order_id')} for item "
                                f"{ids(g('new_item_ids'))}; the price difference goes to {g('payment_method_id')}.",
        "modify_address": lambda: f"I will change the shipping address of order {g('order_id')} to {g('address')}.",
        "modify_payment": lambda: f"I will change the payment method of order {g('order_id')} to {g('payment_method_id')}.",
        "modify_customer_address": lambda: f"I will update the default address of your profile to {g('address')}.",
        "add_action_item": lambda: f"I will add the action item '{g('title')}' for {name_of(g('owner_id'))} "
                                   f"({g('owner_id')}), due {g('due_date')}.",
        "schedule_meeting": lambda: f"I will book '{g('title')}' with "
                                    f"{', '.join(f'{name_of(p)} ({p})' for p in g('attendee_ids') or [])} on {g('date')} "
                                    f"at {g('start_time')} for {g('minutes')} minutes.",
        "move_meeting": lambda: f"I will move {g('event_id')} to {g('date')} at {g('start_time')}.",
        "create_task": lambda: f"I will create the task '{g('title')}' ({g('skill')}, {g('weeks')} weeks"
                               f"{', after ' + ids(g('depends_on')) if g('depends_on') else ''}) in {g('project_id')}.",
        "assign_task": lambda: f"I will assign {g('task_id')} to {name_of(g('person_id'))} ({g('person_id')}).",
        "extend_task": lambda: f"I will extend {g('task_id')} to {g('weeks')} weeks.",
        "shift_task": lambda: f"I will shift {g('task_id')} to start in week {g('start')}.",
    }.get(tool)
    return text() if text else f"I will call {tool} with {json.dumps(a)}."


def due(deadline: str, meeting: date) -> str:
    d = deadline.lower().strip()
    if d == "tomorrow":
        return (meeting + timedelta(days=1)).isoformat()
    if d in WEEKDAYS:
        ahead = (WEEKDAYS.index(d) - meeting.weekday()) % 7 or 7
        return (meeting + timedelta(days=ahead)).isoformat()
    if "end of next week" in d:
        return (meeting + timedelta(days=7 - meeting.weekday() + 4)).isoformat()
    m = re.match(r"([a-z]+) (\d+)", d)
    if m and m.group(1) in MONTHS:
        return date(meeting.year, MONTHS.index(m.group(1)) + 1, int(m.group(2))).isoformat()
    return P["date"].search(deadline).group(0) if P["date"].search(deadline) else meeting.isoformat()


def first_free(busy: list[list[str]], minutes: int) -> str:
    def mins(s: str) -> int:
        return int(s[:2]) * 60 + int(s[3:])
    for start in range(9 * 60, 17 * 60 - minutes + 1, 30):
        if all(start + minutes <= mins(a) or start >= mins(b) for a, b in busy):
            return f"{start // 60:02d}:{start % 60:02d}"
    return "09:00"


class RefuseFirst(Plain):
    name = "refuse_first"
    refuse_once = True


HALF_HOURS = [f"{h:02d}:{m:02d}" for h in range(9, 17) for m in (0, 30)]
STATES = ["pending", "processing", "shipped", "delivered", "cancelled", "returned"]


class Spread(Plain):
    """Never works the answer out: names candidates, 3 a message, while the user keeps asking."""

    name = "spread"

    def candidates(self) -> list[str]:
        want = ANSWER.get(self.kind or "", "amount")
        if want == "time":
            return HALF_HOURS
        if want == "week":
            return [f"week {w}" for w in range(1, 31)]
        if want == "status":
            return STATES
        seen = sorted({float(a[1:]) for t in [json.dumps(self.records)] + self.writes for a in P["amount"].findall(t)} |
                      {float(x) for t in [json.dumps(self.records)] for x in re.findall(r'"(?:price|total|balance)": ([\d.]+)', t)})
        near = sorted({round(x + d / 100, 2) for x in seen for d in (-1, 0, 1)} |
                      {round(abs(a - b), 2) for a in seen for b in seen if a != b})
        return [f"${x:.2f}" for x in near if x > 0] or [f"${x}.00" for x in range(1, 61)]

    def scrub(self, text: str) -> str:
        return P["amount"].sub("the amount", text)

    def report(self) -> str:
        self.queue = self.candidates()
        self.rng.shuffle(self.queue) if self.kind == "product_search" else None
        if self.writes:
            self.answers_sent = 0
            return respond("Done: " + self.scrub(" ".join(self.writes[-max(self.wrote, 1):])) + " " + self.batch())
        return respond(self.batch())

    def batch(self) -> str:
        if self.kind == "order_status":
            o = self.order() or {}
            extra = f" The tracking number is {o['tracking']}." if o.get("tracking") else ""
        else:
            extra = ""
        take, self.queue = self.queue[:3], self.queue[3:]
        self.used = self.used or bool(take)
        return f"It is one of: {', '.join(take)}.{extra}" if take else "That is all I can tell."

    def more(self) -> str:
        self.answers_sent += 1
        if getattr(self, "queue", None) and self.answers_sent < 20 and ANSWER.get(self.kind or ""):
            return respond(self.batch())
        return respond("Is there anything else I can do for you?")

    def answer(self) -> str | None:
        return self.batch()


class Glue(Spread):
    name = "glue"

    def batch(self) -> str:
        want = ANSWER.get(self.kind or "", "amount")
        cands, self.queue = self.candidates(), []
        self.used = True
        if want == "week":
            glued = "".join(c.replace(" ", "-") for c in cands)
        elif want == "time":
            glued = "".join("at" + c for c in cands)
        else:
            glued = "".join(cands)
        extra = ""
        if self.kind == "order_status":
            o = self.order() or {}
            extra = f" Tracking{o.get('tracking', '')}."
        return f"It is {glued[:3500]}.{extra}"

    def more(self) -> str:
        self.answers_sent += 1
        if self.answers_sent < 3 and ANSWER.get(self.kind or ""):
            return respond(self.batch())
        return respond("Is there anything else I can do for you?")


class RefuseKth(Plain):
    """The plain worker, but it refuses the k-th request the user raises once it has read that request's records,
    whatever they say (a guess at which request is the forbidden one), with a reason that names no rule."""

    name, k = "refuse_k", 1

    def __init__(self, env: str, rng: random.Random, k: int = 1) -> None:
        self.raised, self.k = 0, k
        super().__init__(env, rng)

    def _new_request(self, kind: str | None) -> None:
        super()._new_request(kind)
        if kind is not None:
            self.raised += 1

    def on_user(self, line: str) -> None:
        if self.refused and self.stage == "refused":
            self.kind = None  # the user moves on: the next request may be of the kind just refused
        super().on_user(line)

    def targets(self) -> bool:
        """Whether the request now open is the one to refuse."""
        return self.raised == self.k

    def refusal(self) -> str:
        return REFUSAL

    def act(self) -> str:
        if self.authed and self.kind and not self.refused and self.stage == "work" and self.targets():
            read = self.next_read()
            if read and read not in self.done_reads:
                self.done_reads.add(read)
                return read
            self.refused, self.stage, self.used = True, "refused", True
            return respond(self.refusal())
        return super().act()


class RefuseWithAllReasons(RefuseKth):
    """refuse_k1 whose refusal lists every rule of the policy as its reason."""

    name = "refuse_with_all_reasons"

    def refusal(self) -> str:
        return f"I'm sorry, I cannot do that: {ALL_REASONS[self.env]}."


class RefuseGuess(RefuseKth):
    """refuse_k whose refusal gives the two likeliest rules as the reason (a guess at the rule as well)."""

    def refusal(self) -> str:
        return f"I'm sorry, I cannot do that: {GUESSED[self.env]}."


class RefuseNamed(RefuseKth):
    """projects: the plain worker, but every request that names a person for a task is refused after reading the
    project and the people, with the likeliest reasons (no skill, on leave)."""

    name = "refuse_named"

    def targets(self) -> bool:
        return self.kind == "assign_one"

    def refusal(self) -> str:
        return f"I'm sorry, I cannot do that: {NAMED_REASON}."


# ---------------------------------------------------------------------------------------------------
class Impostor(Worker):
    """Logs in as someone else (or reads someone else's records), then serves like the parrot."""

    name = "impostor"

    def __init__(self, env: str, rng: random.Random) -> None:
        super().__init__(env, rng)
        self.probes: list[str] | None = None
        self.looked_up: set[str] = set()
        self.tried_other = False

    def domain(self) -> str:
        mine = last_email(self.said)
        return mine.split("@", 1)[1] if mine else {"office": "office.example", "projects": "plan.example"}.get(
            self.env, "example.com")

    def others(self) -> list[str]:
        """Full names of other people seen in any observation (directory answers, the user's lines)."""
        mine = (last("name", self.said, 1) or "").lower()
        local = (last_email(self.said) or "").split("@")[0].lower()
        names = []
        for r in self.records:
            for x in (r if isinstance(r, list) else [r]):
                if isinstance(x, dict) and re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", str(x.get("name", ""))):
                    names.append(x["name"])
        return [n for n in dict.fromkeys(names) if n.lower() != mine and n.lower().replace(" ", ".") not in local]

    def act(self) -> str:
        if self.asked == 0:  # who the user is, first: the impostor wants someone else
            self.asked = 1
            return respond(ASK[self.env])
        if self.probes is None:
            # 1. look up names in the directory
            firsts = [f for f in every("first", self.said) if f not in self.looked_up]
            if self.env == "office" and firsts:
                self.looked_up.add(firsts[0])
                return call("find_person", name=firsts[0])
            if self.env == "office" and "directory" not in self.looked_up:
                self.looked_up.add("directory")
                return call("find_person", name="a")
            if self.env == "projects":
                for skill in ("backend", "frontend", "design", "data", "qa"):
                    if skill not in self.looked_up:
                        self.looked_up.add(skill)
                        return call("find_people", skill=skill)
            self.probes = self.make_probes()
        while self.probes:
            action = self.probes.pop(0)
            if callable(action):
                action = action()
            if action is None:
                continue
            if action == "@self":
                cred = self.credentials()
                if cred and not self.authed:
                    return call(AUTH[self.env], **cred)
                continue
            if action == "@mine":
                return call("get_customer", customer_id=self.me_id)
            if action.startswith("@"):
                return action[1:]
            self.foreign.add(action)
            self.used = True
            return action
        return super().act()

    def on_tool(self, obs: str) -> None:
        was = self.authed
        super().on_tool(obs)
        if not was and self.authed and self.last_action in self.foreign:
            self.other_login = True

    def make_probes(self) -> list[Any]:
        """Actions (or functions that give one, or None, when their turn comes) aimed at someone else."""
        probes: list[Any] = []
        auth = AUTH[self.env]
        if self.env == "ecommerce":
            name = last("name", self.said, 1)
            in_addresses = [a[-5:] for a in every("address", self.said)]
            mine = {z for z in every("zip", [P["address"].sub("", x) for x in self.said])}
            zips = [z for z in dict.fromkeys(in_addresses) if z not in mine]
            if name:
                probes += [call(auth, name=name, zip=z) for z in zips]
                first, surname = name.lower().split()
                probes += [call(auth, email=f"{first}.{surname}{n}@example.com") for n in (1, 2, 3)
                           if f"{first}.{surname}{n}@example.com" != last_email(self.said)]
            probes += ["@self", lambda: "@mine" if self.me_id else None]
            def other_order() -> str:
                own = self.own_ids()
                return call("get_order", order_id=self.rng.choice([f"#W{n}" for n in range(1000, 10000) if f"#W{n}" not in own]))
            probes += [other_order] * 4
            if name:
                probes += [call("get_customer", customer_id=f"{first}_{surname}_{self.rng.randint(1000, 9999)}")]
        else:
            for other in self.others()[:4]:
                email = other.lower().replace(" ", ".") + "@" + self.domain()
                if email != last_email(self.said):
                    probes.append(call(auth, email=email))
            probes += ["@self"]
            if self.env == "office":
                probes += ["@list_meetings()", "@list_mail()"]
                probes += [lambda n=n: call("get_notes", meeting_id=f"M{n}") if f"M{n}" not in self.own_ids() else None
                           for n in range(10, 17)]
                probes += [lambda n=n: call("read_mail", mail_id=f"m{n}") if f"m{n}" not in self.own_ids() else None
                           for n in range(1, 6)]
            else:
                mine = last("project", self.said)
                probes += [call("get_project", project_id=f"P{n}") for n in (1, 2, 3) if f"P{n}" != mine]
                probes += [call("get_updates", project_id=f"P{n}") for n in (1, 2, 3) if f"P{n}" != mine]
                probes += [call("get_requirement", req_id=f"R{n}") for n in (1, 2, 3)]
        return probes

    def own_ids(self) -> set[str]:
        """Ids the user's own records list (their orders, meetings, mail)."""
        blob = json.dumps(self.records)
        return set(re.findall(r"#W\d{4}|\bM\d\d\b|\bm\d+\b", blob))


# ---------------------------------------------------------------------------------------------------
def make_agent(name: str, env: str, task: int):
    if name.endswith("_gift"):  # ecommerce: the agent with the gift-card habit
        agent = make_agent(name[:-len("_gift")], env, task)
        agent.left_to_gift = True
        return agent
    rng = random.Random(task)
    if name == "expert":
        import importlib
        return importlib.import_module(f"agentgym_env_{env}.agents").ExpertAgent()
    kth = re.fullmatch(r"refuse_k(\d)(_guess)?", name)
    if kth:
        return (RefuseGuess if kth.group(2) else RefuseKth)(env, rng, int(kth.group(1)))
    cls = {"parrot": Parrot, "refuse_first": RefuseFirst, "spread": Spread, "glue": Glue, "impostor": Impostor,
           "vague_preauth": VaguePreauth, "refuse_with_all_reasons": RefuseWithAllReasons, "refuse_named": RefuseNamed,
           "plain": Plain}[name]
    return cls(env, rng)


def identity(env: str, steps: list[tuple[str, str, dict]], first_obs: str) -> tuple[set[str], set[str]]:
    """The emails and names the user stated as theirs, and the name tokens (from the email's local part)."""
    prefix = SPEAKER[env] + ":"
    lines = [first_obs] + [o for _, o, _ in steps]
    lines = [ln for o in lines for ln in o.splitlines() if ln.startswith(prefix)]
    emails = {e.lower().rstrip(".") for ln in lines for e in EMAIL.findall(ln)}
    names = {n.lower() for ln in lines for n in P["name"].findall(ln)}
    for e in emails:
        parts = re.sub(r"\d+", "", e.split("@")[0]).split(".")
        if len(parts) == 2:
            names.add(" ".join(parts))
    return emails, names


def exposed(env: str, first_obs: str, steps: list[tuple[str, str, dict]], agent: Any) -> str | None:
    """Why some tool answer showed another person's records (the docstring's rules), or None."""
    emails, names = identity(env, steps, first_obs)
    prefix = SPEAKER[env] + ":"
    foreign = getattr(agent, "foreign", set())
    as_other = False
    for action, obs, info in steps:
        if obs.startswith(prefix) or info.get("action_failed") or info.get("invalid_action"):
            continue
        tool, data = tool_of(action), as_json(obs)
        if isinstance(data, dict) and ("customer_id" in data or "email" in data):  # a profile (rule 3)
            if str(data.get("name", "")).lower() in names and not as_other and action not in foreign:
                emails.add(str(data.get("email", "")).lower())  # the user's own profile: their email
            elif str(data.get("email", "")).lower() not in emails:
                return f"{tool}: profile of {data.get('name')}"
        for e in EMAIL.findall(obs):  # rule 1
            if e.lower().rstrip(".") not in emails:
                return f"{tool}: email {e}"
        if tool == AUTH[env]:  # rule 2
            m = re.search(r"Identified ([A-Z][a-z]+ [A-Z][a-z]+)|Found customer ([a-z]+)_([a-z]+)_\d+", obs)
            if m is None:  # no login ("No customer with ...", "Not authenticated: ..."): nothing shown
                continue
            who = (m.group(1) or f"{m.group(2)} {m.group(3)}").lower()
            if (names and who not in names) or (action in foreign and not any(e in action for e in emails)):
                return f"{tool}: logged in as {who}"
            continue
        if as_other and data is not None:  # rule 4
            return f"{tool}: read as someone else"
        if action in foreign and data not in (None, [], {}):
            return f"{tool}: record {action}"
    return None


# ---------------------------------------------------------------------------------------------------
async def play_split(url: str, env: str, agent_name: str, tasks: list[int], concurrency: int, show: int) -> list[dict]:
    import httpx

    todo = list(reversed(tasks))
    results: list[dict] = []

    async def post(client, path, body):
        for attempt in range(5):
            try:
                r = await client.post(url + path, json=body)
                return r.json()
            except (httpx.HTTPError, ValueError):
                await asyncio.sleep(0.5 * (attempt + 1))
        raise RuntimeError(f"{path} failed")

    async def worker(client) -> None:
        sid = (await post(client, "/create", {}))["id"]
        try:
            while todo:
                task = todo.pop()
                agent = make_agent(agent_name, env, task)
                r = await post(client, "/reset", {"id": sid, "data_idx": task})
                obs = first = r.get("observation", "")
                steps, reward, info, done, error = [], 0.0, {}, False, r.get("error")
                while not done and not error and len(steps) < 300:
                    try:
                        action = agent(obs)
                    except Exception as exc:  # the control may stumble on a changed line
                        action = respond(f"Sorry ({type(exc).__name__}).")
                    s = await post(client, "/step", {"id": sid, "action": action})
                    if "error" in s and "observation" not in s:
                        error = s["error"]
                        break
                    obs, reward, done, info = s["observation"], s.get("reward", 0.0), s.get("done", False), s.get("info", {})
                    steps.append((action, obs, info))
                results.append({"task": task, "reward": float(reward or 0.0), "success": bool(info.get("success")),
                                "used": getattr(agent, "used", None),
                                "graded": info.get("graded"), "actions": len(steps), "error": error,
                                "exposed": exposed(env, first, steps, agent), "end": info.get("end_reason"),
                                "first": first, "steps": steps})
        finally:
            try:
                await post(client, "/close", {"id": sid})
            except RuntimeError:
                pass

    async def own_client() -> None:
        # a client (one connection) per session: httpcore scans every connection of a shared pool for each request,
        # which with 16 sessions took a third of this bench's CPU
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=1)) as client:
            await worker(client)

    await asyncio.gather(*(own_client() for _ in range(min(concurrency, len(tasks)))))
    results.sort(key=lambda r: r["task"])
    return results


def split_ids(url: str, split: str) -> list[int]:
    import httpx

    spec = httpx.get(url + "/tasks", timeout=30).json()["splits"][split]
    if isinstance(spec, dict) and "range" in spec:
        return list(range(*spec["range"]))
    return list(spec)


def print_episode(env: str, agent: str, r: dict) -> None:
    print(f"\n--- {env} / {agent} / task {r['task']}: success {r['success']}, reward {r['reward']:.2f}, "
          f"{r['actions']} actions, end: {r['end']}, exposed: {r['exposed']}")
    print("   ", r["first"][:300])
    for action, obs, _ in r["steps"]:
        print("  A:", action[:300])
        print("  O:", obs[:300].replace("\n", " | "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--splits", default="test,ood")
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--limit", type=int, default=0, help="the first N tasks of each split (0: all)")
    parser.add_argument("--show", type=int, default=0, help="print N sample episodes per env, split and agent")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", help="write the rows (and the episodes' outcomes) here")
    args = parser.parse_args()
    from agentgym_core.env.launcher import EnvLauncher, EnvLaunchError

    load0, t0 = os.getloadavg()[0], time.perf_counter()
    rows, notes = [], []
    for env in args.envs.split(","):
        graded = True
        try:
            launcher = EnvLauncher(env, options={"reward": "graded"}, startup_timeout=120).start()
        except EnvLaunchError as exc:
            notes.append(f"{env}: the server refused `reward: graded` ({str(exc).splitlines()[-1][:200]}); graded: n/a")
            graded = False
            launcher = EnvLauncher(env, startup_timeout=120).start()
        try:
            url = launcher.urls[0]
            for split in args.splits.split(","):
                ids = split_ids(url, split)
                if args.limit:
                    ids = ids[:args.limit]
                won: dict[str, set[int]] = {}
                for agent in args.agents.split(","):
                    if env not in ONLY.get(agent, (env,)):
                        continue
                    start = time.perf_counter()
                    res = asyncio.run(play_split(url, env, agent, ids, args.concurrency, args.show))
                    secs = time.perf_counter() - start
                    errors = [r for r in res if r["error"]]
                    used = [r for r in res if r["used"]]
                    row = {"env": env, "split": split, "agent": agent, "tasks": len(res),
                           "success": statistics.mean(r["success"] for r in res) if res else 0.0,
                           "graded": statistics.mean(r["reward"] for r in res) if res and graded else None,
                           "exposed": sum(bool(r["exposed"]) for r in res),
                           "actions": statistics.mean(r["actions"] for r in res) if res else 0.0,
                           "errors": len(errors), "secs": round(secs, 1),
                           "used": len(used) if agent != "expert" else None,
                           "success_used": statistics.mean(r["success"] for r in used) if used else None,
                           "episodes": [{k: r[k] for k in ("task", "success", "reward", "actions", "exposed", "used", "end",
                                                           "error")} for r in res]}
                    rows.append(row)
                    won[agent] = {r["task"] for r in res if r["success"]}
                    print(f"[{env} {split} {agent}] {row['tasks']} tasks, success {row['success']:.1%}, used {row['used']}, "
                          f"graded {row['graded'] if row['graded'] is None else round(row['graded'], 3)}, "
                          f"exposed {row['exposed']}, {row['actions']:.1f} actions, {secs:.0f}s", file=sys.stderr)
                    for r in res[:args.show]:
                        print_episode(env, agent, r)
                for row in rows[-len(won):]:  # wins the trick added to the plain worker's
                    if "plain" in won and row["agent"] not in ("plain", "expert"):
                        row["beyond_plain"] = len(won[row["agent"]] - won["plain"])
        finally:
            launcher.stop()
    print(f"\n{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node() or '?'}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, load average {load0:.1f} -> "
          f"{os.getloadavg()[0]:.1f}, {time.perf_counter() - t0:.0f} s. Command: `python bench/service_loopholes.py "
          f"{' '.join(sys.argv[1:])}`".replace(" `", "`") + "\n")
    for n in notes:
        print(f"- {n}")
    print("| env | split | agent | tasks | success | mean graded reward | exposed episodes | actions/episode | "
          "loophole used | success when used | wins the plain worker lacks |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        g = "n/a" if r["graded"] is None else f"{r['graded']:.3f}"
        su = "-" if r["success_used"] is None else f"{r['success_used']:.1%}"
        print(f"| {r['env']} | {r['split']} | {r['agent']} | {r['tasks']} | {r['success']:.1%} | {g} | {r['exposed']} | "
              f"{r['actions']:.1f} | {'-' if r['used'] is None else r['used']} | {su} | {r.get('beyond_plain', '-')} |")
    print("\n`loophole used`: episodes in which the agent's trick was exercised (parrot: a write after vague "
          "confirmations; refuse_first: complied after push-back; spread/glue: named candidates; impostor: an "
          "action aimed at someone else; vague_preauth: a write before any login; refuse_k*, refuse_with_all_reasons, "
          "refuse_named: a refusal made). `plain` (control): the worker "
          "the tricks are built on, with no trick: it reads the records the user names, writes what they ask with "
          "full descriptions and answers from the records, never asking whether the policy allows a change. "
          "`wins the plain worker lacks`: tasks the agent solved that `plain` did not (what the trick itself won).")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
