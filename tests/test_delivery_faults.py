"""At least once into the hook client, exactly once into the model, under faults
(docs/rules.md §2.6): a bounded run of tests/fault_loop.py on the test run's configuration —
one daphne on SQLite on the embedded pass; two daphne on PostgreSQL with a Redis of the loop's
own on the scale-out pass — with servers killed with kill -9 and started again, Redis paused
(scale-out), and hook clients killed mid-answer or given 20-300 ms to answer.
bench/delivery_faults.py runs longer and prints its counts."""

import random

from tests.fault_loop import run_fault_loop
from tests.live_server import RUN_DATABASE_URL

ITEMS = 200


def test_under_kills_pauses_and_clients_cut_off_every_message_reaches_the_model_exactly_once(tmp_path):
    seed = random.randrange(10**6)
    scale_out = bool(RUN_DATABASE_URL)
    outcome = run_fault_loop(tmp_path, items=ITEMS, seed=seed, scale_out=scale_out, database_url=RUN_DATABASE_URL or None)
    said = f"seed {seed}: {outcome.report()}"
    assert outcome.faults["servers killed"] >= 1 and outcome.faults["hook clients killed mid-answer"] >= 1, said
    assert outcome.faults["hook clients given 20-300 ms"] >= 1, said
    assert outcome.faults["Redis pauses"] >= (1 if scale_out else 0), said
    assert len(outcome.stored) == ITEMS, said
    assert outcome.lost == [] and outcome.twice == {}, f"{said}; lost {outcome.lost}, shown twice {outcome.twice}"
    assert outcome.unconfirmed == 0, said
