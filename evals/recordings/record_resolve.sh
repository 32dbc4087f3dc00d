#!/usr/bin/env bash
# Record `claire resolve` (check, then resolve) by a real model on the five planted facts of
# tests/fixtures/wikicollide_mini.json, each with its article and section, into one cassette.
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
