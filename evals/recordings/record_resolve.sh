#!/usr/bin/env bash
# Record `claire resolve` by a real model: check, then resolve, on the five planted facts of
# tests/fixtures/wikicollide_mini.json (each with its article and section), then the resolve stage on
# the planted flag cases of evals/data/sides_cases.jsonl, into one cassette.
#   bash evals/recordings/record_resolve.sh BASE_URL [MODEL] [OUT_DIR]
set -euo pipefail
BASE_URL="${1:?give the base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8765/v1}"
MODEL="${2:-qwen2.5-coder-1.5b}"
OUT="${3:-out/real-model-resolve}"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT"
python - "$HERE/../../tests/fixtures/wikicollide_mini.json" <<'PY' > "$OUT/facts.tsv"
import json, sys
for record in json.load(open(sys.argv[1], encoding="utf-8"))[:5]:
    claim = record["claim"]
    block = claim["claim_context_block"]
    print("\t".join([claim["claim_id"], claim["claim_text"], block["document_title"], block["section_title"]]))
PY
while IFS=$'\t' read -r id fact title section; do
  echo "resolving $id: $fact" >&2
  OPENAI_API_KEY="${OPENAI_API_KEY:-local}" claire resolve "$fact" --title "$title" --section "$section" \
    --config "$HERE/real_model_resolve.toml" --base-url "$BASE_URL" --model "$MODEL" --json \
    --set "llm.record=$OUT/cassette.jsonl" > "$OUT/$id.json" || true
done < "$OUT/facts.tsv"
# Then the resolve stage alone, on the seven planted contradictions given as flagged checks (the
# research's answer, its passages and analysis; the conflict and the two values are not given).
OPENAI_API_KEY="${OPENAI_API_KEY:-local}" claire resolve --cases evals/data/sides_cases.jsonl \
  --id flag-planted-1,flag-planted-2,flag-planted-3,flag-planted-4,flag-planted-5,flag-planted-6,flag-planted-7 \
  --config "$HERE/real_model_resolve.toml" --base-url "$BASE_URL" --model "$MODEL" --json \
  --set "llm.record=$OUT/cassette.jsonl" > "$OUT/flag-cases.json" || true
# What the replay test compares with: each fact's verdict and decision, each case's decision.
python - "$OUT" "$MODEL" "$HERE/../../tests/fixtures/cassettes/$MODEL-resolve" <<'PY'
import gzip, json, shutil, sys
from pathlib import Path
out, model, stem = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
facts = {}
for line in (out / "facts.tsv").read_text(encoding="utf-8").splitlines():
    fact_id = line.split("\t")[0]
    text = (out / f"{fact_id}.json").read_text(encoding="utf-8").strip()
    answer = json.loads(text) if text else {}
    if "decision" in answer:  # flagged: the resolution alone was printed
        facts[fact_id] = {"verdict": "inconsistent", "decision": answer["decision"]}
    else:  # consistent (its assessment), or no verdict at all (nothing printed)
        assessment = answer.get("assessment") or {}
        facts[fact_id] = {"verdict": assessment.get("verdict"), "decision": None}
cases_text = (out / "flag-cases.json").read_text(encoding="utf-8").strip() if (out / "flag-cases.json").exists() else ""
cases = json.loads(cases_text) if cases_text else []
cases = cases if isinstance(cases, list) else cases.get("resolutions", [cases])
expected = {"model": model, "facts": facts,
            "cases": {c["claim_id"]: {"decision": c.get("decision"), "values_from": c.get("values_from"),
                                      "error": c.get("error")} for c in cases}}
Path(stem + ".expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
with open(out / "cassette.jsonl", "rb") as source, gzip.open(stem + ".jsonl.gz", "wb") as target:
    shutil.copyfileobj(source, target)
print(json.dumps(expected, indent=2))
PY
