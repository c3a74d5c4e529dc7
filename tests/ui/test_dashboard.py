"""The dashboard, used as a person would: each view opened in a real Chromium against a real
`kith serve`, what it shows checked against the API, a user clicked through, a relayout run
from its button; a screenshot of each view goes to bench/results/ui/."""

import threading
import time
import urllib.request

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import TOKEN, call


def wait(browser, what, timeout=30):
    """Waits until `what(browser)` is truthy and returns it. The page re-renders lists as
    answers arrive, so an element found a moment ago may be gone: that counts as not yet."""
    return WebDriverWait(browser, timeout, poll_frequency=0.1,
                         ignored_exceptions=(NoSuchElementException,
                                             StaleElementReferenceException)).until(
        lambda b: what(b))


def click(browser, css):
    """Clicks the element `css` names, finding it again if a re-render replaced it."""
    def attempt(b):
        b.find_element(By.CSS_SELECTOR, css).click()
        return True
    wait(browser, attempt)


def text_of(browser, css):
    return browser.find_element(By.CSS_SELECTOR, css).text


def open_view(browser, server, view):
    browser.get(f"{server}/ui/#{view}")
    wait(browser, lambda b: b.execute_script("return typeof echarts") == "object")


def test_health_shows_the_servers_own_counts_and_rates(browser, server, screenshots):
    stop = threading.Event()
    sent = [0]

    failed = []

    def load():
        while not stop.is_set():
            try:
                with urllib.request.urlopen(f"{server}/users/{sent[0] % 4000}", timeout=10) as r:
                    r.read()
            except OSError as e:  # counted, and the load goes on
                failed.append(e)
            sent[0] += 1

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        open_view(browser, server, "health")
        row = 'tr[data-route="/users/{uid}"][data-method="GET"]'
        wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, row))
        # A rate needs two samples; wait for a nonzero one.
        wait(browser, lambda b: float(text_of(b, row + " td:nth-child(4)").replace(",", "")) > 0)
        def shown_count(b):
            return int(text_of(b, row + " td:nth-child(3)").replace(",", ""))

        # The count shown is one the server had: above what it had before, and at most
        # what it has after (counts only grow).
        before = call(server, "GET", "/ui/api/metrics")[1]
        wait(browser, lambda b: shown_count(b) > count(before, "/users/{uid}"), timeout=10)
        shown = shown_count(browser)
        after = call(server, "GET", "/ui/api/metrics")[1]
        assert count(before, "/users/{uid}") < shown <= count(after, "/users/{uid}")
        assert float(text_of(browser, "#tile-rps")) > 0
        p99 = text_of(browser, row + " td:nth-child(6)")
        assert p99 != "–" and float(p99) > 0
        wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#chart-rps canvas"))
        time.sleep(1.5)
        browser.save_screenshot(str(screenshots / "health.png"))
        assert all(t.is_alive() for t in threads) and len(failed) < 10, failed[:3]
    finally:
        stop.set()
        for t in threads:
            t.join()


def all_friends(server, uid):
    friends, offset = [], 0
    while True:
        page = call(server, "GET", f"/users/{uid}/friends?offset={offset}&limit=500")[1]
        friends += page["friends"]
        offset += len(page["friends"])
        if not page["friends"] or offset >= page["total"]:
            return friends


def count(metrics, route):
    return sum(sum(r["status"].values()) for r in metrics["routes"]
               if r["route"] == route and r["method"] == "GET")


def test_a_user_their_friends_page_by_page_the_neighbourhood_and_the_feed(browser, server, screenshots):
    open_view(browser, server, "user/0")
    wait(browser, lambda b: b.find_element(By.ID, "user-body").get_attribute("data-uid") == "0")
    user = call(server, "GET", "/users/0")[1]
    assert text_of(browser, '#user-profile dd[data-key="name"]') == user["profile"]["name"]
    assert text_of(browser, "#user-friends-total") == f"({user['friends_total']:,})"

    def shown_friends(b):
        return [int(a.get_attribute("data-uid")) for a in b.find_elements(By.CSS_SELECTOR, "#user-friends a")]

    first = call(server, "GET", "/users/0/friends?offset=0&limit=50")[1]
    wait(browser, lambda b: shown_friends(b) == first["friends"])
    click(browser, "#friends-next")
    second = call(server, "GET", "/users/0/friends?offset=50&limit=50")[1]
    wait(browser, lambda b: shown_friends(b) == second["friends"])

    feed = call(server, "GET", "/users/0/feed?limit=20")[1]
    assert feed["posts"], "the fixture's posts reach user 0's feed"
    wait(browser, lambda b: [int(li.get_attribute("data-post")) for li in
                             b.find_elements(By.CSS_SELECTOR, "#user-feed li[data-post]")]
         == [p["id"] for p in feed["posts"]])
    ego = call(server, "GET", "/ui/api/ego/0?limit=60")[1]
    assert len(ego["friends"]) == min(60, user["friends_total"])
    # Every drawn edge is a friendship the API knows, and every friendship among those drawn
    # is drawn.
    drawn = set([0] + ego["friends"])
    expected = set()
    for a in sorted(drawn):
        expected |= {(min(a, b), max(a, b)) for b in all_friends(server, a) if b in drawn}
    assert {tuple(e) for e in ego["edges"]} == expected
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#chart-ego canvas"))
    time.sleep(2)  # let the force layout settle for the picture
    browser.save_screenshot(str(screenshots / "user.png"))

    # Click through to a friend.
    target = second["friends"][0]
    click(browser, f'#user-friends a[data-uid="{target}"]')
    wait(browser, lambda b: b.find_element(By.ID, "user-body").get_attribute("data-uid") == str(target))
    assert browser.current_url.endswith(f"#user/{target}")

    # An unknown user is said so, not drawn.
    open_view(browser, server, "user/999999999")
    wait(browser, lambda b: "unknown_user" in text_of(b, "#user-error"))


def test_the_layout_view_compares_orders_as_the_api_and_the_store_do(browser, server, screenshots):
    open_view(browser, server, "layout")
    shown = {}
    for order in ["input", "random", "current"]:
        shown[order] = float(wait(browser, lambda b: (t := text_of(b, f"#pages-{order}")) != "–" and t))
        api = call(server, "GET", f"/ui/api/matrix?order={order}&bins=96")[1]
        assert shown[order] == round(api["pages_mean"], 2)
        # The matrix holds every friendship twice (both directions).
        assert sum(api["cells"]) == 2 * 88234
    status = call(server, "GET", "/ui/api/status")[1]
    assert abs(shown["current"] - status["pages_mean"]) < 0.01
    assert shown["current"] < shown["input"] < shown["random"]
    browser.find_element(By.ID, "pages-uid").send_keys("0")
    click(browser, "#pages-open")
    wait(browser, lambda b: b.find_element(By.ID, "chart-pages").get_attribute("data-uid") == "0")
    pages = call(server, "GET", "/ui/api/pages/0")[1]
    assert pages["current"] < pages["random"]
    time.sleep(1)
    browser.save_screenshot(str(screenshots / "layout.png"))


def test_the_store_status_and_a_relayout_from_its_button(browser, server, screenshots):
    open_view(browser, server, "store")
    wait(browser, lambda b: b.find_element(By.ID, "status").get_attribute("data-users") == "4039")
    generation = int(browser.find_element(By.ID, "status").get_attribute("data-generation"))
    # Without the token the button is refused, and says why.
    browser.execute_script("sessionStorage.removeItem('kith-token'); token = '';")
    click(browser, "#relayout")
    wait(browser, lambda b: "unauthorized" in text_of(b, "#relayout-error"))
    token = browser.find_element(By.ID, "token")
    token.clear()
    token.send_keys(TOKEN)
    browser.execute_script("document.getElementById('token').dispatchEvent(new Event('change'))")
    click(browser, "#relayout")
    seen = set()

    def finished(b):
        state = b.find_element(By.ID, "relayout-state").get_attribute("data-state")
        seen.add(state)
        return state in ("done", "failed") and state

    assert wait(browser, finished, timeout=120) == "done", text_of(browser, "#relayout-error")
    job = call(server, "GET", "/ui/api/relayout")[1]
    assert job["state"] == "done" and job["report"]["to_generation"] == generation + 1
    assert f"generation {generation} → {generation + 1}" in text_of(browser, "#relayout-state")
    wait(browser, lambda b: b.find_element(By.ID, "status").get_attribute("data-generation")
         == str(generation + 1))
    assert browser.find_element(By.ID, "relayout-bar").get_attribute("style").find("100") >= 0
    browser.save_screenshot(str(screenshots / "store.png"))
    # The store still answers, in its new generation, with the same friendships.
    assert call(server, "GET", "/users/0")[1]["friends_total"] == 347
