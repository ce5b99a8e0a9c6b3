"""The bundled problems' expected outputs, computed for the app image (`scripts/images` runs
this with the judge's own environment, whose library versions the images install).

    python deploy/trusted_outputs.py OUT

OUT/expected then holds them as judge/trusted/expected.py stores them (keyed by content: the
reference, the generator, the test, the library versions, the judge's trusted code), with
the outputs of the packages' known mistakes (judge/trusted/known_mistakes.py `bank`), and
nothing else: what no bundled problem needs any more is removed. OUT is kept between builds,
so only what changed is computed again. The image copies them into the workers' shared cache
folder; a new volume starts with them, so no worker computes them before its first verdict.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(out: Path) -> None:
    # This checkout's judge, here and in the trusted processes it starts.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    sys.path.insert(0, str(REPO))
    from judge.cache_links import link_outputs
    from judge.trusted.expected import cache_dir

    # The set-up (`./dev setup`: `problems prepare --all`) computed the same outputs into
    # the developer's cache: taken from there, a fresh clone's first build computes none.
    seeded = link_outputs(cache_dir(), out / "expected")
    os.environ["TENSORJUDGE_CACHE_DIR"] = str(out)  # read by judge.trusted.expected
    from judge.package import discover, load_package
    from judge.trusted.expected import expected_outputs, test_key
    from judge.trusted.known_mistakes import bank

    t0 = time.monotonic()
    keep: set[str] = set()
    for path in discover(REPO / "problems"):
        package = load_package(path)
        expected_outputs(package, package.tests)
        keep |= {test_key(package, t) for t in package.tests}
        # The known mistakes' outputs too: a deployment's first wrong answer is named
        # without computing them on its way to a verdict.
        bank(package, package.tests)
        sources = {f.name: f.read_text(encoding="utf-8") for f in package.wrong_answer_files()}
        keep |= {test_key(package, t, source=sources[name])
                 for name in package.mistakes for t in package.tests}
    folder = cache_dir()
    shutil.rmtree(folder / "locks", ignore_errors=True)
    for f in folder.iterdir():
        if f.is_file() and f.name.split(".", 1)[0] not in keep:
            f.unlink()
    print(f"[images] trusted outputs of the bundled problems ready in "
          f"{time.monotonic() - t0:.0f} s ({len(keep)} outputs; {seeded} files taken from "
          "the set-up's cache)", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
