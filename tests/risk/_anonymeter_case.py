"""The script that computed anonymeter's reference figures on the small table of the cross-check
(``case`` in tests/risk/test_attacks.py).

Where anonymeter's design applies: the released rows are all distinct (no duplicate to count), the
control has as many records as the targets (no size correction), linkability and inference use numeric
auxiliary columns with no ties (the nearest row is the same under anonymeter's Gower distance and
sdckit's standardised one).

anonymeter 1.1.0 pins numpy < 1.27 and pyarrow < 22, which conflict with this project's numpy 2 and
pyarrow: it cannot be installed into the venv. The reference figures were computed by running its
wheel's code unchanged on numpy 2.4.6 / pandas 3.1.1 / polars (``pip download anonymeter==1.1.0
--no-deps``, unzipped, put on ``sys.path``), with::

    python tests/risk/_anonymeter_case.py /path/to/unzipped/wheel
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(wheel: str) -> None:  # pragma: no cover - run by hand, with anonymeter's code on sys.path
    import warnings

    sys.path.insert(0, wheel)
    warnings.simplefilter("ignore")
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_attacks import case

    for seed in (1, 2, 3):
        ori, syn, ctl = case(seed)
        so = SinglingOutEvaluator(ori=ori, syn=syn, control=ctl, n_attacks=300, n_cols=3, seed=seed)
        lk = LinkabilityEvaluator(ori=ori, syn=syn, control=ctl, n_attacks=300, aux_cols=(["x1"], ["x2"]), n_neighbors=1)
        inf = InferenceEvaluator(ori=ori, syn=syn, control=ctl, aux_cols=["x1", "x2"], secret="c1", n_attacks=300)
        out = {}
        for name, ev in (("singling_out", so.evaluate(mode="multivariate")), ("linkability", lk.evaluate()),
                         ("inference", inf.evaluate())):
            r = ev.risk()
            out[name] = (round(float(r.value), 4), round(float(r.ci[0]), 4), round(float(r.ci[1]), 4))
        print(f"    {seed}: {out},")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1])
