"""The parts of ``miniagent.validation``, one idea each (standard library only): ``types`` (JSON
type names), ``values`` (equality, uniqueness, exact multiples, short previews of JSON values),
``context`` (one check's root schema, cancel event and deadline; local ``$ref``), ``ecma_regex``
and ``unicode_classes`` (ECMA-262 patterns as ``re`` patterns), ``bounded_search`` and
``regex_child`` (a pattern search that a cancel or a deadline can stop), ``unevaluated``
(``unevaluatedProperties`` / ``unevaluatedItems``), ``schema_problem`` (a schema's own typos)."""
