"""Which a2 extension versions this package serves.

A PEP 440 specifier over the extension's version (``SELECT extversion FROM
pg_extension WHERE extname = 'a2'``). 0.2.0 serves every call made without
the 0.3.0 options (``not_before``, ``retry_after_ms``); 0.3.0 serves all of
them; 0.4.0 keeps the 0.3.0 behaviour for a caller that uses none of its
additions, which this package does not call. The README says the same.
"""

A2_VERSIONS = ">=0.2.0,<0.5.0"
