"""What exists only to match funsor 0.4.8's names and private helpers. Nothing in the
engine, terms, atoms or algorithms imports this package; the faces at funsor's module paths
(``funsor_core.gaussian``, ``funsor_core.cnf``, ...) do."""
