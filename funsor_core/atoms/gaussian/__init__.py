"""The Gaussian atom family: the term (``gaussian``), square-root information algebra on
arrays (``arrays``, ``linalg``), the algebra on funsors (``algebra``) and closed-form
expectations (``expectation``)."""
