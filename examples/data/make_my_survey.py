"""Generate ``examples/data/my_survey.csv``: a synthetic survey (no real person), seed 20261201.

Run from the repository root: ``python examples/data/make_my_survey.py``.
"""

import numpy as np
import polars as pl

rng = np.random.default_rng(20261201)
n = 3000
age = rng.integers(18, 90, n)
groups = np.select([age < 30, age < 45, age < 65], ["18-29", "30-44", "45-64"], "65+")
region = rng.choice(["north", "south", "east", "west", "centre"], n, p=[0.35, 0.3, 0.15, 0.12, 0.08])
sex = rng.choice(["F", "M"], n)
occupation = rng.choice(
    ["clerical", "manual", "professional", "services", "retired", "student"], n, p=[0.2, 0.2, 0.25, 0.15, 0.12, 0.08]
)
income = np.round(rng.lognormal(10.2, 0.55, n), -1)
hours = np.clip(np.round(rng.normal(37, 9, n)), 1, 80)
household = rng.integers(1, 7, n)
health = rng.choice(["good", "fair", "poor"], n, p=[0.6, 0.3, 0.1])
weight = np.round(rng.uniform(80, 420, n), 3)
pl.DataFrame(
    {
        "respondent_id": np.arange(100001, 100001 + n),
        "age_group": groups,
        "region": region,
        "sex": sex,
        "occupation": occupation,
        "income": income,
        "hours": hours,
        "household_size": household,
        "health": health,
        "survey_weight": weight,
    }
).write_csv("examples/data/my_survey.csv")
