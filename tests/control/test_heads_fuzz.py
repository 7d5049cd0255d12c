"""Generated request heads through the real listener (issue 19): a short,
seeded run of fuzz_heads.py against a reterm of its own. Every case must get
the answer the contract gives it (heads.py works it out), no slot may leak
(the probe after each batch), and the process must not panic or exit.

RETE_HEADS_SEED and RETE_HEADS_CASES change the seed and the number of cases;
a mismatch names its case's index, which `scripts/fuzz-heads --seed S --only
INDEX` sends again on its own. The long run (10^6 cases) is scripts/fuzz-heads.
The last two tests show the probe and the answer checks can fail.
"""

import os

from fuzz_heads import Runner, describe
from masking import scrub

SEED = os.environ.get("RETE_HEADS_SEED", "ci-1")
CASES = int(os.environ.get("RETE_HEADS_CASES", "3000"))
# Every answer the contract's head, gate, route and SDK tables give, and the
# close: a generator that stopped producing one would go unnoticed otherwise.
ANSWERS = {200, 202, 400, 403, 404, 405, 406, 411, 413, 415, 431, None}


def test_generated_heads_get_the_contracts_answers(server):
    report = Runner(server, seed=SEED).run(CASES, batch=1000, slow_per_batch=2)
    text = scrub("\n".join(describe(report)))
    assert report.cases == CASES, text
    assert report.ok, text
    assert set(report.expected) == ANSWERS, text
    assert report.slow >= 4, text


def test_slot_probe_sees_a_slot_still_taken(server):
    """The probe can fail: a connection holding a slot through it leaves one
    of its 8 closed unanswered, which it reports as a leaked slot."""
    from fuzz_heads import _close, _connect, probe_slots
    from heads import Target

    target = Target(server.token.value, server.port)
    assert probe_slots(target) is None
    held = _connect(server.port)
    try:
        held.sendall(b"POST /mcp HTTP/1.1\r\n")
        assert probe_slots(target) == "7 of 8 connections at once served: 1 slot(s) leaked"
    finally:
        _close(held)


def test_verdict_refuses_what_the_contract_does_not_allow():
    """The checks can fail: each answer below is wrong for its case."""
    from fuzz_heads import Outcome, verdict
    from heads import Case, Expect

    def case(want, kind="valid"):
        return Case(0, kind, [b"x"], False, want)

    ok_200 = b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 12\r\n\r\n{"result":1}'
    empty_403 = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    wrong = [
        (Expect(403), Outcome(empty_403, False, 0.1, 0.0), "the connection was not closed"),
        (Expect(400), Outcome(empty_403, True, 0.1, 0.0), "answered 403"),
        (Expect(None), Outcome(empty_403, True, 0.1, 0.0), "answered 403, where"),
        (Expect(403), Outcome(b"", True, 0.1, 0.0), "closed without an answer"),
        (Expect(403), Outcome(empty_403.replace(b"Connection: close\r\n", b""), True, 0.1, 0.0),
         "no Connection: close"),
        (Expect(403), Outcome(empty_403[:-2] + b"X-: y\r\n\r\nbody", True, 0.1, 0.0),
         "a body not of its Content-Length"),
        (Expect(200, empty=False, interim=(100,)), Outcome(ok_200, True, 0.1, 0.0),
         "interim answers"),
        (Expect(405), Outcome(empty_403.replace(b"403 Forbidden", b"405 Method Not Allowed"),
                              True, 0.1, 0.0), "405 without Allow: POST"),
    ]
    for want, out, problem in wrong:
        assert (verdict(case(want), out) or "").startswith(problem), (want, out)
    early = verdict(case(Expect(None), "slow-past"), Outcome(b"", True, 1.0, 0.9))
    assert early.startswith("closed 1.00s after accept, before the head deadline"), early
    assert verdict(case(Expect(403)), Outcome(empty_403, True, 0.1, 0.0)) is None
    assert verdict(case(Expect(200, empty=False)), Outcome(ok_200, True, 0.1, 0.0)) is None
