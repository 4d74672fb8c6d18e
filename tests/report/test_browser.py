"""The main report opened in a real browser (Debian's headless Chromium driven by Playwright).

Checks that every section and every plot is present and visible, that the page loads with no
console errors and makes no network request (the page itself is the only URL), and saves a
screenshot (to ``$SDCKIT_SCREENSHOT`` when set, e.g. for the README, else to the test's tmp dir).
Skips, saying why, on a machine without Chromium or Playwright.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from sdckit.pipeline import load_config, run_pipeline
from sdckit.pipeline._config import EXPERIMENTS
from sdckit.report._main import SECTION_IDS, build_report

ADULT_PIPELINE = Path(__file__).resolve().parents[2] / "examples" / "pipelines" / "adult.yaml"

# a bound of 1 printed as a figure ("at most 100 %", "bound 100 %", "≤ 100 %", "sharper 100 %")
HUNDRED = re.compile(r"(at most|≤|<=|bound|sharper)\s*100(\.0*)?\s*%")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    # the Adult example pipeline (its masking steps run in memory), rendered: input and release side by
    # side, with the experiments on the input turned on (they are off by default) to check them too
    config = load_config(ADULT_PIPELINE).replace(experiments=EXPERIMENTS)
    build_report(run_pipeline(config)).write(out)
    return out


def test_report_in_headless_chromium(report_page: Path, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    requests: list[str] = []
    problems: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(report_page.as_uri(), wait_until="load")
            for section_id in SECTION_IDS:
                section = page.locator(f"section#{section_id}")
                assert section.count() == 1, f"section {section_id!r} is missing"
                assert section.is_visible(), f"section {section_id!r} is not visible"
                assert section.locator("h2").inner_text().strip(), f"section {section_id!r} has no title"
            check = page.locator("section#release_check")
            heads = [h.strip() for h in check.locator("table.data").first.locator("th").all_inner_texts()]
            assert heads == ["measure", "input, as is", "release, as written", "what it measures"], heads
            assert check.locator("table.data").first.is_visible()
            row = check.locator("tr", has_text="users in groups < k").first
            cells = [c.strip() for c in row.locator("td").all_inner_texts()]
            assert cells[2] == "0 %", f"the release's exposure at k: {cells}"
            assert cells[1] != cells[2], "input and release differ side by side"
            summary = page.locator("section#summary")
            assert "in the release as written" in summary.inner_text()
            text = page.locator("body").inner_text()
            assert not HUNDRED.search(text), f"a 100 % guarantee is printed: {HUNDRED.search(text)}"
            assert "no guarantee" in text
            assert re.search(r"\d\.\d+(?!\s*%)\b(?= of users)", text) is None, "a share of users not in percent"
            # the exposure plot: k on the x axis, truth beside the single-column and the pair bound
            risk = page.locator("section#risk")
            exposure_plot = risk.locator("figure.plot", has_text="against k").first
            assert exposure_plot.is_visible()
            caption = exposure_plot.locator("figcaption").inner_text()
            for curve in ("truth", "single-column counts", "pair table"):
                assert curve in caption, f"the exposure plot's caption does not name {curve!r}"
            assert re.search(r"At k = 5: truth [\d.]+ %; single-column bound (no guarantee|at most [\d.]+ %); "
                             r"pair bound (no guarantee|at most [\d.]+ %)", risk.inner_text())
            # the private-PCA section on Adult's numeric columns (no eigenvalue structure): says so, recommends nothing
            pca = page.locator("section#spectral")
            pca_text = pca.inner_text()
            assert "No structure to keep" in pca_text
            assert "Marchenko–Pastur" in pca_text
            assert "recommended noise variance" not in pca_text
            assert pca.locator("figure.plot").count() == 0
            assert not re.search(r"c = [\d.]*\d{6,}", text), "an unrounded c in the page"
            # the microaggregation summary states its costs
            micro = page.locator("section#microaggregation").inner_text()
            assert "plain microaggregated" in micro
            assert "U_m" in micro
            assert "SDID risk" in micro
            plots = page.locator("figure.plot")
            assert plots.count() >= 4, f"expected plots in the report, found {plots.count()}"
            for i in range(plots.count()):
                plot = plots.nth(i)
                plot.scroll_into_view_if_needed()
                box = plot.locator("svg").bounding_box()
                assert plot.is_visible(), f"plot {i} is not visible"
                assert box is not None, f"plot {i} has no box"
                assert box["width"] > 200, f"plot {i} is too narrow: {box}"
                assert box["height"] > 100, f"plot {i} is too flat: {box}"
            page.evaluate("window.scrollTo(0, 0)")
            shot = Path(os.environ.get("SDCKIT_SCREENSHOT", str(tmp_path / "report.png")))
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=False)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
    assert requests == [report_page.as_uri()], f"the page fetched more than itself: {requests}"
    assert problems == [], f"console errors: {problems}"
