"""`gulp serve` in a real browser (headless Chromium driven by Selenium).

    python scripts/ci/serve_browser.py GULP DIR [DIR ...] [--sound DIR --sound-fps N]
        [--shots DOCS_IMG_DIR]

Starts `GULP serve DIR ...` on a free port of 127.0.0.1, then: opens the
overview and checks its numbers against `gulp info --json`; pages through the
grid and filters it by a class, checking the counts against
`gulp dump-meta`; opens an item, plays it with the keyboard and pauses it;
loads "what the model sees". With --sound (a directory gulped with --audio at
--sound-fps frames a second, of one video with sound and one without, as
serve-test.sh makes it), it also opens the item with sound: its audio loads
with the duration `gulp info` gives, plays with the space key while the frame
shown follows the sound's time, and a frame step moves the sound to that
frame's time; the other item says it has no sound. Every page's images must
load, and every screenshot must not be blank. With --shots, the screenshots
of the overview, the item page and the model's batch are written there
(docs/img).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from io import BytesIO

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 60


def fail(message):
    raise AssertionError(message)


def check(cond, message):
    if not cond:
        fail(message)


def chrome(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    # The network is closed: nothing in the background, no QUIC, no sync.
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        # The item page's sound plays on a key press, as a user's does; no
        # audio device is needed.
        "--autoplay-policy=no-user-gesture-required",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(options=options, service=service)


def not_blank(png, what):
    """The screenshot has content: many colours, not one flat field."""
    image = Image.open(BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    n = len(colours) if colours is not None else 1 << 20
    check(n >= 50, f"{what}: the screenshot is blank ({n} colours)")
    return image


def images_loaded(driver, css):
    """Waits until every image matching `css` has loaded with pixels."""
    script = (
        "const imgs = Array.from(document.querySelectorAll(arguments[0]));"
        "imgs.forEach(i => { i.loading = 'eager'; });"
        "return [imgs.length, imgs.filter(i => i.complete && i.naturalWidth > 0).length];"
    )
    WebDriverWait(driver, WAIT).until(lambda d: (lambda r: r[0] > 0 and r[0] == r[1])(d.execute_script(script, css)))
    return driver.execute_script(script, css)[0]


def number(driver, css):
    return int(driver.find_element(By.CSS_SELECTOR, css).get_attribute("data-v"))


def gulp_json(gulp, *args):
    out = subprocess.run([gulp, *args], check=True, capture_output=True)
    return json.loads(out.stdout)


def check_sound(driver, url, gulp, sound_dir, n, fps):
    """The items of directory `n` (`sound_dir`): the one with sound plays it
    with its frames in step; the other says it has none."""
    info = gulp_json(gulp, "info", "--json", sound_dir)
    audio = info["audio"]
    check(audio["items"] == 1 and audio["no_sound"] == 1, f"sound: gulp info says {audio}")
    ids = sorted(gulp_json(gulp, "dump-meta", sound_dir, "--no-frame-info"))
    beep = next(i for i in ids if "beep" in i)
    mute = next(i for i in ids if "mute" in i)

    driver.get(f"{url}d/{n}/item?" + urllib.parse.urlencode({"id": mute}))
    check(driver.find_elements(By.ID, "no-sound"), "sound: the item without sound does not say so")
    check(not driver.find_elements(By.TAG_NAME, "audio"), "sound: an item without sound has a player")

    driver.get(f"{url}d/{n}/item?" + urllib.parse.urlencode({"id": beep}))
    state = (
        "const a = document.getElementById('audio');"
        "return {ready: a.readyState, duration: a.duration, time: a.currentTime, paused: a.paused, seeking: a.seeking,"
        " frame: Number(document.getElementById('player').dataset.frame),"
        " playing: document.querySelector('.player').dataset.playing};"
    )
    # HAVE_METADATA: the WAV's header was read.
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(state)["ready"] >= 1)
    duration = driver.execute_script(state)["duration"]
    check(abs(duration - audio["seconds"]) < 0.01, f"sound: the audio lasts {duration} s, gulp info says {audio['seconds']}")
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.SPACE)
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(state)["playing"] == "1")
    # Well into the sound, the frame shown is the one of its time.
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(state)["time"] > 1.5)
    now = driver.execute_script(state)
    expected = int(now["time"] * fps)
    check(abs(now["frame"] - expected) <= 1, f"sound: at {now['time']:.3f} s the frame shown is {now['frame']}, not {expected}")
    check(not now["paused"], "sound: not playing")
    body.send_keys(Keys.SPACE)
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(state)["paused"])
    # A frame step moves the sound to the frame's time (a seek: the server
    # answers byte ranges).
    body.send_keys(Keys.ARROW_RIGHT)
    def seeked(d):
        s = d.execute_script(state)
        return not s["seeking"] and abs(s["time"] - s["frame"] / fps) < 0.01
    WebDriverWait(driver, WAIT).until(seeked)
    stepped = driver.execute_script(state)
    check(stepped["frame"] > 0, f"sound: the step went to frame {stepped['frame']}")
    not_blank(driver.get_screenshot_as_png(), "item page with sound")
    return f", item {beep} played with its sound ({duration:.2f} s) to {now['time']:.2f} s at frame {now['frame']}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("gulp")
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--shots")
    parser.add_argument("--sound")
    parser.add_argument("--sound-fps", type=float, default=10.0)
    args = parser.parse_args()
    gulp, first_dir = args.gulp, args.dirs[0]
    info = gulp_json(gulp, "info", "--json", first_dir)
    meta = gulp_json(gulp, "dump-meta", first_dir, "--no-frame-info")
    labels = {id_: m["meta_data"][0].get("label") for id_, m in meta.items()}

    served = args.dirs + ([args.sound] if args.sound else [])
    server = subprocess.Popen([gulp, "serve", *served, "--port", "0"], stdout=subprocess.PIPE, text=True)
    profile = tempfile.mkdtemp(prefix="gulp-serve-chromium-")
    driver = None
    try:
        line = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        check(found, f"gulp serve said {line!r}")
        url = found.group(0)
        driver = chrome(profile)

        # The overview: its numbers are gulp info's, once the scan is done.
        deadline = time.time() + WAIT
        while True:
            driver.get(url)
            text = driver.find_element(By.CSS_SELECTOR, "section[data-dir='0']").text
            if "reading metas" not in text and "running (after" not in text:
                break
            check(time.time() < deadline, "the overview's scan did not finish")
            time.sleep(0.2)
        dir0 = "section[data-dir='0'] "
        for key in ("items", "frames", "chunks"):
            shown = number(driver, dir0 + f"td[data-k='{key}']")
            check(shown == info[key], f"overview: {key} {shown}, gulp info says {info[key]}")
        if info.get("labels"):
            shown = number(driver, dir0 + "td[data-k='labels']")
            check(shown == info["labels"]["count"], f"overview: {shown} labels, gulp info says {info['labels']['count']}")
        classes = driver.find_elements(By.CSS_SELECTOR, dir0 + "table.classes tr")
        counts = {}
        for row in classes:
            counts[row.find_element(By.TAG_NAME, "th").text] = int(row.find_element(By.CSS_SELECTOR, "td.n").text)
        expected = {}
        for label in labels.values():
            if label is not None:
                expected[str(label)] = expected.get(str(label), 0) + 1
        check(counts == expected, f"overview: classes {counts}, the metas say {expected}")
        check("clean" in driver.find_element(By.CSS_SELECTOR, dir0 + ".check").text, "overview: gulp check is not clean")
        shot = not_blank(driver.get_screenshot_as_png(), "overview")
        if args.shots:
            shot.save(os.path.join(args.shots, "serve-overview.png"))

        # The grid, three items a page: every page, every thumbnail.
        per = 3
        driver.get(f"{url}d/0/items?per={per}")
        check(number(driver, "#total") == info["items"], "grid: total differs from gulp info")
        pages = number(driver, "#pages")
        check(pages == math.ceil(info["items"] / per), f"grid: {pages} pages of {per} for {info['items']} items")
        seen = []
        for page in range(1, pages + 1):
            check(int(driver.find_element(By.ID, "page").text) == page, f"grid: not on page {page}")
            images_loaded(driver, ".grid img")
            seen += [a.get_attribute("data-id") for a in driver.find_elements(By.CSS_SELECTOR, "a.item")]
            nexts = driver.find_elements(By.ID, "next")
            check(bool(nexts) == (page < pages), f"grid: page {page} of {pages} and a next link: {bool(nexts)}")
            if nexts:
                nexts[0].click()
        check(sorted(seen) == sorted(meta), "grid: the pages do not show every item once")

        # Filter by a class through the form: the URL says it, the count is
        # the metas'.
        driver.get(f"{url}d/0/items")
        label = sorted(expected)[0]
        Select(driver.find_element(By.ID, "class")).select_by_value(label)
        driver.find_element(By.ID, "apply").click()
        WebDriverWait(driver, WAIT).until(lambda d: "class=" in d.current_url)
        check(number(driver, "#total") == expected[label], f"grid: class {label!r} count")
        ids = [a.get_attribute("data-id") for a in driver.find_elements(By.CSS_SELECTOR, "a.item")]
        check(all(str(labels[i]) == label for i in ids), f"grid: class filter shows {ids}")
        images_loaded(driver, ".grid img")
        shared = driver.current_url
        driver.get(shared)
        check([a.get_attribute("data-id") for a in driver.find_elements(By.CSS_SELECTOR, "a.item")] == ids, "grid: the URL does not give the same view")

        # An item: open it, play it with the keyboard, pause it.
        first = driver.find_elements(By.CSS_SELECTOR, "a.item")[0]
        item_id = first.get_attribute("data-id")
        first.click()
        WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.TAG_NAME, "h1").text == item_id)
        frames = len(gulp_json(gulp, "dump-meta", first_dir, "--id", item_id)[item_id]["frame_info"])
        player = driver.find_element(By.CSS_SELECTOR, ".player")
        check(int(player.get_attribute("data-frames")) == frames, "item: frame count differs from the meta")
        check(images_loaded(driver, ".strip img") == frames, "item: the film strip does not show every frame")
        check(str(labels[item_id]) in driver.find_element(By.ID, "meta").text, "item: the meta is not shown")
        sizes = driver.find_elements(By.CSS_SELECTOR, "table.sizes tr")
        check(len(sizes) == frames + 1, "item: frame sizes are not listed per frame")
        body = driver.find_element(By.TAG_NAME, "body")
        img = driver.find_element(By.ID, "player")
        body.send_keys(Keys.SPACE)
        WebDriverWait(driver, WAIT).until(lambda d: player.get_attribute("data-playing") == "1")
        WebDriverWait(driver, WAIT).until(lambda d: int(img.get_attribute("data-frame")) >= 3)
        body.send_keys(Keys.SPACE)
        WebDriverWait(driver, WAIT).until(lambda d: player.get_attribute("data-playing") == "0")
        paused = int(img.get_attribute("data-frame"))
        time.sleep(0.5)
        check(int(img.get_attribute("data-frame")) == paused, "item: still playing after the pause")
        body.send_keys(Keys.ARROW_RIGHT)
        check(int(img.get_attribute("data-frame")) == (paused + 1) % frames, "item: the right arrow did not step")
        WebDriverWait(driver, WAIT).until(lambda d: d.execute_script("const i = arguments[0]; return i.complete && i.naturalWidth > 0;", img))
        shot = not_blank(driver.get_screenshot_as_png(), "item page")
        if args.shots:
            shot.save(os.path.join(args.shots, "serve-item.png"))

        # What the model sees: the batch's shape, a crop drawn per frame.
        driver.get(f"{url}d/0/model?frames=4&batch_size=2&size=96&resize=112")
        shape = driver.find_element(By.ID, "shape").text
        check(shape == "[2, 4, 96, 96, 3]", f"model: batch shape {shape}")
        check(len(driver.find_elements(By.CSS_SELECTOR, "span.crop")) == 8, "model: a crop per source frame")
        images_loaded(driver, "img.seen")
        images_loaded(driver, "span.source img")
        shot = not_blank(driver.get_screenshot_as_png(), "model page")
        if args.shots:
            shot.save(os.path.join(args.shots, "serve-model.png"))
        sound = ""
        if args.sound:
            sound = check_sound(driver, url, gulp, args.sound, len(args.dirs), args.sound_fps)
        print(f"serve_browser: {url}: overview, {pages} grid pages, class {label!r} ({expected[label]} items), item {item_id} ({frames} frames) played and paused, a batch of the loader{sound}: all checked")
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"serve_browser: {e}", file=sys.stderr)
        sys.exit(1)
