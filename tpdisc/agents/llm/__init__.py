"""Agents whose choices a language model makes (``--agents llm``)."""
