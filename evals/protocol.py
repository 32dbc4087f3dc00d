"""What keeps a benchmark run's protocol from misleading: the claims evaluated against the index
built for them, and the paper's way of choosing a test threshold.

- An index built with ``claire index build --from-wikicollide FILE`` records the file and its claims
  (:class:`~claire.indexes.index_meta.IndexMeta` ``claims_of``, ``claim_ids``). Evaluating other
  claims on it searches them among another split's passages, not their own: ``claire eval`` warns,
  and refuses with ``--strict`` (:func:`foreign_claims`).
- The paper decides its test verdicts at the threshold with the best F1 on validation. A test run
  of the paper preset with neither ``--threshold``, ``--threshold-from`` nor ``--validation`` says
  that 0.5 is not that protocol (:func:`threshold_note`).
"""

from __future__ import annotations

from collections.abc import Sequence

from claire.indexes.index_meta import IndexMeta


def foreign_claims(meta: IndexMeta | None, claim_ids: Sequence[str], dataset: str) -> str | None:
    """Why evaluating ``claim_ids`` (of the file ``dataset``) on the index ``meta`` describes would
    mislead, or None: the index holds the passages of other claims (an index that records no claims,
    built from a dump or a corpus, is never at fault)."""
    if meta is None or not meta.claim_ids or not claim_ids:
        return None
    own = set(meta.claim_ids)
    foreign = [claim for claim in claim_ids if claim not in own]
    if not foreign:
        return None
    share = "none" if len(foreign) == len(claim_ids) else f"{len(claim_ids) - len(foreign)}"
    return (f"index {meta.name} holds the passages of the claims of {meta.claims_of or 'another file'}, and {share} of "
            f"the {len(claim_ids)} claims of {dataset} are among them: the others would be searched among passages "
            f"gathered for other claims (build an index of their own: claire index build --from-wikicollide "
            f"{dataset} --name NAME)")


def threshold_note(*, preset: str, split: str | None, threshold_chosen: bool) -> str | None:
    """What to say when a test run of the paper preset decides at the default 0.5, which is not the
    paper's protocol (None when the threshold was chosen, or the run is no such test run)."""
    if preset != "paper" or split != "test" or threshold_chosen:
        return None
    return ("this test run decides its verdicts at 0.5, which is not the paper's protocol: the paper takes the "
            "threshold with the best F1 on validation (run the validation set too with --validation DEV.json, or "
            "reuse a validation run with --threshold-from RUN). AUROC does not depend on it; accuracy and F1 do")
