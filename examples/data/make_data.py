"""Regenerate the small example files of examples/data/ (deterministic; run from the repository root).

people.csv   200 rows of the bundled UCI Adult data (CC BY 4.0), 5 columns, 6 hours written as NA
survey.csv   400 made-up respondents: 7 survey columns and 10 answers q1..q10 with 3 informative
             directions (a spiked covariance), for the report, the pipeline and private PCA examples
counts.json  single-column counts of 4 Adult columns, what a curator behind a shuffler sees
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from sdckit.datasets import load_adult

HERE = Path(__file__).resolve().parent


def main() -> None:
    adult = load_adult()
    rng = np.random.default_rng(20261201)
    rows = np.sort(rng.choice(adult.height, size=200, replace=False))
    people = adult[rows].select("age", "sex", "race", "education", "hours-per-week")
    gaps = set(rng.choice(200, size=6, replace=False).tolist())
    people = people.with_columns(
        pl.Series("hours-per-week", [None if i in gaps else v for i, v in enumerate(people["hours-per-week"])])
    )
    people.write_csv(HERE / "people.csv", null_value="NA")  # as R's write.csv writes missing values

    n = 400
    region = rng.choice(["north", "south", "east", "west", "centre"], size=n)
    sex = rng.choice(["F", "M"], size=n)
    age_group = rng.choice(["18-29", "30-44", "45-59", "60+"], size=n, p=[0.25, 0.3, 0.27, 0.18])
    occupation = rng.choice(["clerical", "craft", "service", "sales", "professional", "other"], size=n)
    income = np.round(rng.lognormal(10.2, 0.5, size=n), -1).astype(np.int64)
    hours = np.clip(np.round(rng.normal(38, 9, size=n)), 5, 70).astype(np.int64)
    household = rng.integers(1, 7, size=n)
    loadings = rng.standard_normal((10, 3))
    answers = rng.standard_normal((n, 3)) @ loadings.T * 1.5 + rng.standard_normal((n, 10))
    survey = pl.DataFrame(
        {"region": region, "sex": sex, "age_group": age_group, "occupation": occupation,
         "income": income, "hours": hours, "household_size": household}
        | {f"q{j + 1}": np.round(answers[:, j], 3) for j in range(10)}
    )
    survey.write_csv(HERE / "survey.csv")

    cols = ["workclass", "marital-status", "race", "sex"]
    counts = {c: dict(sorted(adult[c].value_counts().iter_rows())) for c in cols}
    (HERE / "counts.json").write_text(json.dumps(counts, indent=1) + "\n")


if __name__ == "__main__":
    main()
