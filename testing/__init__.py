"""Test doubles shipped for CLAIRE's tests and users' own: the background HTTP server they all run
on (``http_server``), an OpenAI-compatible server (``mock_openai``) with its quirks mode
(``quirks``), recorded answers of a real model (``cassette``), an oracle model for a dataset
(``oracle``), a scripted chat backend (``scripted``), scripted models and a keyword retriever
(``doubles``), models for the benchmarks (``bench_models``), a fake system (``fake_system``),
wiki-dump fixtures (``dumps``), a live wiki's event stream and API (``wiki_doubles``), the WikiChat
search API (``wikichat_mock``), ``claire serve``'s search route (``search_server``) and the
``claire`` command run in a subprocess with an environment of its own (``cli``).

May import any layer below the CLI (``agent``, ``tools``, ``llm``, ``tasks``, ``indexes``, ...);
nothing imports it but tests and the benchmarks in ``bench/``.
"""
