"""The study report opens with its findings: best protocols against the baselines (with
their portraits), the ablation's drop, the strongest features, the generalization summary
and the key figure, each linking to its section; the making of the study comes last."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.study.test_report import Page
from tests.tiny_study import keep_only, tiny_study
from tpdisc.report import best_portraits
from tpdisc.report.search_run import page_name
from tpdisc.study.findings import findings
from tpdisc.study.layout import StudyDir
from tpdisc.study.publish import publish
from tpdisc.study.runner import STAGE_NAMES
from tpdisc.study.sections import View


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> StudyDir:
    return tiny_study(tmp_path_factory.mktemp("findings"))


@pytest.fixture(scope="module")
def report(study: StudyDir) -> Path:
    return publish(study)


def test_the_report_opens_with_the_findings_and_ends_with_the_stage_log(report: Path) -> None:
    page = Page(report)
    ids = list(page.sections)
    assert ids[0] == "findings" and ids[-1] == "overview"
    raw = report.read_text()
    assert "Study study" not in raw
    assert raw.index('id="findings"') < raw.index("<h3>Stages</h3>")
    findings_text = " ".join(page.sections["findings"])
    for words in ("gain over", "random content", "ρ =", "settings"):
        assert words in findings_text
    for anchor in ("#performance", "#ablation", "#features", "#generalization"):
        assert anchor in page.links
    assert "figures/coverage.png" in page.images


def test_each_best_protocol_links_to_its_portrait_and_back(study: StudyDir, report: Path) -> None:
    page = Page(report)
    best = study.read_result("best")
    assert best is not None
    for entry in best["protocols"]:
        href = f"portraits/{entry['name']}/index.html"
        assert href in page.links
        portrait = report.parent / href
        assert "../../index.html" in Page(portrait).links
        assert (portrait.parent / "flow.png").is_file()
    search = study.read_result("search")
    assert search is not None
    run = search["runs"][0]
    page_file = page_name(run["best"]["name"], run["best"]["id"])
    browser = report.parent / "runs" / run["label"] / "protocols" / page_file
    assert f"../../../portraits/{run['label']}/index.html" in Page(browser).links


def test_findings_of_a_study_that_has_only_its_baselines(study: StudyDir) -> None:
    results = {name: study.read_result(name) for name in STAGE_NAMES}
    results = {k: (v if k == "baselines" else None) for k, v in results.items()}
    text = findings(View(results, set(), {}), {})
    for what in ("Best protocols", "Ablation", "Behavioural features", "Generalization"):
        assert f"{what}" in text and "not run yet" in text


def test_a_rebuilt_report_reuses_the_stored_portraits(
    study: StudyDir, report: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_simulation(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated again")

    monkeypatch.setattr(best_portraits, "build_portraits", no_simulation)
    assert publish(study) == report
    early = StudyDir(tmp_path / "early")
    shutil.copytree(study.root, early.root, ignore=shutil.ignore_patterns("report"))
    keep_only(early, {"baselines"})
    page = Page(publish(early))  # no best stage: no portrait, nothing simulated
    assert not any(link.startswith("portraits/") for link in page.links)


def test_every_figure_says_what_to_look_for(report: Path) -> None:
    raw = report.read_text()
    assert raw.count("<figure>") == raw.count("<figcaption") > 5


def test_each_finding_states_the_reference_s_figure_beside_its_own(report: Path) -> None:
    """A report read alone answers "does this match the paper?": the best protocols' gain,
    the ablation's fall and the generalization each with the reference's figure, the same
    figures as the README's table (tpdisc.analysis.published)."""
    from tpdisc.analysis import published

    text = " ".join(Page(report).sections["findings"])
    figures = {h.key: h.figure for h in published.HEADLINES}
    assert "mean gain here" in text
    assert (
        f"the reference: every evolved protocol above every baseline, {figures['evolved_gain'][:4]}"
        in text
    )
    assert "the reference: -21 (88 → 67), back to asocial play" in text
    assert f"the reference: {figures['generalization']} over the best baseline" in text
    assert "; the reference: ρ = " in text  # beside the strongest features
