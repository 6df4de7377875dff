"""The templates of tpdisc's HTML pages, rendered by Jinja2 with auto-escaping.

What a page shows comes from run folders, which may come from anyone (an LLM wrote the
protocols, a colleague sent the folder, a disk damaged it): ids, names, numbers and texts
are handed to the templates as they are, and Jinja2 escapes every one of them. Only what
is HTML by construction is passed as :class:`~markupsafe.Markup`: the shared CSS and
script (constants of this package) and code that pygments highlighted (it escapes too).
No page interpolates HTML by hand.
"""

from __future__ import annotations

from typing import Any

from jinja2 import DictLoader, Environment, StrictUndefined

TEMPLATES = {
    "page.html": """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{ title }}</title>
<style>{{ style }}</style>
</head>
<body>
{% block body %}{{ body }}{% endblock %}
</body>
</html>
""",
    "macros.html": """\
{% macro facts(items) -%}
<dl class="facts">{% for key, value in items %}<dt>{{ key }}</dt><dd>{{ value }}</dd>\
{% endfor %}</dl>
{%- endmacro %}
""",
    "run_index.html": """\
{% extends "page.html" %}{% from "macros.html" import facts %}
{% block body %}{% if back %}<p><a href="{{ back[0] }}">&larr; {{ back[1] }}</a></p>
{% endif %}<h1>Search run {{ run_dir }}</h1>
<dl class="facts">{% for key, value in summary %}<dt>{{ key }}</dt><dd>{{ value }}</dd>\
{% endfor %}{% if at_work %}<dt>at work</dt><dd>{% for href, name in at_work %}\
{% if not loop.first %}, {% endif %}<a href="{{ href }}">{{ name }}</a>{% endfor %} \
(flow, content, agents over a game)</dd>{% endif %}</dl>
{% for note in notes %}<p class="description">{{ note }}</p>
{% endfor %}<h2>Configuration</h2>
{% if config %}{{ facts(config) }}{% else %}<p>no {{ config_file }}</p>{% endif %}
<h2>Best fitness by iteration</h2>
<img src="{{ figure }}" alt="best fitness by iteration" width="700">
<h2>Protocols ({{ rows | length }})</h2>
<p>Click a header to sort.</p>
<table class="protocols">
<thead><tr>{% for h in headers %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>
{% for r in rows %}<tr{% if r.status != "valid" %} class="invalid"{% endif %}>\
<td data-sort="{{ r.order }}"><a href="{{ protocols }}/{{ r.page }}">{{ r.name }}</a></td>\
<td class="num" data-sort="{{ r.iteration }}">{{ r.iteration }}</td>\
<td>{{ r.mode }}</td><td>{{ r.status }}</td>\
<td class="num" data-sort="{{ r.score }}">{{ r.fitness }}</td>\
{% if fresh %}<td class="num" data-sort="{{ r.fresh_sort }}">{{ r.fresh }}</td>{% endif %}\
<td class="num" data-sort="{{ r.parent_sort }}">{% if r.parent_page is not none %}\
<a href="{{ protocols }}/{{ r.parent_page }}">{{ r.parent }}</a>\
{% elif r.parent is not none %}{{ r.parent }}{% endif %}</td></tr>
{% endfor %}</tbody>
</table>
<script>{{ script }}</script>{% endblock %}
""",
    "protocol.html": """\
{% extends "page.html" %}
{% macro ref(i) %}{% if i in known %}<a href="{{ known[i] }}">{{ names[i] }}</a>\
{% else %}{{ names.get(i, "?") }}{% endif %}{% endmacro %}
{% block body %}<p><a href="../index.html">&larr; all protocols</a></p>
<h1>{{ label }}</h1>
<dl class="facts"><dt>status</dt><dd>{{ c.status }}</dd>\
<dt>mode</dt><dd>{{ c.mode }}</dd><dt>iteration</dt><dd>{{ c.iteration }}</dd>\
<dt>fitness</dt><dd>{{ fitness }}</dd>\
{% if fresh is not none %}<dt>fresh seeds</dt><dd>{{ fresh }}</dd>{% endif %}\
<dt>proposer</dt><dd>{{ c.proposer }}{% if c.model %} ({{ c.model }}){% endif %}</dd>\
<dt>parent</dt><dd>{% if c.parent_id is not none %}{{ ref(c.parent_id) }}{% else %}none\
{% endif %}</dd>\
<dt>lineage</dt><dd>{% for i in c.lineage %}{% if not loop.first %} &larr; {% endif %}\
{{ ref(i) }}{% else %}none{% endfor %}</dd>\
{% if portrait is not none %}<dt>at work</dt><dd><a href="{{ portrait }}">portrait</a> \
(what it does over a game)</dd>{% endif %}\
{% if c.contrast_ids %}<dt>contrasts</dt><dd>{% for i in c.contrast_ids %}\
{% if not loop.first %}, {% endif %}{{ ref(i) }}{% endfor %}</dd>{% endif %}\
{% if c.repair_of is not none %}<dt>repair of</dt><dd>{{ ref(c.repair_of) }}</dd>{% endif %}\
{% if c.duplicate_of is not none %}<dt>same code as</dt><dd>{{ ref(c.duplicate_of) }}</dd>\
{% endif %}</dl>
{% if c.error %}<h2>Error</h2>
<pre class="error">{{ c.error }}</pre>
{% endif %}<h2>Description</h2>
<p class="description">{{ c.description or "(none)" }}</p>
{% if c.logging %}<h2>Logging</h2>
<p class="description">{{ c.logging }}</p>
{% endif %}{% if c.reasoning %}<h2>Reasoning</h2>
<p class="description">{{ c.reasoning }}</p>
{% endif %}{% if code %}<h2>Code</h2>
{{ code }}
{% endif %}{% if diff is not none %}<h2>Changes from the parent</h2>
{% if diff %}{{ diff }}{% else %}<p>The same code as its parent.</p>{% endif %}
{% endif %}{% endblock %}
""",
}

ENVIRONMENT = Environment(
    loader=DictLoader(TEMPLATES),
    autoescape=True,
    undefined=StrictUndefined,  # a misspelt name is an error, not an empty cell
    keep_trailing_newline=True,
)


def render(name: str, **context: Any) -> str:
    """The page of template ``name`` with ``context``; every value not Markup is escaped."""
    return ENVIRONMENT.get_template(name).render(**context)
