"""What counts as stating an answer, a refusal, a confirmation request; the typed database."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from agentgym_service import text
from agentgym_service.db import Database, Table

STATUS = {"pending": ("pending", "not shipped yet", "has not shipped"), "shipped": ("shipped", "on its way"),
          "delivered": ("delivered",), "cancelled": ("cancelled", "canceled")}


@pytest.mark.parametrize("reply, value, told", [
    ("Your refund is $54.20.", 54.2, True), ("You get 54.20 back", 54.2, True), ("Refund: $1,054.20", 1054.2, True),
    ("Item 742403 for 853855 (size 11): $54.20 back to credit_card_8257", 54.2, True),
    ("$54.21", 54.2, False), (" ".join(f"${a}.20" for a in range(0, 400)), 54.2, False),
    ("$10.00, $20.00, $54.20 or $30.00", 54.2, False), ("$10.00, $20.00 or $54.20", 54.2, False), ("$20.00 or $54.20", 54.2, True),
])
def test_amounts_are_stated_only_alone_or_among_few(reply, value, told):
    assert text.states_amount(reply, value) is told


@pytest.mark.parametrize("reply, value, told", [
    ("It is still pending; it has not shipped yet.", "pending", True),
    ("Your order has shipped and is on its way.", "shipped", True),
    ("It hasn't been delivered, it's on its way.", "shipped", True),
    ("It is not cancelled.", "cancelled", False),
    ("It is pending, shipped, delivered or cancelled.", "pending", False),
    ("It was canceled.", "cancelled", True),
])
def test_a_state_counts_when_affirmed_and_alone(reply, value, told):
    assert text.states_choice(reply, value, STATUS) is told


def test_tokens_refusals_questions_confirmations():
    import re
    tracking = (re.compile(r"\b\d{10}\b"), lambda m: m)
    assert text.states_token("tracking 5729905971", "5729905971", tracking)
    many = " ".join(str(1000000000 + i) for i in range(5))
    assert not text.states_token(many, "1000000001", tracking)
    assert text.is_refusal("I'm afraid I can't do that") and not text.is_refusal("Done, it is cancelled.")
    assert text.is_question("Could you give me your email") and not text.is_question("Refunded to your card.")
    assert text.asks_confirmation("Shall I proceed?") and not text.asks_confirmation("Your order has shipped.")


@dataclass
class Row:
    key: str
    count: int
    tags: list[str]
    note: str | None = None


def test_typed_database_checks_compares_and_diffs():
    db = Database(rows=Table(Row, "key"))
    db.rows.add(Row("a", 1, ["x"]))
    with pytest.raises(TypeError, match="count"):
        db.rows.add(Row("b", "1", []))
    with pytest.raises(TypeError, match="tags"):
        db.rows.add(Row("c", 1, [2]))
    with pytest.raises(KeyError):
        db.rows.add(Row("a", 2, []))
    other = db.copy()
    assert other == db
    other.rows["a"].count = 2
    assert other != db and db.diff(other) == ["rows/a.count"]
    with pytest.raises(AttributeError, match="tables: rows"):
        _ = db.orders


WEEK = (__import__("re").compile(r"\bweek \d+\b", __import__("re").I), lambda m: m.lower())
TIME = (__import__("re").compile(r"\b(?:[01]?\d|2[0-3]):[0-5]\d\b"), lambda m: m.zfill(5))


@pytest.mark.parametrize("reply, value, kind, told", [
    ("The project now ends in week 12.", "week 12", WEEK, True),
    ("It ends in Week-12.", "week 12", WEEK, True),                      # a dash is a space, for both reads
    ("week-1 week-2 week-3 week-12", "week 12", WEEK, False),             # a list, counted as it is matched
    ("week-1week-2week-3week-12", "week 12", WEEK, False),                # glued: names no week at all
    ("It starts at 9:30.", "09:30", TIME, True),
    ("at09:00 at09:30 at10:00", "09:30", TIME, False),                    # glued to words: no time
    ("09:00, 09:30 or 10:00", "09:30", TIME, False),
])
def test_tokens_are_matched_and_counted_from_one_reading(reply, value, kind, told):
    assert text.states_token(reply, value, kind) is told


def test_declining_is_a_statement_and_a_question_is_not_a_refusal():
    assert text.declines("I'm sorry, I cannot do that: it has shipped. Is there anything else?")
    assert not text.declines("I cannot find that order; could you check the number?")
    assert not text.declines("Your order has shipped.")


REASONS = {"final_sale": ("final sale",), "window": ("30 days", "30 day"), "shipped": ("has shipped", "only pending")}


@pytest.mark.parametrize("reply, named", [
    ("I'm sorry, I cannot do that: it is a final-sale item.", {"final_sale"}),    # a dash is a space
    ("Sorry, past the 30-day window.", {"window"}),
    ("Is it a final sale item? I cannot do that.", set()),                        # a question gives no reason
    ("I cannot: it has shipped, is final sale and is past 30 days.", {"shipped", "final_sale", "window"}),
    ("I cannot do that: our policy does not allow it.", set()),
    ("Only pending\norders can change", {"shipped"}),                              # lines are read like sentences
])
def test_reasons_are_read_in_statements_with_dashes_as_spaces(reply, named):
    assert text.reason_candidates(reply, REASONS) == named
