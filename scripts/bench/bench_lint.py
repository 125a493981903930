#!/usr/bin/env python3
"""gulp lint against CleanVision 0.3.7 and fastdup 2.54 on the same images,
with planted issues; prints, per planted kind, each tool's recall and
precision, and images/s (docs/benchmarks.md, "gulp lint").

    python3 scripts/bench/bench_lint.py [--work DIR] [--gulp PATH]

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

def make_images(out):
    """Writes the clean and planted images to out/images/<kind>/ and the
    truth (file -> kind, source) to out/truth.json."""
    import numpy as np
    import skimage.data
    from PIL import Image, ImageFilter
    from sklearn.datasets import load_sample_images

    photos = []
    for name in ["astronaut", "chelsea", "coffee", "hubble_deep_field",
                 "immunohistochemistry", "retina", "rocket", "camera", "brick", "grass",
                 "gravel", "coins", "clock", "moon"]:
        photos.append((name, getattr(skimage.data, name)()))
    sample = load_sample_images()
    for name, image in zip(sample.filenames, sample.images):
        photos.append((os.path.splitext(os.path.basename(name))[0], image))
    windows = []
    for name, array in photos:
        if array.ndim == 2:
            array = np.stack([array] * 3, axis=-1)
        h, w = array.shape[:2]
        for y in range(0, h - 223, 224):
            for x in range(0, w - 223, 224):
                crop = array[y:y + 224, x:x + 224]
                gray = crop.mean(axis=2)
                # Mostly flat windows (a border) are no clean image.
                if gray.std() < 20 or (gray < 20).mean() > 0.4 or (gray > 235).mean() > 0.4:
                    continue
                windows.append((f"{name}-{y}-{x}", Image.fromarray(crop)))
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
    for k, kind in enumerate(KINDS):
        for j in range(PER_KIND):
            source = names[(k * PER_KIND + j) % len(names)]
            image = dict(windows)[source]
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
                save(kind, planted, image.resize((134, 134), Image.BILINEAR), source=src)
            elif kind == "crop":
                save(kind, planted, image.crop((13, 13, 211, 211)), source=src)
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
                save(kind, planted, Image.new("RGB", (224, 224), colour), source=src)
            elif kind == "tiny":
                save(kind, planted, image.resize((40, 40), Image.BILINEAR), source=src)
            elif kind == "wide":
                save(kind, planted, image.resize((512, 96), Image.BILINEAR), source=src)
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    print(f"{len(truth)} images ({len(windows)} clean)", file=sys.stderr)


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
        return os.path.relpath(p, images) if os.path.isabs(p) else p

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", default=os.path.join(ROOT, "target", "bench-lint"))
    parser.add_argument("--gulp", default=os.path.join(ROOT, "target", "release", "gulp"))
    parser.add_argument("--step", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        result = {"make": make_images, "cleanvision": run_cleanvision,
                  "fastdup": run_fastdup}[args.step](args.work)
        if result is not None:
            print(json.dumps(result))
        return
    os.makedirs(args.work, exist_ok=True)
    me = os.path.abspath(__file__)

    def step(venv, name):
        py = venv_python(args.work, venv)
        done = subprocess.run([py, me, "--work", args.work, "--step", name], check=True,
                              stdout=subprocess.PIPE, text=True)
        return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None

    step("gen", "make")
    with open(os.path.join(args.work, "truth.json")) as f:
        truth = json.load(f)
    n = len(truth)
    results = {
        "gulp": run_gulp(args.work, args.gulp),
        "cleanvision": step("cleanvision", "cleanvision"),
        "fastdup": step("fastdup", "fastdup"),
    }
    table = {tool: scores(r, truth, tool) for tool, r in results.items()}
    print(f"{n} images, {sum(t['kind'] == 'clean' for t in truth.values())} clean, "
          f"{PER_KIND} planted per kind; recall / precision")
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
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump({"results": results, "scores": table}, f, indent=1)


if __name__ == "__main__":
    main()
