"""``claire bench languages``: the multilingual demo index on this machine's CPU — how fast it is
built (blocks a second) and searched (query latency), and how well a passage of one edition finds
its counterpart in another (cross-lingual recall@k of the aligned passages of
``indexes/data/demo_alignment.jsonl``), with the multilingual embedder beside the English one
(MiniLM) as the baseline measured in the same run."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from claire.files import read_jsonl
from claire.indexes.corpus import demo_corpus_path, demo_editions_path, linked_both_ways, read_corpus
from claire.indexes.retriever import build_index, open_retriever
from claire.languages import edition_of

ALIGNMENT = Path(__file__).resolve().parents[1] / "indexes" / "data" / "demo_alignment.jsonl"
"""Each French or German demo block and the English block(s) that tell the same thing."""


def alignment() -> dict[str, list[str]]:
    """The aligned English blocks of each other-edition block."""
    return {line.value["block"]: list(line.value["aligned"]) for line in read_jsonl(ALIGNMENT, what="alignment",
                                                                                     hint="block, aligned")
            if line.problem is None}


def measure(embedder: str, ks: tuple[int, ...] = (1, 5, 10)) -> dict[str, Any]:
    """Build the multilingual demo with ``embedder`` in a temporary folder; its build rate, query
    latency and the recall@k of each aligned passage (a foreign block's text as the query, English
    blocks only)."""
    blocks = linked_both_ways([b for path in (demo_corpus_path(), demo_editions_path())
                               for b in read_corpus(path).blocks], "en")
    by_id = {b.id: b for b in blocks}
    aligned = alignment()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        summary = build_index(blocks, name="bench-languages", embedder=embedder, root=root, show_progress=False)
        with open_retriever("bench-languages", root=root, query_runtime="torch") as retriever:
            found = {k: 0 for k in ks}
            latencies = []
            for block_id, targets in aligned.items():
                started = time.perf_counter()
                hits = retriever.search(by_id[block_id].content, k=max(ks) * 4, mode="dense")
                latencies.append(time.perf_counter() - started)
                english = [h.block.id for h in hits if edition_of(h.block, "en") == "en"]
                for k in ks:
                    found[k] += any(target in english[:k] for target in targets)
    return {"embedder": embedder, "blocks": summary.blocks, "blocks_per_s": summary.blocks_per_s,
            "query_ms_p50": round(1000 * statistics.median(latencies), 1),
            "recall": {k: round(found[k] / len(aligned), 3) for k in ks}, "queries": len(aligned)}


def run_languages_bench(*, console: Console, embedders: tuple[str, ...] = ("e5-small", "minilm")) -> list[dict[str, Any]]:
    """Measure each embedder and print the table (the first is the multilingual default)."""
    results = [measure(name) for name in embedders]
    table = Table(title="the multilingual demo (English + French + German), on this machine's CPU", title_justify="left")
    for column in ("embedder", "blocks", "blocks/s (build)", "query p50 ms", "recall@1", "recall@5", "recall@10"):
        table.add_column(column, justify="left" if column == "embedder" else "right")
    for r in results:
        table.add_row(r["embedder"], str(r["blocks"]), f"{r['blocks_per_s']:.1f}", f"{r['query_ms_p50']:.1f}",
                      *(f"{r['recall'][k]:.2f}" for k in (1, 5, 10)))
    console.print(table)
    console.print(f"recall@k: of {results[0]['queries']} French and German passages, the share whose aligned English "
                  "passage is among the k nearest English ones (the passage's own text as the query)")
    return results


# -- the infobox alignment --------------------------------------------------------------------------
def infosync_tables(path: Path) -> list[tuple[str, str]]:
    """The (field, value) rows of one of InfoSync's ``table.html`` files (a value's parts, which
    the set separates with ``|``, joined with commas)."""
    from lxml import html as lxml_html

    rows = []
    for row in lxml_html.fromstring(path.read_text(encoding="utf-8")).iter("tr"):
        head, cell = row.find("th"), row.find("td")
        if head is None or cell is None:
            continue
        name = " ".join(head.text_content().split())
        value = ", ".join(p.strip() for p in cell.text_content().split("|") if p.strip())
        if name and value:
            rows.append((name, value))
    return rows


def measure_infobox_alignment(folder: Path, encode: Any) -> dict[str, Any]:
    """The infobox pass's field alignment (:func:`claire.resolving.infoboxes.align_fields`) against
    InfoSync's English-to-X test set in its published layout: ``Final_Test_Set_Eng_X.json`` (category
    → entity → language → gold [English field, other field] pairs) and
    ``Final_Test_Set_Eng_X/CATEGORY/ENTITY/LANG/table.html``. Micro precision, recall and F1 over
    the aligned pairs; pairs whose tables are missing are skipped and counted."""
    import json

    from claire.resolving.infoboxes import align_fields

    gold_file = folder / "Final_Test_Set_Eng_X.json"
    gold = json.loads(gold_file.read_text(encoding="utf-8"))
    tables = folder / "Final_Test_Set_Eng_X"
    found = predicted = correct = pairs = skipped = 0
    for category, entities in gold.items():
        for entity, languages in entities.items():
            english_file = tables / category / entity / "en" / "table.html"
            for language, aligned in languages.items():
                other_file = tables / category / entity / language / "table.html"
                if not english_file.is_file() or not other_file.is_file():
                    skipped += 1
                    continue
                english, other = infosync_tables(english_file), infosync_tables(other_file)
                wanted = {(a.strip(), b.strip()) for a, b in aligned}
                got = {(english[i][0], other[j][0]) for i, j, _ in align_fields(english, "en", other, language, encode)}
                pairs += 1
                found += len(wanted)
                predicted += len(got)
                correct += len(wanted & got)
    precision = correct / predicted if predicted else 0.0
    recall = correct / found if found else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"table_pairs": pairs, "skipped": skipped, "gold": found, "predicted": predicted, "correct": correct,
            "precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3)}


def run_infobox_bench(folder: Path, *, console: Console) -> dict[str, Any]:
    """Measure the alignment on an InfoSync folder and print it beside InfoSync's own figure."""
    from claire.indexes.embedders import MULTILINGUAL, load_embedder

    result = measure_infobox_alignment(Path(folder), load_embedder(MULTILINGUAL).encode_queries)
    console.print(f"infobox alignment on {result['table_pairs']} English-to-X table pairs of InfoSync's test set "
                  f"({result['skipped']} without both tables skipped): precision {result['precision']:.3f}, "
                  f"recall {result['recall']:.3f}, F1 {result['f1']:.3f} ({result['correct']} of {result['gold']} "
                  f"gold alignments, {result['predicted']} predicted); InfoSync reports F1 0.879 on the whole set")
    return result
