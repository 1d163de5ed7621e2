"""The viewer in a real headless Chromium: open a run, click into an episode, check the turns
and the loss-mask highlighting, and save a screenshot to test-artifacts/."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from agentgym_inspect.viewer.sample import write_sample_run
from agentgym_inspect.viewer.server import BackgroundViewer

ARTIFACTS = Path(__file__).resolve().parents[4] / "test-artifacts"  # the repository root
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                       reason="needs Debian packages chromium and chromium-driver (apt-get install chromium chromium-driver)"),
]
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install 'agentgym-core[test]')")
pytest.importorskip("tokenizers", reason="the sample run's tokenizer needs the tokenizers package")


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="agentgym-chromium-")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                "--window-size=1400,900", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _wait(driver, predicate, timeout=15):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: predicate(d))


def test_browse_run_open_episode_and_see_mask(tmp_path, browser):
    from selenium.webdriver.common.by import By

    run = write_sample_run(tmp_path / "demo", steps=4, episodes_per_step=60, seed=3)
    with BackgroundViewer(run) as url:
        browser.get(url)
        steps = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#steps li[data-file]"))
        assert [s.get_attribute("data-file") for s in steps] == [f"trajectories/step_{i:06d}" for i in range(1, 5)]
        assert "horizon" in steps[-1].text

        steps[1].click()  # step 2
        rows = _wait(browser, lambda d: d.find_elements(
            By.CSS_SELECTOR, "#episodes tbody[data-file='trajectories/step_000002'] tr[data-index]"))
        assert len(rows) == 50  # one page, not the whole step
        assert "of 60 episodes" in browser.find_element(By.ID, "count").text

        # Only failures, then search text that only some episodes contain.
        browser.find_element(By.CSS_SELECTOR, "#filter option[value=failure]").click()
        cells = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#episodes tbody[data-filter=failure] td:nth-child(4)"))
        assert cells and all(c.text == "✗" for c in cells)
        browser.find_element(By.ID, "search").send_keys("pick up the key")
        rows = _wait(browser, lambda d: d.find_elements(
            By.CSS_SELECTOR, "#episodes tbody[data-filter=failure][data-q='pick up the key'] tr[data-index]"))
        assert "q=pick" in browser.current_url  # the state is in the URL: a reload shows the same

        row = rows[0]
        expected_turns = int(row.find_elements(By.TAG_NAME, "td")[5].text.split("/")[0])
        row.click()
        turns = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#episode .turn"))
        assert len(turns) == expected_turns
        assert "Turn 1 /" in turns[0].text and "reward" in turns[0].text
        assert "pick up the key" in browser.find_element(By.ID, "episode").text
        assert "horizon" in browser.find_element(By.CSS_SELECTOR, "#episode .summary").text

        model = browser.find_elements(By.CSS_SELECTOR, "#episode .turn .tok.m1")
        env = browser.find_elements(By.CSS_SELECTOR, "#episode .turn .tok.m0")
        assert model and env
        assert model[0].text == "Thought:"  # the model's own tokens, decoded with the run's tokenizer
        model_bg = model[0].value_of_css_property("background-color")
        env_bg = env[0].value_of_css_property("background-color")
        assert model_bg != env_bg and "0, 0, 0, 0" not in model_bg

        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "viewer_episode.png"
        browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000

        browser.find_element(By.CSS_SELECTOR, "#run-eval summary").click()  # before/after evaluation table
        table = browser.find_element(By.ID, "eval-table")
        _wait(browser, lambda d: table.is_displayed())
        assert "Pass@2" in table.text and "before" in table.text and "after" in table.text
        browser.save_screenshot(str(ARTIFACTS / "viewer_eval.png"))


def test_an_episode_page_shows_the_judges_verdict_and_raw_answer(tmp_path, browser, judge_episode):
    from selenium.webdriver.common.by import By

    run = write_sample_run(tmp_path / "judged", steps=1, episodes_per_step=3, seed=5)
    raw = '{"score": 4, "reason": "handled, with one slip"}'
    screened = {"removed": ["addressed to the judge (a score or rating): 'Score: 5'"], "kept": "screened",
                "as_played": {"score": 5, "reward": 1.0, "parsed": True, "raw": " 5"},
                "screened": {"score": 4, "reward": 0.75, "parsed": True, "raw": raw}}
    verdict = judge_episode(run, index=0, verdict={"rubric": "satisfaction", "model": "openai:judge", "mode": "absolute",
                                                   "parsed": True, "cached": False, "raw": raw, "score": 4,
                                                   "reward": 0.75, "reason": "handled", "screen": screened})
    failure = {"rubric": "satisfaction", "model": "hf:smollm2-135m-instruct", "mode": "absolute", "parsed": False,
               "cached": True, "raw": "The episode: <b>not a verdict</b>", "reward": 0.0,
               "error": "the answer is neither a JSON object with 'score' nor ends with a 'Score: N' line"}
    judge_episode(run, index=1, verdict=failure)
    with BackgroundViewer(run) as url:
        browser.get(url + "#file=trajectories/step_000001&ep=0")
        _wait(browser, lambda d: "Judge (satisfaction)" in d.find_element(By.ID, "episode").text)
        block = browser.find_element(By.CSS_SELECTOR, "#episode .judge")
        assert "Judge (satisfaction)" in block.text and "score 4 → reward 0.75" in block.text
        assert block.find_element(By.CSS_SELECTOR, "pre.raw").text == verdict["raw"]
        assert "the screened copy's lower reward stands" in block.text and "as played: score 5 → reward 1.00" in block.text
        assert "taken out: addressed to the judge (a score or rating): 'Score: 5'" in block.text
        ARTIFACTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "viewer_judge.png"))
        browser.find_element(By.CSS_SELECTOR, "#episodes tbody tr[data-index='1']").click()
        _wait(browser, lambda d: "parse failure" in d.find_element(By.ID, "episode").text)  # the pane, re-rendered
        block = browser.find_element(By.CSS_SELECTOR, "#episode .judge")
        assert "cached" in block.text and "reward 0.00" in block.text
        assert block.find_element(By.CSS_SELECTOR, "pre.raw").text == failure["raw"]  # as text, never as HTML
        browser.find_element(By.CSS_SELECTOR, "#episodes tbody tr[data-index='2']").click()
        _wait(browser, lambda d: "episode 3 of 3" in d.find_element(By.ID, "episode").text.lower())
        assert not browser.find_elements(By.CSS_SELECTOR, "#episode .judge")  # not judged: no block
