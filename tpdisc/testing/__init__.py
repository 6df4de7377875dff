"""Stand-ins for the outside world, for tests, benchmarks and manual runs: a local
OpenAI-compatible chat server (``chat_server``), a scripted protocol author for the search
(``fake_author``) and a scripted player for LLM agents (``llm_player``). Nothing here talks
to the internet, and no module of the package that does the work imports from here.
"""
