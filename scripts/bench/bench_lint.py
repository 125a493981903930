#!/usr/bin/env python3
"""gulp lint against CleanVision 0.3.7 and fastdup 2.54 on the same images,
with planted issues; prints, per planted kind, each tool's recall and
precision, and images/s (docs/benchmarks.md, "gulp lint").

    python3 scripts/bench/bench_lint.py [--work DIR] [--gulp PATH] [--clean N [--photos DIR]]

The photographs are the real ones that scikit-image (skimage.data:
astronaut, chelsea, coffee, hubble_deep_field, immunohistochemistry,
retina, rocket, camera, brick, grass, gravel, coins, clock, moon) and
scikit-learn (china.jpg, flower.jpg) ship in their packages: nothing is
downloaded at run time. Each is cut into non-overlapping 224x224 windows at
its own resolution (no upscaling); windows that are mostly flat (retina's
black border) are left out. Those are the clean images, JPEG quality 90.
Planted, each from its own clean image: exact copies, re-encoded copies
(quality 40), resized copies (0.6x), crops (6 % off each side), darkened
(x0.15), brightened (towards white, x0.15), blurred (Gaussian, radius 4),
blank (one colour: the picture's mean, at a middle luma), tiny (40x40) and very wide (512x96) images.

With --clean N the clean images are N windows at ImageNet-like size
instead (short side 256, as ImageNet is usually resized: 340x256,
256x340 and 256x256 in turn), cut from the same photographs plus
scikit-image's motorcycle_left, each photograph taken at four scales (1,
0.7, 0.49, 0.343: no upscaling), on a grid whose step is the largest of
1/2, 1/3 or 1/4 of the window that gives N windows (neighbours then
overlap by at most 3/4 of a side), but never less than 1/2 on retina,
whose smooth fundus windows 1/4 apart hash alike (they would be true near
duplicates); the N are spread evenly over the grid's windows. These
photographs give at most about 210 such windows; --photos DIR adds the
JPEG photographs of DIR, each first brought to a short side of 1024 (a
256-pixel window is then a quarter of the scene, not a detail), e.g. the
twelve of Debian's mate-backgrounds (GPL-2+) in
usr/share/backgrounds/mate/nature/, which scripts/bench/bench-corpus.sh
also uses (`apt-get download mate-backgrounds`, then `dpkg-deb -x`).
Planted: max(6, N / 40) per kind, tiny and wide as above, blank at the
source's size.

Each tool runs in a venv of its own under WORK/venvs (created on first
use: pip installs cleanvision==0.3.7, fastdup==2.54, and scikit-image +
scikit-learn + Pillow for the images). gulp is the release binary
(`cargo build --release -p gulp-cli`, or --gulp): `gulp ingest
image-folder` (stores the JPEGs as they are), then `gulp lint --json`,
timed alone. CleanVision: `Imagelab(data_path).find_issues()` with its
defaults. fastdup: `fastdup.create(...).run()` with its defaults, then its
own definitions: duplicates are pairs of similarity >= 0.9 (its
`connected_components` default), dark `mean < 13`, bright `mean > 220.5`,
blurry `blur < 50` (its gallery defaults), invalid images as blank.
It also prints how many images each tool flagged blurry that were not
planted blurred, and shows gulp's in WORK/unplanted-blurry.png: a window of
a photograph's out-of-focus background is a blurry image that the truth
calls clean, which only the eye can tell from a wrong flag.
Not run in CI.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["exact", "reencoded", "resized", "crop", "dark", "light", "blurred", "blank", "tiny",
         "wide"]
DUPLICATE_KINDS = {"exact", "reencoded", "resized", "crop"}
PER_KIND = 6
# --clean N: the window shapes (one per scale, in turn), the scales of the
# photographs, the grid steps tried (fractions of the window).
SHAPES = [(340, 256), (256, 340), (256, 256)]
SCALES = [1.0, 0.7, 0.49, 0.343]
STEPS = [1 / 2, 1 / 3, 1 / 4]
LEAST_STEP = {"retina": 1 / 2}
VENVS = {
    "gen": ["scikit-image", "scikit-learn", "pillow", "numpy"],
    "cleanvision": ["cleanvision==0.3.7"],
    "fastdup": ["fastdup==2.54"],
}


def venv_python(work, name):
    """The python of venv `name` under WORK/venvs, made on first use."""
    path = os.path.join(work, "venvs", name)
    py = os.path.join(path, "bin", "python")
    marker = os.path.join(path, ".installed")
    if not os.path.exists(marker):
        subprocess.run([sys.executable, "-m", "venv", path], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *VENVS[name]], check=True)
        open(marker, "w").close()
    return py


# --- inside the "gen" venv -------------------------------------------------

def flat(array):
    """Whether a window is mostly flat (a border): no clean image."""
    gray = array.mean(axis=2)
    return gray.std() < 20 or (gray < 20).mean() > 0.4 or (gray > 235).mean() > 0.4


def grid_windows(photos, shape_at, scales, step):
    """(name, PIL image) of every window of the grid: at each scale of each
    photograph, windows of shape_at(level), `step` of a window apart."""
    import numpy as np
    from PIL import Image

    windows = []
    for name, array in photos:
        image = Image.fromarray(array)
        photo_step = max(step, LEAST_STEP.get(name, 0)) if len(scales) > 1 else step
        for level, scale in enumerate(scales):
            ww, wh = shape_at(level)
            scaled = image if scale == 1 else image.resize(
                (round(image.width * scale), round(image.height * scale)), Image.LANCZOS)
            pixels = np.asarray(scaled)
            h, w = pixels.shape[:2]
            for y in range(0, h - wh + 1, max(1, int(wh * photo_step))):
                for x in range(0, w - ww + 1, max(1, int(ww * photo_step))):
                    crop = pixels[y:y + wh, x:x + ww]
                    if not flat(crop):
                        windows.append((f"{name}-s{level}-{y}-{x}", Image.fromarray(crop)))
    return windows


def make_images(out, clean_count=None, photo_dir=None):
    """Writes the clean and planted images to out/images/<kind>/ and the
    truth (file -> kind, source) to out/truth.json."""
    import numpy as np
    import skimage.data
    from PIL import Image, ImageFilter
    from sklearn.datasets import load_sample_images

    names = ["astronaut", "chelsea", "coffee", "hubble_deep_field", "immunohistochemistry",
             "retina", "rocket", "camera", "brick", "grass", "gravel", "coins", "clock", "moon"]
    photos = [(name, getattr(skimage.data, name)()) for name in names]
    if clean_count:
        # The left view only: the right one is nearly the same picture.
        photos.append(("motorcycle_left", skimage.data.stereo_motorcycle()[0]))
    sample = load_sample_images()
    for name, image in zip(sample.filenames, sample.images):
        photos.append((os.path.splitext(os.path.basename(name))[0], image))
    for file in sorted(os.listdir(photo_dir)) if photo_dir else []:
        if file.lower().endswith((".jpg", ".jpeg")):
            image = Image.open(os.path.join(photo_dir, file)).convert("RGB")
            scale = 1024 / min(image.size)
            image = image.resize((round(image.width * scale), round(image.height * scale)),
                                 Image.LANCZOS)
            photos.append((os.path.splitext(file)[0], np.asarray(image)))
    photos = [(n, a if a.ndim == 3 else np.stack([a] * 3, axis=-1)) for n, a in photos]
    per_kind = PER_KIND
    if clean_count:
        per_kind = max(PER_KIND, clean_count // 40)
        for step in STEPS:
            windows = grid_windows(photos, lambda level: SHAPES[level % len(SHAPES)],
                                   SCALES, step)
            if len(windows) >= clean_count:
                break
        if len(windows) < clean_count:
            sys.exit(f"--clean {clean_count}: the photographs give {len(windows)} windows")
        # N spread evenly over the grid's windows.
        windows = [windows[i * len(windows) // clean_count] for i in range(clean_count)]
        print(f"grid step {step:.2f} of a window", file=sys.stderr)
    else:
        windows = grid_windows(photos, lambda level: (224, 224), [1.0], 1.0)
    images = os.path.join(out, "images")
    shutil.rmtree(images, ignore_errors=True)
    truth = {}

    def save(kind, name, image, quality=90, source=None):
        folder = os.path.join(images, kind)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name + ".jpg")
        image.save(path, quality=quality)
        truth[f"{kind}/{name}.jpg"] = {"kind": kind, "source": source}
        return path

    clean = {}
    for name, image in windows:
        clean[name] = save("clean", name, image)
    names = [n for n, _ in windows]
    by_name = dict(windows)
    for k, kind in enumerate(KINDS):
        for j in range(per_kind):
            # Sources spread over the clean images (every photograph).
            source = names[((k * per_kind + j) * 7919) % len(names)] if clean_count else \
                names[(k * PER_KIND + j) % len(names)]
            image = by_name[source]
            w, h = image.size
            src = f"clean/{source}.jpg"
            planted = f"{kind}-{source}"
            if kind == "exact":
                folder = os.path.join(images, kind)
                os.makedirs(folder, exist_ok=True)
                shutil.copyfile(clean[source], os.path.join(folder, planted + ".jpg"))
                truth[f"{kind}/{planted}.jpg"] = {"kind": kind, "source": src}
            elif kind == "reencoded":
                save(kind, planted, image, quality=40, source=src)
            elif kind == "resized":
                save(kind, planted, image.resize((w * 3 // 5, h * 3 // 5), Image.BILINEAR),
                     source=src)
            elif kind == "crop":
                # 6 % off each side (13 pixels of 224).
                dx, dy = w * 13 // 224, h * 13 // 224
                save(kind, planted, image.crop((dx, dy, w - dx, h - dy)), source=src)
            elif kind == "dark":
                save(kind, planted, image.point(lambda v: int(v * 0.15)), source=src)
            elif kind == "light":
                save(kind, planted, image.point(lambda v: 255 - int((255 - v) * 0.15)),
                     source=src)
            elif kind == "blurred":
                save(kind, planted, image.filter(ImageFilter.GaussianBlur(4)), source=src)
            elif kind == "blank":
                # The picture's mean colour, brought to a middle luma (a
                # dark or light blank would also be a right dark or light).
                mean = np.asarray(image).reshape(-1, 3).mean(axis=0)
                luma = max(mean @ [0.299, 0.587, 0.114], 1.0)
                scale = min(max(luma, 80.0), 170.0) / luma
                colour = tuple(int(min(c * scale, 255)) for c in mean)
                save(kind, planted, Image.new("RGB", (w, h), colour), source=src)
            elif kind == "tiny":
                save(kind, planted, image.resize((40, 40), Image.BILINEAR), source=src)
            elif kind == "wide":
                save(kind, planted, image.resize((512, 96), Image.BILINEAR), source=src)
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    print(f"{len(truth)} images ({len(windows)} clean, {per_kind} planted per kind)",
          file=sys.stderr)


def contact_sheet(out):
    """out/unplanted-blurry.png: the images listed in
    out/unplanted-blurry.txt (paths under out/images), 6 a row, each 200
    pixels at most and under its name."""
    from PIL import Image, ImageDraw

    with open(os.path.join(out, "unplanted-blurry.txt")) as f:
        names = f.read().split()
    side, cols = 200, 6
    rows = max(1, (len(names) + cols - 1) // cols)
    sheet = Image.new("RGB", (cols * side, rows * (side + 14)), "white")
    draw = ImageDraw.Draw(sheet)
    for k, name in enumerate(names):
        image = Image.open(os.path.join(out, "images", name)).convert("RGB")
        image.thumbnail((side, side))
        x, y = (k % cols) * side, (k // cols) * (side + 14)
        sheet.paste(image, (x, y + 14))
        draw.text((x + 2, y), name[:34], fill="black")
    sheet.save(os.path.join(out, "unplanted-blurry.png"))


# --- inside the "cleanvision" venv ------------------------------------------

def run_cleanvision(out):
    """CleanVision with its defaults: flagged files per issue type."""
    from cleanvision import Imagelab

    images = os.path.join(out, "images")
    start = time.perf_counter()
    lab = Imagelab(data_path=images)
    lab.find_issues(verbose=False)
    seconds = time.perf_counter() - start
    flagged = {}
    for column in lab.issues.columns:
        if column.startswith("is_") and column.endswith("_issue"):
            issue = column[3:-6]
            rows = lab.issues.index[lab.issues[column]]
            flagged[issue] = [os.path.relpath(p, images) for p in rows]
    groups = []
    for key in ("exact_duplicates", "near_duplicates"):
        for group in lab.info.get(key, {}).get("sets", []):
            groups.append([os.path.relpath(p, images) for p in group])
    return {"seconds": seconds, "flagged": flagged, "groups": groups}


# --- inside the "fastdup" venv ----------------------------------------------

def run_fastdup(out):
    """fastdup with its defaults and its own thresholds (see the docstring)."""
    os.environ.setdefault("SENTRY_OPT_OUT", "1")
    import fastdup

    images = os.path.join(out, "images")
    work = os.path.join(out, "fastdup-work")
    shutil.rmtree(work, ignore_errors=True)
    start = time.perf_counter()
    fd = fastdup.create(work_dir=work, input_dir=images)
    fd.run(overwrite=True, verbose=False)
    components, _ = fd.connected_components()
    stats = fd.img_stats()
    invalid = fd.invalid_instances()
    seconds = time.perf_counter() - start

    def rel(p):
        # fastdup gives paths as absolute or relative to the working
        # directory: relpath takes either.
        return os.path.relpath(p, images)

    groups = []
    if components is not None and len(components):
        for _, g in components.groupby("component_id"):
            if len(g) > 1:
                groups.append([rel(p) for p in g["filename"]])
    flagged = {"dark": [], "bright": [], "blur": [], "invalid": []}
    for _, row in stats.iterrows():
        name = rel(row["filename"])
        if row["mean"] < 13:
            flagged["dark"].append(name)
        if row["mean"] > 220.5:
            flagged["bright"].append(name)
        if row["blur"] < 50:
            flagged["blur"].append(name)
    if invalid is not None and len(invalid):
        flagged["invalid"] = [rel(p) for p in invalid["filename"]]
    return {"seconds": seconds, "flagged": flagged, "groups": groups}


# --- gulp, and the scores ---------------------------------------------------

def run_gulp(out, binary):
    """gulp ingest (timed apart), then gulp lint --json (timed)."""
    data = os.path.join(out, "gulp")
    shutil.rmtree(data, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([binary, "ingest", "image-folder", os.path.join(out, "images"), data, "-q"],
                   check=True)
    ingest = time.perf_counter() - start
    report_path = os.path.join(out, "gulp-lint.json")
    start = time.perf_counter()
    subprocess.run([binary, "lint", data, "--json", report_path, "-q"], check=False)
    seconds = time.perf_counter() - start
    with open(report_path) as f:
        report = json.load(f)

    def name(item_id):
        # image-folder ids are <label>-<file name>; the label is the folder.
        kind, _, file = item_id.partition("-")
        return f"{kind}/{file}"

    flagged, groups = {}, []
    for finding in report["findings"]:
        names = [name(i["id"]) for i in finding["items"]]
        flagged.setdefault(finding["check"], []).extend(names)
        if finding["check"] in ("exact_duplicate", "near_duplicate"):
            groups.append(names)
    return {"seconds": seconds, "ingest_seconds": ingest, "flagged": flagged, "groups": groups}


# Which of each tool's issue types answer a planted kind.
CHECKS = {
    "gulp": {"dark": ["dark"], "light": ["light"], "blurred": ["blurry"], "blank": ["blank"],
             "tiny": ["odd_size"], "wide": ["odd_aspect"]},
    "cleanvision": {"dark": ["dark"], "light": ["light"], "blurred": ["blurry"],
                    "blank": ["low_information"], "tiny": ["odd_size"],
                    "wide": ["odd_aspect_ratio"]},
    "fastdup": {"dark": ["dark"], "light": ["bright"], "blurred": ["blur"],
                "blank": ["invalid"]},
}


def scores(result, truth, tool):
    """Per kind: (recall, precision) of the tool, or None where it has no
    check for that kind."""
    def base(name):
        t = truth[name]
        return t["source"] or name

    out = {}
    # Duplicates: a planted copy is found when a group holds it and its
    # source; a grouped image is right when another member of its group
    # comes from the same clean image.
    together = set()
    grouped, right = set(), set()
    for group in result["groups"]:
        for a in group:
            grouped.add(a)
            for b in group:
                if a != b and base(a) == base(b):
                    together.add((a, b))
                    right.add(a)
    precision = len(right) / len(grouped) if grouped else 1.0
    for kind in DUPLICATE_KINDS:
        planted = [n for n, t in truth.items() if t["kind"] == kind]
        found = sum((n, truth[n]["source"]) in together for n in planted)
        out[kind] = (found / len(planted), precision)
    for kind, issues in CHECKS[tool].items():
        planted = {n for n, t in truth.items() if t["kind"] == kind}
        flagged = set()
        for issue in issues:
            flagged |= set(result["flagged"].get(issue, []))
        found = len(planted & flagged)
        out[kind] = (found / len(planted), found / len(flagged) if flagged else 1.0)
    return out


def unplanted_blurry(result, truth, tool):
    """The images `tool` flagged blurry that were not planted blurred."""
    flagged = set()
    for issue in CHECKS[tool]["blurred"]:
        flagged |= set(result["flagged"].get(issue, []))
    return sorted(n for n in flagged if n in truth and truth[n]["kind"] != "blurred")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "bench-lint"))
    parser.add_argument("--gulp", default=os.path.join(ROOT, "target", "release", "gulp"))
    parser.add_argument("--clean", type=int, metavar="N",
                        help="N clean images at ImageNet-like size (see above) instead of "
                             "the 224x224 windows")
    parser.add_argument("--photos", metavar="DIR",
                        help="with --clean: JPEG photographs to cut windows from too")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        if args.step == "make":
            make_images(args.work, args.clean, args.photos)
            return
        if args.step == "sheet":
            contact_sheet(args.work)
            return
        result = {"cleanvision": run_cleanvision, "fastdup": run_fastdup}[args.step](args.work)
        if result is not None:
            print(json.dumps(result))
        return
    os.makedirs(args.work, exist_ok=True)
    me = os.path.abspath(__file__)

    def step(venv, name):
        py = venv_python(args.work, venv)
        clean = ["--clean", str(args.clean)] if args.clean else []
        if args.photos:
            clean += ["--photos", os.path.abspath(args.photos)]
        done = subprocess.run([py, me, "--work", args.work, "--step", name, *clean], check=True,
                              stdout=subprocess.PIPE, text=True)
        return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None

    step("gen", "make")
    with open(os.path.join(args.work, "truth.json")) as f:
        truth = json.load(f)
    n = len(truth)
    per_kind = sum(t["kind"] == "exact" for t in truth.values())
    results = {
        "gulp": run_gulp(args.work, args.gulp),
        "cleanvision": step("cleanvision", "cleanvision"),
        "fastdup": step("fastdup", "fastdup"),
    }
    table = {tool: scores(r, truth, tool) for tool, r in results.items()}
    print(f"{n} images, {sum(t['kind'] == 'clean' for t in truth.values())} clean, "
          f"{per_kind} planted per kind; recall / precision")
    print(f"{'kind':<10}" + "".join(f"{tool:>16}" for tool in results))
    for kind in KINDS:
        cells = []
        for tool in results:
            r = table[tool].get(kind)
            cells.append(f"{'-':>16}" if r is None else f"{r[0]:>9.2f} / {r[1]:.2f}")
        print(f"{kind:<10}" + "".join(cells))
    print(f"{'images/s':<10}" + "".join(f"{n / r['seconds']:>16.0f}" for r in results.values()))
    print(f"(gulp ingest of the same images: {results['gulp']['ingest_seconds']:.2f} s; "
          f"lint {results['gulp']['seconds']:.2f} s, CleanVision "
          f"{results['cleanvision']['seconds']:.2f} s, fastdup {results['fastdup']['seconds']:.2f} s)")
    # Flagged blurry but not planted so: photographs have out-of-focus
    # areas, and a window of one is a blurry image the truth calls clean.
    # The sheet shows gulp's, to be judged by eye.
    print("flagged blurry, not planted blurred: " + ", ".join(
        f"{tool} {len(unplanted_blurry(r, truth, tool))}" for tool, r in results.items()))
    names = unplanted_blurry(results["gulp"], truth, "gulp")
    with open(os.path.join(args.work, "unplanted-blurry.txt"), "w") as f:
        f.write("".join(name + "\n" for name in names))
    step("gen", "sheet")
    print(f"gulp's: {os.path.join(args.work, 'unplanted-blurry.png')}")
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump({"results": results, "scores": table}, f, indent=1)


if __name__ == "__main__":
    main()
