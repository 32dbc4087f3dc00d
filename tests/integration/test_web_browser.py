"""The page and the extension in a real browser: Debian's headless Chromium driven by Selenium,
against the app on 127.0.0.1 with a local OpenAI-compatible server and the real demo index.

Skips when Chromium, chromedriver or selenium are missing (`.ci/run` installs them). The
screenshots README shows are taken here: `CLAIRE_SCREENSHOTS=docs python -m pytest
tests/test_web_browser.py` writes them to docs/ (by default they go to a temporary folder).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import html
import shutil
import ssl
import subprocess
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from claire.agent.runtime import open_retrieval
from claire.config import load_config
from claire.testing.doubles import http_responder, kind_of
from claire.testing.mock_openai import MockOpenAIServer
from claire.web.app import create_app
from claire.web.settings import ServeSettings
from claire.web.serve import ServerThread

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="chromium and chromium-driver are not installed")

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "web" / "extension"
FIXTURES = Path(__file__).parents[1] / "fixtures"

PLANTED = '<script>window.__pwned = "script"</script><img src="x" onerror="window.__pwned = \'img\'">'
HOSTILE = f"The Eiffel Tower was completed in 1890. Its guide book says {PLANTED} on the first page."
PASSAGE = ("Paris is the capital and largest city of France. The Eiffel Tower was completed in 1890 and quickly "
           "became the symbol of the city. It stands on the Champ de Mars and is made of wrought iron.\n\n"
           "The Louvre, the world's most-visited museum, opened in 1793 in a former royal palace.")
FACTS = {  # what the model "extracts" from PASSAGE, and the score its verifier gives each
    "Paris is the capital and largest city of France.": 0.05,
    "The Eiffel Tower was completed in 1890.": 0.9,
    "The Eiffel Tower is made of wrought iron.": 0.2,
    "The Louvre opened in 1793.": 0.3,
}
COMPAQ = ("Compaq was founded in 1982 by three managers from Texas Instruments. Soon after in 1982, Compaq released the "
          "very successful Compaq Portable. Compaq released the Compaq Portable in 1982.")
COMPAQ_FACTS = {  # the last sentence is the one an edit added; its fact is the flagged one
    "The Compaq Portable was very successful.": 0.1,
    "Compaq released the Compaq Portable in 1982.": 0.9,
}
GUIDE_FACT = "The guide book of the Eiffel Tower says <img src=x onerror=\"window.__pwned='fact'\">."


def responder():
    """A small model for the page: facts and scores from FACTS; for the hostile passage, facts and an
    analysis that carry markup which must stay text."""
    base = http_responder()

    def respond(body):
        kind = kind_of(body)
        user = body["messages"][-1]["content"]
        if kind == "extract":
            facts = (["The Eiffel Tower was completed in 1890.", GUIDE_FACT] if "guide book" in user
                     else list(COMPAQ_FACTS) if "Compaq" in user else list(FACTS))
            return {"content": "\n".join(f"<fact>{html.escape(f)}</fact>" for f in facts)}
        answer = base(body)
        if kind == "verifier":
            fact = user.split("<fact>", 1)[-1].split("</fact>", 1)[0]
            if "guide book" in fact:
                analysis = "[1] disagrees. <img src=x onerror=\"window.__pwned='analysis'\"> <b>bold</b> <script>window.__pwned='s'</script>"
                answer["content"] = f"<analysis>{analysis}</analysis><inconsistency_score>0.8</inconsistency_score>"
            else:
                score = next((v for k, v in {**FACTS, **COMPAQ_FACTS}.items()
                              if html.unescape(fact).strip().startswith(k[:-1])), 0.1)
                answer["content"] = answer["content"].replace("0.9<", f"{score}<").replace("0.1<", f"{score}<")
        return answer

    return respond


@pytest.fixture(scope="module")
def stack(tmp_path_factory, copy_demo_index):
    """The LLM server, a page server for the saved Wikipedia article, and the app allowing its origin."""
    root = copy_demo_index(tmp_path_factory.mktemp("browser-indexes"))
    pages = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SimpleHTTPRequestHandler, directory=str(FIXTURES)))
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    page_origin = f"http://127.0.0.1:{pages.server_address[1]}"
    with MockOpenAIServer(responder(), latency=0.02) as llm:
        config = load_config(None, {"llm.base_url": llm.base_url, "llm.cache": False, "llm.api_key": "sk-browser-secret-0123456789",
                                    "retrieval.rerank": False, "retrieval.path": str(root)})
        retriever = open_retrieval(config)
        settings = ServeSettings(data_dir=tmp_path_factory.mktemp("browser-data"), cors_origins=[page_origin])
        with ServerThread(create_app(config, settings, retriever=retriever)) as app:
            yield {"app": app.url, "pages": page_origin, "index_root": str(root), "llm": llm.base_url}
        retriever.close()
    pages.shutdown()
    pages.server_close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = Path(os.environ.get("CLAIRE_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,950",
                 "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    except Exception as error:  # a broken browser install is a skip, not a failure of CLAIRE
        pytest.skip(f"cannot start headless chromium: {str(error).splitlines()[0]}")
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def wait(driver, timeout=90):
    # The page redraws its highlights as facts finish: an element found a moment ago may be replaced.
    return WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,))


def click(driver, css):
    """Click the element ``css`` names once it is clickable, finding it again if a redraw replaced it."""
    def attempt(d):
        try:
            element = d.find_element(By.CSS_SELECTOR, css)
            if not element.is_displayed():
                return False
            element.click()
            return True
        except (StaleElementReferenceException, NoSuchElementException):
            return False

    wait(driver).until(attempt)


def assert_inert(driver):
    assert driver.execute_script("return window.__pwned === undefined"), driver.execute_script("return window.__pwned")
    assert not driver.find_elements(By.CSS_SELECTOR, "#article img, #article script, #panel img, #panel script, "
                                                     "#fact-list img, .claire-panel img, .claire-panel b")


def submit_scan(browser, url, title, text):
    browser.get(url + "/")
    browser.find_element(By.ID, "scan-title").send_keys(title)
    browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, "scan-text"), text)
    browser.find_element(By.CSS_SELECTOR, "#scan-form button[type=submit]").click()


def test_page_scan_highlight_panel_review_survives_reload(stack, browser, shots):
    submit_scan(browser, stack["app"], "Paris", PASSAGE)
    wait(browser).until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#article mark.claire-high")))
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "progress-text"), "Done · 4 of 4 facts checked · 1 flagged"))
    marks = browser.execute_script("return Array.from(document.querySelectorAll('#article mark'))"
                                   ".map(m => [m.textContent, m.className, m.dataset.score])")
    by_text = {text: (classes, score) for text, classes, score in marks}
    assert by_text["The Eiffel Tower was completed in 1890 and quickly became the symbol of the city."] == ("claire-mark claire-high", "0.9")
    assert by_text["Paris is the capital and largest city of France."] == ("claire-mark claire-ok", "0.05")
    assert by_text["The Louvre, the world's most-visited museum, opened in 1793 in a former royal palace."][0] == "claire-mark claire-low"
    assert not browser.find_element(By.ID, "failures").is_displayed()  # nothing failed: no failure line, no re-check
    time.sleep(0.5)  # let the progress bar's transition end before the picture
    assert browser.save_screenshot(str(shots / "web-page.png"))

    click(browser, "#article mark.claire-high")
    panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "panel")))
    assert "Inconsistent · score 0.90" in panel.text
    assert "TWO-SIDED REPORT" in panel.text and "CITED PASSAGES" in panel.text
    link = panel.find_element(By.CSS_SELECTOR, ".claire-passage-head a")
    assert link.get_attribute("href").startswith("https://") and link.get_attribute("rel") == "noopener noreferrer"
    panel.find_element(By.CSS_SELECTOR, ".claire-comment").send_keys("1889 per the tower's own article")
    assert panel.find_element(By.CSS_SELECTOR, "button.claire-accept").text == "Contradiction confirmed"
    assert panel.find_element(By.CSS_SELECTOR, "button.claire-reject").text == "Not a contradiction"
    panel.find_element(By.CSS_SELECTOR, "button.claire-accept").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#panel .claire-decision"),
                                                         "You confirmed the contradiction"))
    browser.save_screenshot(str(shots / "web-panel.png"))

    browser.refresh()
    click(browser, "#article mark.claire-high.claire-reviewed")
    decision = wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, "#panel .claire-decision")))
    assert decision.text == "You confirmed the contradiction: 1889 per the tower's own article"
    assert "contradiction confirmed" in browser.find_element(By.ID, "fact-list").text
    # opened by its address, the scan shows what was checked and a legend says what the colours mean
    address = browser.execute_script("return location.hash")
    assert address.startswith("#scan=")
    browser.get("about:blank")
    browser.get(stack["app"] + "/" + address)
    wait(browser).until(lambda d: d.find_element(By.ID, "scan-title").get_attribute("value") == "Paris")
    assert browser.find_element(By.ID, "scan-text").get_attribute("value").startswith("Paris is the capital")
    browser.find_element(By.CSS_SELECTOR, "#legend summary").click()
    legend = browser.find_element(By.ID, "legend").text
    assert "score is above the threshold, which is 0.5 on this server" in legend and "not flagged" in legend
    browser.find_element(By.CSS_SELECTOR, "#recent summary").click()
    earlier = wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, f"#recent-list a[href='{address}']")))
    assert earlier.text == "Paris" and "4 of 4 checked" in browser.find_element(By.ID, "recent-list").text


def test_the_sentence_an_edit_added_is_the_one_highlighted(stack, browser):
    """An added sentence that repeats an older, longer one's words: its fact is marked on it, not
    on the older sentence (which keeps its own fact's colour)."""
    submit_scan(browser, stack["app"], "Compaq", COMPAQ)
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "progress-text"), "Done · 2 of 2 facts checked · 1 flagged"))
    marks = browser.execute_script("return Array.from(document.querySelectorAll('#article mark'))"
                                   ".map(m => [m.textContent, m.className])")
    assert ["Compaq released the Compaq Portable in 1982.", "claire-mark claire-high"] in marks
    assert ["Soon after in 1982, Compaq released the very successful Compaq Portable.", "claire-mark claire-ok"] in marks


def test_planted_markup_in_the_passage_and_model_output_stays_inert(stack, browser):
    submit_scan(browser, stack["app"], "Paris", HOSTILE)
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "progress-text"), "Done"))
    article = browser.find_element(By.ID, "article").text
    assert PLANTED in article  # shown as text, verbatim
    guide = next(m for m in browser.find_elements(By.CSS_SELECTOR, "#article mark") if "guide book" in m.text)
    guide.click()
    panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "panel")))
    wait(browser).until(lambda d: "onerror" in panel.text)
    assert "<b>bold</b>" in panel.text and "<script>" in panel.text and GUIDE_FACT in panel.text
    assert GUIDE_FACT in browser.find_element(By.ID, "fact-list").text
    assert_inert(browser)


def test_single_fact_form_streams_steps_and_opens_the_panel(stack, browser, shots):
    browser.get(stack["app"] + "/")
    browser.find_element(By.CSS_SELECTOR, ".tab[data-tab=check-form]").click()
    browser.find_element(By.ID, "check-fact").send_keys("The Eiffel Tower was completed in 1890.")
    browser.find_element(By.ID, "check-title").send_keys("Paris")
    browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
    panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "panel")))
    wait(browser).until(lambda d: "score 0.90" in panel.text)
    steps = browser.execute_script("return Array.from(document.querySelectorAll('#steps li')).map(li => li.textContent)")
    assert any("search" in step for step in steps) and any("verifier" in step for step in steps)
    # the Patrol tab shows the patrol, not the check just made: its result and side panel are hidden
    browser.find_element(By.CSS_SELECTOR, ".tab[data-tab=patrol-view]").click()
    wait(browser).until(lambda d: not d.find_element(By.ID, "panel").is_displayed()
                        and not d.find_element(By.ID, "result").is_displayed())
    browser.save_screenshot(str(shots / "web-patrol-after-check.png"))


def test_an_article_loaded_from_the_index_comes_whole_in_reading_order_with_its_headings(stack, browser, shots):
    browser.get(stack["app"] + "/")
    browser.find_element(By.ID, "scan-title").send_keys("Eiffel Tower")
    browser.find_element(By.ID, "load-article").click()
    wait(browser).until(lambda d: d.find_element(By.ID, "scan-text").get_attribute("value").strip())
    text = browser.find_element(By.ID, "scan-text").get_attribute("value")
    headings = [line for line in text.splitlines() if line.startswith("== ")]
    assert headings and not text.startswith("=")  # the introduction first, then the sections under their headings
    browser.save_screenshot(str(shots / "web-article-from-index.png"))
    browser.find_element(By.CSS_SELECTOR, "#scan-form button[type=submit]").click()  # scanned, it reads as the article
    wait(browser, 120).until(EC.text_to_be_present_in_element((By.ID, "progress-text"), "Done"))
    article = browser.find_element(By.ID, "article")
    shown = [h.text for h in article.find_elements(By.CSS_SELECTOR, ".article-heading")]
    assert shown[0] == headings[0].strip("= ") and {h.strip("= ") for h in headings} <= set(shown)
    assert "==" not in article.text  # headings, not wikitext
    browser.save_screenshot(str(shots / "web-article-scanned.png"))


def test_a_fact_that_could_not_be_checked_never_reads_as_a_clean_result(stack, browser, shots, tmp_path):
    """The LLM endpoint is down: the progress line says the fact could not be checked (in its own
    colour) and nothing counts as checked or flagged."""
    root = Path(stack["index_root"])
    config = load_config(None, {"llm.base_url": "http://127.0.0.1:9/v1", "llm.cache": False, "llm.api_key": "sk-x",
                                "llm.max_attempts": 1, "retrieval.rerank": False, "retrieval.path": str(root)})
    retriever = open_retrieval(config)
    try:
        with ServerThread(create_app(config, ServeSettings(data_dir=tmp_path), retriever=retriever)) as dead:
            browser.get(dead.url + "/")
            browser.find_element(By.CSS_SELECTOR, ".tab[data-tab=check-form]").click()
            browser.find_element(By.ID, "check-fact").send_keys("The Eiffel Tower was completed in 1890.")
            browser.find_element(By.ID, "check-title").send_keys("Paris")
            browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
            progress = wait(browser).until(EC.visibility_of_element_located((By.ID, "progress-text")))
            wait(browser).until(lambda d: "could not be checked" in progress.text)
            text = progress.text
            assert text.startswith("Stopped") and "0 of 1 fact checked" in text and "0 flagged" in text, text
            assert "claire-progress-error" in progress.get_attribute("class")
            # in the list the fact reads as failed, not as pending ("…"), and why is said once, on one line
            item = browser.find_element(By.CSS_SELECTOR, "#fact-list li")
            assert item.get_attribute("class") == "claire-error"
            assert item.find_element(By.CSS_SELECTOR, ".score").text == "failed" and "…" not in item.text
            reason = browser.find_element(By.ID, "failure-reason").text
            assert reason.startswith("1 fact could not be checked: ") and "cannot connect" in reason, reason
            assert reason.count("cannot connect") == 1 and "\n" not in reason
            assert "cannot connect" not in text  # the progress line does not say it again
            assert browser.find_element(By.ID, "recheck").text == "Re-check the facts that failed"
            browser.save_screenshot(str(shots / "web-endpoint-down.png"))
            browser.find_element(By.ID, "recheck").click()  # the endpoint is still down: it fails again, and says so
            wait(browser).until(lambda d: d.find_element(By.ID, "failures").is_displayed()
                                and "Stopped" in d.find_element(By.ID, "progress-text").text)
        # the server is gone now: the page says so and what to do, not "Failed to fetch"
        browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
        wait(browser).until(lambda d: "cannot reach the CLAIRE server" in d.find_element(By.ID, "message").text)
        assert "claire serve" in browser.find_element(By.ID, "message").text
    finally:
        retriever.close()


def test_extension_content_script_highlights_the_wikipedia_page(stack, browser, shots):
    browser.get(stack["pages"] + "/wikipedia_paris.html")
    browser.execute_script("window.CLAIRE_SETTINGS = {server: arguments[0]};"
                           "const style = document.createElement('style'); style.textContent = arguments[1];"
                           "document.head.appendChild(style);", stack["app"], (EXTENSION / "panel.css").read_text())
    for script in ("panel.js", "content.js"):  # as the manifest lists them
        browser.execute_script((EXTENSION / script).read_text())
    button = wait(browser, 10).until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#firstHeading + .claire-ui button")))
    assert button.text == "Check consistency"
    button.click()
    mark = wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, ".mw-parser-output p mark.claire-mark")))
    sentence = browser.execute_script(
        "const key = arguments[0].dataset.claireKey;"
        "return Array.from(document.querySelectorAll('mark.claire-mark')).filter(m => m.dataset.claireKey === key)"
        ".map(m => m.textContent).join('')", mark)
    assert sentence == "The Eiffel Tower was completed in 1890 and quickly became the symbol of the city."  # not the [3]
    assert browser.find_element(By.CSS_SELECTOR, "a[href='/wiki/Eiffel_Tower'] > mark.claire-mark")  # the link stays a link
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".claire-status"), "Done"))
    mark.click()
    panel = wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, "aside.claire-panel")))
    assert "Inconsistent" in panel.text and "CITED PASSAGES" in panel.text
    panel.find_element(By.CSS_SELECTOR, "button.claire-reject").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "aside.claire-panel .claire-decision"),
                                                         "You marked it not a contradiction"))
    assert browser.execute_script("return window.__pwned === undefined")
    if "CLAIRE_SCREENSHOTS" not in os.environ:  # a debugging aid, not one of README's pictures
        browser.save_screenshot(str(shots / "web-extension-injected.png"))


class _ArticlePage(SimpleHTTPRequestHandler):
    """Serves a saved article under /wiki/TITLE as HTML."""

    def guess_type(self, path):  # noqa: ANN001, ANN201
        return "text/html"

    def log_message(self, *args):  # noqa: ANN002, ANN201
        return None


def _https_wikipedia(folder: Path) -> tuple[ThreadingHTTPServer, int]:
    """The saved Paris article at https://en.wikipedia.org:PORT/wiki/Paris (a self-signed certificate;
    the browser resolves the name to 127.0.0.1)."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to serve the article over HTTPS")
    (folder / "site" / "wiki").mkdir(parents=True)
    shutil.copy(FIXTURES / "wikipedia_paris.html", folder / "site" / "wiki" / "Paris")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(folder / "key.pem"),
                    "-out", str(folder / "cert.pem"), "-days", "2", "-subj", "/CN=en.wikipedia.org"],
                   check=True, capture_output=True, timeout=60)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_ArticlePage, directory=str(folder / "site")))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def test_the_extension_loaded_unpacked_checks_a_wikipedia_page(stack, shots, tmp_path):
    """The extension as a user installs it: loaded unpacked into Chromium, configured on its options
    page, run by the manifest on an article page served over HTTPS as en.wikipedia.org."""
    from selenium.webdriver.chrome.service import Service

    article, port = _https_wikipedia(tmp_path)
    origin = f"https://en.wikipedia.org:{port}"
    extension = tmp_path / "extension"
    shutil.copytree(EXTENSION, extension)
    # Chromium names an unpacked extension after its folder: the SHA-256 of the path, in letters a-p
    extension_id = "".join(chr(ord("a") + int(c, 16)) for c in hashlib.sha256(str(extension).encode()).hexdigest()[:32])
    config = load_config(None, {"llm.base_url": stack["llm"], "llm.cache": False, "llm.api_key": "sk-browser",
                                "retrieval.rerank": False, "retrieval.path": stack["index_root"]})
    retriever = open_retrieval(config)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,950",
                 "--no-first-run", f"--load-extension={extension}", f"--disable-extensions-except={extension}",
                 "--host-resolver-rules=MAP en.wikipedia.org 127.0.0.1", "--ignore-certificate-errors"):
        options.add_argument(flag)
    try:
        with ServerThread(create_app(config, ServeSettings(data_dir=tmp_path / "data", cors_origins=[origin]),
                                     retriever=retriever)) as app:
            try:
                driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
            except Exception as error:
                pytest.skip(f"cannot start headless chromium with an extension: {str(error).splitlines()[0]}")
            try:
                driver.get(f"chrome-extension://{extension_id}/options.html")
                server = wait(driver, 20).until(EC.visibility_of_element_located((By.ID, "server")))
                server.clear()
                server.send_keys(app.url)
                driver.find_element(By.CSS_SELECTOR, "#form button[type=submit]").click()
                wait(driver, 20).until(EC.text_to_be_present_in_element((By.ID, "saved"), "Saved."))
                driver.get(f"{origin}/wiki/Paris")
                button = wait(driver, 30).until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#firstHeading + .claire-ui button")))
                assert button.text == "Check consistency"
                button.click()
                mark = wait(driver).until(EC.visibility_of_element_located((By.CSS_SELECTOR, ".mw-parser-output p mark.claire-mark")))
                wait(driver).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".claire-status"), "Done"))
                assert "1 flagged" in driver.find_element(By.CSS_SELECTOR, ".claire-status").text
                mark.click()
                panel = wait(driver).until(EC.visibility_of_element_located((By.CSS_SELECTOR, "aside.claire-panel")))
                assert "Inconsistent" in panel.text and "CITED PASSAGES" in panel.text
                panel.find_element(By.CSS_SELECTOR, "button.claire-accept").click()
                wait(driver).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "aside.claire-panel .claire-decision"),
                                                                    "You confirmed the contradiction"))
                driver.save_screenshot(str(shots / "web-extension.png"))
            finally:
                driver.quit()
    finally:
        retriever.close()
        article.shutdown()
        article.server_close()


def test_the_patrol_view_lists_flagged_edits_for_review(stack, browser, shots, tmp_path):
    """`claire serve --watch` on a replayed stream: the flagged fact of an edit appears in the Patrol
    view with its diff link, and the editor's decision is kept."""
    import json

    from claire.testing.wiki_doubles import WikiApiServer, change_event
    from claire.jobs.store import JobStore

    old = "'''Paris''' is the capital of France. The city is home to the Eiffel Tower on the Champ de Mars."
    new = old + " The Eiffel Tower was completed in 1890 and quickly became the symbol of the city."
    revisions = {501: (7, "Paris", old), 502: (7, "Paris", new), 601: (8, "Louvre", "'''Louvre''' is a museum in Paris."),
                 602: (8, "Louvre", "'''Louvre''' is a museum in Paris. It opened in 1793 in a former royal palace.")}
    recording = tmp_path / "recentchange.jsonl"
    edited = 1735734600  # 2025-01-01 12:30 UTC: when the edit was made, long before the patrol read it
    events = (change_event("Louvre", 601, 602, user="Curator"),
              change_event("Paris", 501, 502, user="Visitor", comment="completion date", timestamp=edited))
    recording.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    with WikiApiServer(revisions) as api:
        config = load_config(None, {"llm.base_url": stack["llm"], "llm.cache": False, "llm.api_key": "sk-browser",
                                    "retrieval.rerank": False, "retrieval.path": stack["index_root"],
                                    "watch.replay": str(recording), "watch.api_url": api.api_url})
        retriever = open_retrieval(config)
        settings = ServeSettings(data_dir=tmp_path / "data", watch=True)
        try:
            with ServerThread(create_app(config, settings, retriever=retriever)) as app:
                browser.get(app.url + "/")
                browser.find_element(By.ID, "patrol-tab").click()
                wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#patrol-list .patrol-item")) == 2)
                # the replay's two events are read, so the patrol ends once they are checked, and says why
                wait(browser).until(lambda d: "The patrol has stopped (the recording has ended)"
                                    in d.find_element(By.ID, "patrol-status").text)
                # newest edit first: the Paris edit came last in the stream
                item = browser.find_elements(By.CSS_SELECTOR, "#patrol-list .patrol-item")[0]
                assert "Paris" in item.text and "revision 502 by Visitor" in item.text
                assert "The Eiffel Tower was completed in 1890" in item.text and "Inconsistent" in item.text
                diff = item.find_element(By.CSS_SELECTOR, "a.patrol-diff").get_attribute("href")
                assert diff == "https://en.wikipedia.org/w/index.php?diff=502&oldid=501"
                # the edit's own time, not when the patrol read it
                when = browser.execute_script("return new Date(arguments[0] * 1000).toLocaleString()", edited)
                assert "edited " + when in item.find_element(By.CSS_SELECTOR, ".patrol-head").text
                # the edit itself: the sentence it added, marked, in its context
                quote = item.find_element(By.CSS_SELECTOR, ".claire-edit-context")
                assert quote.find_element(By.TAG_NAME, "mark").text == \
                    "The Eiffel Tower was completed in 1890 and quickly became the symbol of the city."
                assert "The city is home to the Eiffel Tower" in quote.text
                # what the agent reported and the one or two passages it conflicts with; the rest on demand
                assert "THE AGENT REPORTED" in item.text and "THE PASSAGES IT CONFLICTS WITH" in item.text
                assert 1 <= len(item.find_elements(By.CSS_SELECTOR, ".claire-edit > .claire-section .claire-passage")) <= 2
                more = item.find_element(By.CSS_SELECTOR, "details.claire-more")
                assert more.get_attribute("open") is None and more.text.startswith("More: the verifier's analysis")
                assert item.size["height"] < 900, item.size  # one screen
                buttons = [b.text for b in item.find_elements(By.CSS_SELECTOR, ".claire-buttons button")]
                assert buttons == ["Contradiction confirmed", "Not a contradiction"]
                item.find_element(By.CSS_SELECTOR, ".claire-comment").send_keys("The tower opened in 1889.")
                item.find_element(By.CSS_SELECTOR, "button.claire-accept").click()
                wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#patrol-list .claire-decision"),
                                                                     "You confirmed the contradiction"))
                browser.execute_script("window.scrollTo(0, 0)")
                browser.save_screenshot(str(shots / "web-patrol.png"))
                browser.find_element(By.ID, "patrol-all").click()
                wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#patrol-list .patrol-item")) > 2)
                # a consistent fact's card never says the passages conflict with it
                calm = [i.text for i in browser.find_elements(By.CSS_SELECTOR, "#patrol-list .patrol-item")
                        if "Consistent ·" in i.text]
                assert calm and not any("CONFLICTS WITH" in text for text in calm), calm
        finally:
            retriever.close()
    store = JobStore(settings.store_path())
    try:
        assert [(r["job_id"], r["decision"], r["comment"]) for r in store.reviews()] == [
            ("enwiki:502", "accept", "The tower opened in 1889.")]
    finally:
        store.close()


def test_a_missing_or_wrong_token_says_which_and_what_to_do(stack, browser, tmp_path):
    config = load_config(None, {"llm.base_url": stack["llm"], "llm.cache": False, "llm.api_key": "sk-browser",
                                "retrieval.rerank": False, "retrieval.path": stack["index_root"]})
    retriever = open_retrieval(config)
    try:
        with ServerThread(create_app(config, ServeSettings(data_dir=tmp_path, token="right-token"), retriever=retriever)) as app:
            browser.get(app.url + "/")
            browser.execute_script("localStorage.removeItem('claire-token')")
            browser.find_element(By.CSS_SELECTOR, ".tab[data-tab=check-form]").click()
            browser.find_element(By.ID, "check-fact").send_keys("The Eiffel Tower was completed in 1890.")
            browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
            wait(browser).until(lambda d: "needs its access token" in d.find_element(By.ID, "message").text)
            assert browser.find_element(By.ID, "token-form").is_displayed()
            browser.find_element(By.ID, "token").send_keys("wrong-token")
            browser.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
            browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
            wait(browser).until(lambda d: "refused the saved access token" in d.find_element(By.ID, "message").text)
            browser.execute_script("localStorage.setItem('claire-token', 'right-token')")
            browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
            panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "panel")))
            wait(browser).until(lambda d: "score" in panel.text)
    finally:
        retriever.close()


# -- what a first visit shows, and highlights in every script -------------

TOWER_SENTENCE = "The Eiffel Tower was completed in 1889 and is 330 metres tall."
SPLIT_FACTS = {"The Eiffel Tower was completed in 1889.": 0.1, "The Eiffel Tower is 330 metres tall.": None}  # None: fails


def test_a_failed_fact_is_never_painted_fine_and_a_recheck_runs_at_once(stack, browser, shots, tmp_path):
    """One sentence states two facts: one checks out at 0.10, the other's verifier hangs (the model
    server is down). The sentence is painted as failed, never green; results and the side panel
    come into view at 1280x900 and 900 px wide; once the server is back, "Re-check the facts that
    failed" checks at once instead of refusing for a minute."""
    state = {"down": True}

    def respond(body):
        kind = kind_of(body)
        user = body["messages"][-1]["content"]
        if kind == "extract":
            return {"content": "\n".join(f"<fact>{f}</fact><source>{TOWER_SENTENCE}</source>" for f in SPLIT_FACTS)}
        if kind == "verifier":
            fact = user.split("<fact>", 1)[-1].split("</fact>", 1)[0]
            if "330" in fact and state["down"]:
                return {"fault": "hang", "seconds": 3}
            score = SPLIT_FACTS.get(fact) or 0.2
            return {"content": f"<analysis>[1] agrees.</analysis><inconsistency_score>{score}</inconsistency_score>"}
        return http_responder()(body)

    text = "Paris has many landmarks.\n\n" * 12 + TOWER_SENTENCE  # a long page: the results open below the fold
    with MockOpenAIServer(respond) as llm:
        config = load_config(None, {"llm.base_url": llm.base_url, "llm.cache": False, "llm.api_key": "sk-x",
                                    "llm.max_attempts": 1, "llm.timeout": 1, "retrieval.rerank": False,
                                    "retrieval.path": stack["index_root"]})
        retriever = open_retrieval(config)
        try:
            with ServerThread(create_app(config, ServeSettings(data_dir=tmp_path), retriever=retriever)) as app:
                browser.set_window_size(1280, 900)
                browser.get(app.url + "/")
                browser.find_element(By.ID, "scan-title").send_keys("Paris")
                browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, "scan-text"), text)
                browser.execute_script("window.scrollTo(0, 0)")
                browser.find_element(By.CSS_SELECTOR, "#scan-form button[type=submit]").click()
                wait(browser).until(lambda d: d.find_element(By.ID, "result").is_displayed())
                top, height = browser.execute_script("return [document.getElementById('result').getBoundingClientRect().top,"
                                                     " window.innerHeight]")
                assert -2 <= top < height * 0.35, (top, height)  # scrolled to where the results are
                wait(browser).until(EC.text_to_be_present_in_element((By.ID, "progress-text"), "1 could not be checked"))
                mark = browser.find_element(By.CSS_SELECTOR, "#article mark")
                assert mark.text == TOWER_SENTENCE and "claire-error" in mark.get_attribute("class")  # not claire-ok
                browser.save_screenshot(str(shots / "web-failed-fact-1280.png"))
                browser.set_window_size(900, 1000)
                browser.execute_script("window.scrollTo(0, 0)")
                click(browser, "#fact-list li.claire-error")
                panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "panel")))
                box = browser.execute_script("return arguments[0].getBoundingClientRect().top", panel)
                height = browser.execute_script("return window.innerHeight")
                assert -2 <= box < height * 0.35, (box, height)  # the panel opened in view, not under the page
                assert "Could not be checked" in panel.text
                browser.save_screenshot(str(shots / "web-panel-900.png"))
                state["down"] = False  # the model server is back
                browser.execute_script("window.scrollTo(0, 0)")
                click(browser, "#recheck")
                wait(browser, 30).until(EC.text_to_be_present_in_element((By.ID, "progress-text"), "Done · 2 of 2 facts checked"))
                mark = browser.find_element(By.CSS_SELECTOR, "#article mark")
                assert "claire-ok" in mark.get_attribute("class") or "claire-low" in mark.get_attribute("class")
                widths = browser.execute_script("return [document.getElementById('result').getBoundingClientRect().width,"
                                                "document.querySelector('main.layout').clientWidth]")
                assert widths[0] > 0.9 * (widths[1] - 32), widths  # a narrow window's results take its whole width
                browser.save_screenshot(str(shots / "web-rechecked-900.png"))
        finally:
            browser.set_window_size(1400, 950)
            retriever.close()


def test_highlights_land_on_the_right_text_after_characters_outside_the_bmp(stack, browser):
    """Emoji, mathematical letters and CJK Extension B before the sentence: the API counts UTF-16
    units as the page does, so the mark covers the sentence itself."""
    text = "Intro \U0001F600\U0001F600\U0001F600 about \U0001D465\U0001D466 and \U0002000B here.\n\nThe Eiffel Tower was completed in 1890."
    submit_scan(browser, stack["app"], "Paris", text)
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "progress-text"), "Done"))
    marks = browser.execute_script("return Array.from(document.querySelectorAll('#article mark')).map(m => m.textContent)")
    assert "The Eiffel Tower was completed in 1890." in marks, marks
    assert browser.find_element(By.ID, "article").text.startswith("Intro \U0001F600")


@contextlib.contextmanager
def oracle_app(root, data_dir, **settings):
    """The app over the index folder ``root`` with the oracle as its model (the keyless tour),
    with ``settings`` on top; its URL."""
    from claire.testing.oracle import oracle_responder

    with MockOpenAIServer(oracle_responder(), model="oracle") as llm:
        config = load_config(None, {"llm.base_url": llm.base_url, "llm.model": "oracle", "llm.cache": False,
                                    "llm.api_key": "sk-tour", "retrieval.rerank": False, "retrieval.path": str(root),
                                    **settings})
        retriever = open_retrieval(config)
        try:
            with ServerThread(create_app(config, ServeSettings(data_dir=data_dir), retriever=retriever)) as app:
                yield app.url
        finally:
            retriever.close()


@pytest.fixture(scope="module")
def tour_stack(tmp_path_factory, copy_demo_index):
    """The app over the demo index with the oracle as its model: the keyless tour in the browser."""
    with oracle_app(copy_demo_index(tmp_path_factory.mktemp("tour-indexes")), tmp_path_factory.mktemp("tour-data")) as url:
        yield url


def test_which_side_is_right_in_the_side_panel(tour_stack, browser, shots):
    browser.get(tour_stack + "/")
    browser.find_element(By.CSS_SELECTOR, ".tab[data-tab=check-form]").click()
    browser.find_element(By.ID, "check-fact").send_keys("The Eiffel Tower was completed in 1890.")
    browser.find_element(By.ID, "check-title").send_keys("Paris")
    browser.find_element(By.ID, "check-section").send_keys("Landmarks")
    browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
    panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "panel")))
    wait(browser).until(lambda d: "score 0.90" in panel.text)
    click(browser, "#panel button.claire-resolve")
    decision = wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, "#panel .claire-sides-decision")))
    assert decision.text.startswith("The passage is right")
    sides = browser.find_elements(By.CSS_SELECTOR, "#panel .claire-side")
    assert len(sides) == 2 and "verified" in sides[1].text and "generally unreliable" in sides[0].text
    quote = sides[1].find_element(By.CSS_SELECTOR, ".claire-quote").text
    assert "completed in March 1889" in quote
    draft = browser.find_element(By.CSS_SELECTOR, "#panel textarea.claire-talk").get_attribute("value")
    assert draft.startswith("== Contradiction with Eiffel Tower ==") and draft.rstrip().endswith("~~~~")
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})",
                           browser.find_element(By.CSS_SELECTOR, "#panel .claire-sides"))
    time.sleep(0.3)
    assert browser.save_screenshot(str(shots / "web-sides.png"))
    click(browser, "#panel button.claire-copy")
    wait(browser).until(lambda d: d.find_element(By.CSS_SELECTOR, "#panel button.claire-copy").text != "Copy the talk-page draft")
    # the Patrol tab shows the patrol, not the last check's result and panel
    browser.find_element(By.ID, "patrol-tab").click()
    wait(browser).until(lambda d: not d.find_element(By.ID, "result").is_displayed()
                        and not d.find_element(By.ID, "panel").is_displayed())
    browser.find_element(By.CSS_SELECTOR, ".tab[data-tab=check-form]").click()
    assert browser.find_element(By.ID, "result").is_displayed()


def test_the_worklist_tab_filters_opens_a_card_and_keeps_a_decision(browser, shots, tmp_path, copy_demo_index):
    """An editor's pass over a corpus run in the Worklist tab: filter by article, open the card,
    accept one with a note; it leaves the open list and the run keeps the decision."""
    import json

    from claire.jobs.worklist import write_worklist
    from claire.resolving.worklist import EntryFact, WorklistEntry
    from claire.tasks.sides.records import SideReport

    run = tmp_path / "wl"
    run.mkdir()
    write_worklist(run, [
        WorklistEntry(claim_id=f"f{n}", id=f"c-{n}", decision=decision, confidence=0.7, reasons=["a reason to read"],
                      should_change=wrong if decision == "passage" else None,
                      sides=[SideReport(side="fact", text=fact, document_title=wrong, block_id=f"a{n}", sentence=fact),
                             SideReport(side="passage", text="the other side", document_title=right, block_id=f"b{n}")],
                      facts=[EntryFact(claim_id=f"f{n}", text=fact)])
        for n, (wrong, right, decision, fact) in enumerate([
            ("Paris", "Eiffel Tower", "passage", "The Eiffel Tower was completed in 1890."),
            ("Edwin Hubble", "Hubble Space Telescope", "unknown", "The main mirror is 2.4 feet across.")])])
    root = copy_demo_index(tmp_path / "indexes")
    config = load_config(None, {"llm.api_key": "sk-test", "retrieval.path": str(root)})
    retriever = open_retrieval(config)
    try:
        with ServerThread(create_app(config, ServeSettings(data_dir=tmp_path / "web", worklist=run),
                                     retriever=retriever)) as app:
            browser.get(app.url + "/")
            browser.find_element(By.ID, "worklist-tab").click()
            items = lambda d: d.find_elements(By.CSS_SELECTOR, "#worklist-list .worklist-item")  # noqa: E731
            wait(browser).until(lambda d: len(items(d)) == 2)
            assert "Paris" in items(browser)[0].text and "Paris should change" in items(browser)[0].text
            browser.find_element(By.ID, "worklist-article").send_keys("hubble")
            wait(browser).until(lambda d: len(items(d)) == 1 and "Edwin Hubble" in items(d)[0].text)
            browser.find_element(By.ID, "worklist-article").clear()
            browser.find_element(By.ID, "worklist-article").send_keys(" ")
            wait(browser).until(lambda d: len(items(d)) == 2)
            first = items(browser)[0]
            first.find_element(By.CSS_SELECTOR, "details.worklist-card summary").click()
            decision = wait(browser).until(lambda d: items(d)[0].find_element(By.CSS_SELECTOR, ".claire-sides-decision"))
            assert decision.text.startswith("The passage is right")
            assert browser.save_screenshot(str(shots / "web-worklist.png"))
            items(browser)[0].find_element(By.CSS_SELECTOR, "input.worklist-note").send_keys("fixed in Paris")
            next(b for b in items(browser)[0].find_elements(By.TAG_NAME, "button") if b.text == "Accept").click()
            wait(browser).until(lambda d: "1 of 2 contradictions still open" in d.find_element(By.ID, "worklist-status").text)
            assert [item.text.split(" against ")[0] for item in items(browser)] == ["Edwin Hubble"]
    finally:
        retriever.close()
    kept = [json.loads(line) for line in (run / "worklist.jsonl").read_text().splitlines()]
    assert (kept[0]["status"], kept[0]["note"]) == ("accepted", "fixed in Paris")


@pytest.fixture(scope="module")
def editions_stack(tmp_path_factory, multilingual_index_root):
    """The app over the multilingual demo index, searching the French and German editions too
    (``serve --languages fr,de``), with the oracle as its model."""
    from claire.indexes.retriever import MULTILINGUAL_DEMO

    root = tmp_path_factory.mktemp("editions-indexes") / "indexes"
    shutil.copytree(multilingual_index_root, root)
    with oracle_app(root, tmp_path_factory.mktemp("editions-data"), **{"retrieval.index": MULTILINGUAL_DEMO,
                                                                     "retrieval.languages": ["fr", "de"]}) as url:
        yield url


def test_a_fact_checked_across_editions_shows_the_other_sentence_its_translation_and_the_right_side(
        editions_stack, browser, shots):
    browser.get(editions_stack + "/")
    browser.find_element(By.CSS_SELECTOR, ".tab[data-tab=check-form]").click()
    browser.find_element(By.ID, "check-fact").send_keys("The Eiffel Tower was inaugurated on 31 March 1889.")
    browser.find_element(By.ID, "check-title").send_keys("Eiffel Tower")
    browser.find_element(By.ID, "check-section").send_keys("History > Construction")
    browser.find_element(By.CSS_SELECTOR, "#check-form button[type=submit]").click()
    panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "panel")))
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#panel button.claire-resolve"))
    click(browser, "#panel button.claire-resolve")
    decision = wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, "#panel .claire-sides-decision")))
    assert decision.text.startswith("The fact is right"), panel.text
    sides = browser.find_elements(By.CSS_SELECTOR, "#panel .claire-side")
    german = next(side for side in sides if "Eiffelturm" in side.text)
    assert german.find_element(By.CSS_SELECTOR, ".claire-edition").text == "German edition"
    assert "Der Turm wurde am 31. März 1890 eingeweiht" in german.find_element(By.CSS_SELECTOR, ".claire-text").text
    translation = german.find_element(By.CSS_SELECTOR, ".claire-translation").text
    assert translation.startswith("Translation into English (by the model)") and "31 March 1890" in translation
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})",
                           browser.find_element(By.CSS_SELECTOR, "#panel .claire-sides"))
    time.sleep(0.3)
    assert browser.save_screenshot(str(shots / "web-sides-editions.png"))
