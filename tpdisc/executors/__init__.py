"""Where simulations run: one after another here (``serial``), spread over processes
(``process``) or over a Ray cluster (``ray``); ``make`` picks one by name, and
``worker_server`` starts the server that process pools fork their workers from.

Every executor returns results in task order and calls ``on_result`` as each one arrives,
so progress bars move whatever the engine. Tasks are deterministic given their own fields
(a seed among them), so every executor gives the same results for the same tasks.

This package's ``__init__`` imports nothing: ``worker_server`` must load before anything
heavy does.
"""
