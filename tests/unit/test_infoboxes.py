"""The infobox pass: values normalised by each edition's conventions, fields aligned, clear
mismatches told from text, and an infobox row joining the sentence that disputes the same figures."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from claire.resolving.flags import same_contradictions
from claire.resolving.infoboxes import (
    compare_infoboxes,
    compare_values,
    dispute_numbers,
    infobox_fields,
    parse_number,
    value_parts,
)
from claire.tasks.sides.records import Side, SidesCase


@pytest.mark.parametrize("text, language, value", [
    ("10,1", "de", 10.1), ("530.000", "de", 530000), ("1,083", "en", 1083), ("110.6", "en", 110.6),
    ("18 000", "fr", 18000), ("2,5", "fr", 2.5), ("110.6", "de", 110.6)])
def test_numbers_read_by_the_editions_conventions(text, language, value):
    assert parse_number(text, language)[0] == pytest.approx(value)


def test_dates_quantities_and_running_times_are_normalised():
    parts, rest = value_parts("7 novembre 1867, Cracovie", "fr")
    assert [(p.kind, p.amount) for p in parts] == [("date", (1867, 11, 7))] and "Cracovie" in rest
    assert value_parts("31. März 1890", "de")[0][0].amount == (1890, 3, 31)
    assert value_parts("9 de noviembre de 1967", "es")[0][0].amount == (1967, 11, 9)
    height = value_parts("110.6 m (363 ft)", "en")[0][0]
    assert (height.kind, height.dimension, height.amount) == ("quantity", "length", 110.6)
    assert value_parts("47:03", "en")[0][0].dimension == "time"


@pytest.mark.parametrize("a, la, b, lb, verdict", [
    ("31 March 1889", "en", "31. März 1890", "de", "differs"),
    ("31 March 1889", "en", "31 mars 1889", "fr", "same"),
    ("330 m (1,083 ft)", "en", "330 m", "fr", "same"),
    ("1,083 ft", "en", "330 m", "de", "same"),  # units converted
    ("110.6 m (363 ft)", "en", "120 m", "de", "differs"),
    ("10.1 m (33 ft)", "en", "10,1 m", "de", "same"),
    ("about 6,650 km", "en", "6 695 km", "fr", "same"),  # approximate: within five percent
    ("17", "en", "18", "fr", "differs"),
    ("Lattice tower", "en", "Tour de télécommunications", "fr", "to the model"),
    ("7 November 1867, Warsaw", "en", "7 novembre 1867, Cracovie", "fr", "to the model"),
    ("Stephen Sauvestre", "en", "Stephen Sauvestre", "de", "same"),
    ("5 ft 7 in", "en", "1,71 m", "es", "same"),  # feet and inches read as one length
    ("6′10″ (2.08 m)", "en", "1,71 m", "es", "differs"),
    ("1969", "en", "26 septembre 1969", "fr", "same"),  # a year agrees with any day of it
])
def test_values_compared(a, la, b, lb, verdict):
    assert compare_values(a, la, b, lb)[0] == verdict


def test_a_mismatch_names_the_values_in_dispute():
    verdict, why, disputed = compare_values("31 March 1889", "en", "31. März 1890", "de")
    assert disputed == ("31 March 1889", "31. März 1890") and "dates differ" in why


def test_the_disputed_figures_are_those_one_side_gives_and_the_other_lacks():
    assert dispute_numbers("31 March 1889", "en", "31. März 1890", "de") == dispute_numbers("1889", None, "1890", "de")
    assert dispute_numbers("18 titres", "fr", "17 tracks", None) == frozenset({(18.0,), (17.0,)})
    assert dispute_numbers("Cracovie", "fr", "Warsaw", None) is None


def _encoder(groups: dict[str, int]):
    """A scripted embedder: texts whose field name falls in the same group point the same way."""
    def encode(texts):
        vectors = []
        for text in texts:
            name = text.split(":")[0].strip()
            vector = np.full(8, 0.02)
            vector[groups.get(name, 7)] = 1.0
            vectors.append(vector / np.linalg.norm(vector))
        return np.array(vectors)
    return encode


def test_two_infoboxes_aligned_and_compared():
    english = SimpleNamespace(id="en-box", document_title="Saturn V", content=(
        "Height: 110.6 m (363 ft)\nStages: 3\nFirst flight: 9 November 1967\nFunction: Crewed lunar launch vehicle\n"
        "Country of origin: United States"))
    german = SimpleNamespace(id="de-box", document_title="Saturn V", content=(
        "Höhe: 120 m\nStufen: 3\nErststart: 9. November 1967\nFunktion: Bemannte Mondrakete"))
    encode = _encoder({"Height": 0, "Höhe": 0, "Stages": 1, "Stufen": 1, "First flight": 2, "Erststart": 2,
                       "Function": 3, "Funktion": 3})
    comparison = compare_infoboxes(english, german, language="en", other_language="de", encode=encode)
    verdicts = {row.field: row.verdict for row in comparison.rows}
    assert verdicts == {"Height": "differs", "Stages": "same", "First flight": "same", "Function": "to the model"}
    assert comparison.unaligned == ["Country of origin"] and comparison.other_unaligned == []
    assert next(row for row in comparison.rows if row.verdict == "differs").disputed == ("110.6 m", "120 m")


def test_infobox_fields_read_both_colon_styles():
    assert infobox_fields("Hauteur : 330 m\nno colon here\nHöhe: 330 m") == [("Hauteur", "330 m"), ("Höhe", "330 m")]


def test_an_infobox_row_joins_the_sentence_that_disputes_the_same_figures():
    def side(text, title, block, language):
        return Side(text=text, document_title=title, block_id=block, language=language)

    text_case = SidesCase(fact=side("Der Turm wurde 1890 eingeweiht.", "Eiffelturm", "de-text", "de"),
                          passage=side("It opened in 1889.", "Eiffel Tower", "en-text", None),
                          values=("1890", "1889"), values_from="model")
    infobox_case = SidesCase(fact=side("Eröffnung: 31. März 1890", "Eiffelturm", "de-box", "de"),
                             passage=side("Inaugurated: 31 March 1889", "Eiffel Tower", "en-box", None),
                             values=("31. März 1890", "31 March 1889"), values_from="infobox")
    other = SidesCase(fact=side("Höhe: 120 m", "Saturn V", "s-de", "de"), passage=side("Height: 110.6 m", "Saturn V", "s-en", None),
                      values=("120 m", "110.6 m"), values_from="infobox")
    assert same_contradictions([text_case, infobox_case, other]) == [[0, 1], [2]]


def test_the_alignment_is_scored_against_infosyncs_layout(tmp_path):
    """A folder in InfoSync's published layout (gold pairs and table.html files, written here)."""
    import json

    from claire.bench.languages import infosync_tables, measure_infobox_alignment

    tables = tmp_path / "Final_Test_Set_Eng_X" / "Planet" / "Mars"
    for language, rows in {"en": [("Mass", "6.42 × 10 | 23 | kg"), ("Moons", "2")],
                           "de": [("Masse", "6,42 · 10 | 23 | kg"), ("Monde", "2"), ("Bild", "x.png")]}.items():
        (tables / language).mkdir(parents=True)
        (tables / language / "table.html").write_text(
            '<table border="1">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>")
    (tmp_path / "Final_Test_Set_Eng_X.json").write_text(json.dumps(
        {"Planet": {"Mars": {"de": [["Mass", "Masse"], ["Moons", "Monde"]], "fr": [["Mass", "Masse"]]}}}))
    assert infosync_tables(tables / "en" / "table.html")[0] == ("Mass", "6.42 × 10, 23, kg")
    encode = _encoder({"Mass": 0, "Masse": 0, "Moons": 1, "Monde": 1, "Bild": 2})
    result = measure_infobox_alignment(tmp_path, encode)
    assert (result["table_pairs"], result["skipped"], result["correct"], result["gold"]) == (1, 1, 2, 2)
    assert result["f1"] == 1.0
