"""Talking to language models: the OpenAI-compatible client and a local server speaking the
same API (scripted answers, for tests and for trying the tool without a model)."""
