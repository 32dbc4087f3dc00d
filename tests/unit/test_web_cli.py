"""``claire serve`` as a subprocess: it starts, answers, needs its token, and refuses to listen
beyond loopback without one (a one-line message, exit 2)."""

from __future__ import annotations




def test_the_extension_manifest_is_v3_and_names_files_it_ships():
    import json
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "web" / "extension"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["manifest_version"] == 3
    script = manifest["content_scripts"][0]
    assert script["matches"] == ["https://*.wikipedia.org/wiki/*"] and script["js"] == ["panel.js", "content.js"]
    for name in [*script["js"], *script["css"], manifest["options_ui"]["page"], "options.js"]:
        assert (folder / name).is_file(), name
    for name in ("panel.js", "content.js", "options.js"):  # no HTML parsing of anything in the extension
        assert "innerHTML" not in (folder / name).read_text() and "insertAdjacentHTML" not in (folder / name).read_text()
