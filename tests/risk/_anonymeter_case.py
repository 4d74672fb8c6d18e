"""The small table of the anonymeter cross-check (tests/risk/test_attacks.py), and the script that
computed anonymeter's reference figures on it.

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

import numpy as np
import pandas as pd

N = 1000


def population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Two correlated numbers and three categories, one of them tied to the first number."""
    x1 = rng.normal(size=n)
    x2 = x1 * 0.6 + rng.normal(size=n) * 0.8
    c1 = np.where(x1 + rng.normal(size=n) > 0, "a", "b")
    return pd.DataFrame({"c1": c1, "c2": rng.choice(list("pqrs"), n), "c3": rng.choice(list("uvwxyz"), n),
                         "x1": x1.round(4), "x2": x2.round(4)})


def mask(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """30 % of c2 and c3 redrawn at random; the numbers with a little noise."""
    out = df.copy()
    for c, values in (("c2", list("pqrs")), ("c3", list("uvwxyz"))):
        flip = rng.random(len(df)) < 0.3
        out.loc[flip, c] = rng.choice(values, int(flip.sum()))
    out["x1"] = (df["x1"] + rng.normal(scale=0.003, size=len(df))).round(4)
    out["x2"] = (df["x2"] + rng.normal(scale=0.003, size=len(df))).round(4)
    return out


def case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(targets, release, control)."""
    rng = np.random.default_rng(seed)
    ori, control = population(N, rng), population(N, rng)
    return ori, mask(ori, rng), control


def main(wheel: str) -> None:  # pragma: no cover - run by hand, with anonymeter's code on sys.path
    import warnings

    sys.path.insert(0, wheel)
    warnings.simplefilter("ignore")
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

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
