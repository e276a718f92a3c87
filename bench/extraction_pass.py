"""The local cost of one extraction pass (spec 04), the model's own time left out.

A pass runs on a background thread of the process that chats; what it costs locally is the
search for related notes over the conversation text (a long query, under the recall lock that
per-message recall also takes), parsing and checking the answer, and the writes. Measured over
notes as files in two scopes, with an instant scripted model answering three new notes and one
update of a shown note; per-message recall and a short ``memory(query)`` are measured in the
same run as the baselines the pass competes with.

    python bench/extraction_pass.py            # 9,600 notes (two scopes of 4,800), 40 passes
    python bench/extraction_pass.py --quick    # 1,000 notes, 8 passes, for CI
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _support import lay_out_corpus
from recall_corpus import synthetic_messages

from oharness.extraction import (
    ExtractionOptions,
    ExtractionRequest,
    Turn,
    parse_answer,
    run_extraction,
)
from oharness.extraction.shown_notes import select_notes
from oharness.memory.attach import recall_for_message
from oharness.memory.workspace import Workspace, open_workspace

_SHOWN = re.compile(r'<note id="([^"]+)"')


class InstantModel:
    """Answers at once: three new notes from the conversation's words, one update."""

    name = "bench:instant"

    def __init__(self) -> None:
        self.count = 0

    def answer(self, request: ExtractionRequest) -> str:
        self.count += 1
        words = request.prompt.split("<conversation>")[1].split()[:60]
        new = [
            {
                "summary": f"Pass {self.count} finding {n}: " + " ".join(words[n * 6 : n * 6 + 6]),
                "body": " ".join(words[n * 10 : n * 10 + 40]) + " See [[new:1]].",
                "tags": words[n : n + 2],
            }
            for n in range(3)
        ]
        shown = _SHOWN.findall(request.prompt)
        updates = [{"id": shown[0], "body": "Rewritten by the benchmark."}] if shown else []
        return "Here it is:\n" + json.dumps({"new": new, "updates": updates})


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return f"{pick(0.5):8.2f} {pick(0.95):8.2f} {len(ordered):6d}"


def _timed(function: object, runs: Sequence[object]) -> list[float]:
    times = []
    for item in runs:
        started = time.perf_counter()
        function(item)  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return times


def _workspace(root: Path, count: int) -> tuple[Workspace, list[str]]:
    laid = lay_out_corpus(root, count, aged=False)
    workspace = open_workspace(laid.project, laid.home, register=False)
    assert workspace.service.recall is not None
    workspace.service.recall.index()
    return workspace, synthetic_messages(laid.corpus, 400)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, 8 passes")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the answers' duplicate drops are logged, not news here
    # below 5,000 a scope, so the passes' new notes stay within memory.maxNotes
    count, passes = (1_000, 8) if args.quick else (9_600, 40)
    with tempfile.TemporaryDirectory() as scratch:
        workspace, messages = _workspace(Path(scratch), count)
        recall = workspace.service.recall
        assert recall is not None
        stretches = [
            [
                Turn(n + 1, "user" if n % 2 == 0 else "assistant", text)
                for n, text in enumerate(messages[(p * 8) % 360 : (p * 8) % 360 + 8])
            ]
            for p in range(passes)
        ]
        texts = ["\n\n".join(turn.text for turn in stretch) for stretch in stretches]
        model = InstantModel()
        options = ExtractionOptions()
        sample = model.answer(
            ExtractionRequest("", f"<conversation>{texts[0]}", options.max_tokens, 1.0)
        )
        print(f"{count:,} notes as files, two scopes; stretches of 8 messages")
        print("(ms)                                            p50      p95      n")
        per_message = _timed(lambda m: recall_for_message(recall, m, record=False), messages[:200])
        print(f"baseline: per-message recall               {_percentiles(per_message)}")
        short = _timed(lambda m: recall.search(m, 10), messages[:200])
        print(f"baseline: memory(query), short query       {_percentiles(short)}")
        remember = _timed(
            lambda n: workspace.service.remember(f"Baseline note {n}", f"Body {n}."),
            range(passes),
        )
        print(f"baseline: one remember (a new note)        {_percentiles(remember)}")
        select = lambda text: select_notes(  # noqa: E731
            workspace.service, text, full_notes=5, full_chars=12_000, listed_notes=20
        )
        print(f"pass: related notes for the stretch        {_percentiles(_timed(select, texts))}")
        parse = lambda _: parse_answer(  # noqa: E731
            sample, max_body_bytes=131_072, max_new=10, max_updates=5
        )
        print(f"pass: parse and check the answer           {_percentiles(_timed(parse, texts))}")
        whole = lambda stretch: run_extraction(stretch, workspace.service, model, options)  # noqa: E731
        print(
            f"pass: whole (search, prompt, write 3+1)    {_percentiles(_timed(whole, stretches))}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
