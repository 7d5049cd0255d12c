"""Generated request heads through the real listener (issue 19): a short,
seeded run of fuzz_heads.py against a reterm of its own. Every case must get
the answer the contract gives it (heads.py works it out), no slot may leak
(the probe after each batch), and the process must not panic or exit.

RETE_HEADS_SEED and RETE_HEADS_CASES change the seed and the number of cases;
a mismatch names its case's index, which `scripts/fuzz-heads --seed S --only
INDEX` sends again on its own. The long run (10^6 cases) is scripts/fuzz-heads.
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
