"""How ``benchmarks/tune_answers.py`` chooses the line between ``answer`` and
``closest``: the questions it calibrates on and the threshold of least cost."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import tune_answers
from tune_answers import Costs, Row, grade_rates, grade_rows, least_cost


def row(question: str, *, answerable: bool, removed: bool = False, evidence: bool = True) -> Row:
    units: list[Any] = [object()] if evidence else []  # only their presence is read here
    return Row(question, question, False, answerable, removed, [], {}, False, {}, units, [], [])


def test_the_grade_is_calibrated_on_real_unanswerable_questions_as_the_targets_count_them() -> None:
    rows = [
        row("a", answerable=True),
        row("a", answerable=False, removed=True),  # "a" with its relevant documents out
        row("b", answerable=True, evidence=False),
        row("c", answerable=False),  # the set's own unanswerable question
        row("d", answerable=False, evidence=False),  # ... refused: never graded "answer"
    ]
    fitted_on = grade_rows(rows, Costs(), fitting=True)
    assert [(r.question, r.removed) for r in fitted_on] == [("a", False), ("a", True), ("c", False)]
    calibrated = grade_rows(rows, Costs())
    assert [r.question for r in calibrated] == ["a", "b", "c", "d"]
    # with the relevant-removed variants, or for sets without own unanswerable
    # questions (CMRC 2018), those with evidence only
    with_removed = grade_rows(rows, Costs(real_only=False))
    every = [("a", False), ("a", True), ("c", False)]
    assert [(r.question, r.removed) for r in with_removed] == every
    no_own = [r for r in rows if r.question in ("a", "b")]
    assert [(r.question, r.removed) for r in grade_rows(no_own, Costs())] == [
        ("a", False),
        ("a", True),
    ]


def test_a_question_the_ask_refuses_for_an_unknown_term_is_never_graded() -> None:
    refused = row("core.sshCommand?", answerable=False)
    refused.missing = ["coresshcommand"]  # ``UnitScorer.missing_terms``: refused first
    rows = [row("a", answerable=True), row("c", answerable=False), refused]
    assert not tune_answers.graded(refused) and tune_answers.graded(rows[0])
    # left out of the fit; calibrated on as the targets count it, never graded "answer"
    assert [r.question for r in grade_rows(rows, Costs(), fitting=True)] == ["a", "c"]
    assert [r.question for r in grade_rows(rows, Costs())] == ["a", "c", "core.sshCommand?"]
    assert tune_answers.scored_answerable(refused, tune_answers.fitted.ENGLISH) == 0.0


def test_the_threshold_is_the_cheapest_under_the_ceiling() -> None:
    answerable = [0.3, 0.5, 0.7, 0.9]
    others = [0.0, 0.2, 0.4, 0.6, 0.8]  # one without evidence: 0
    rates = (answerable, others)
    assert grade_rates(rates, 0.5) == (0.25, 0.4)
    # closest costs 1, a wrong "answer" 2, one question in ten unanswerable: the
    # cheapest threshold grades 2 of 5 unanswerable "answer", over the ceiling
    t = least_cost(lambda t: grade_rates(rates, t), Costs(ceiling=0.2))
    assert grade_rates(rates, t) == (0.5, 0.2) and 0.6 < t <= 0.7
    loose = least_cost(lambda t: grade_rates(rates, t), Costs(ceiling=1.0))
    assert loose <= 0.3 and grade_rates(rates, loose)[0] == 0.0
    # a margin below the ceiling moves the line up
    tight = least_cost(lambda t: grade_rates(rates, t), Costs(ceiling=0.2, margin=0.05))
    assert grade_rates(rates, tight)[1] == 0.0 and tight > t


def test_the_auc_counts_a_tie_as_half_a_win() -> None:
    assert tune_answers.auc(([0.9, 0.8], [0.1, 0.8])) == 0.875
