"""Conversion between funsors and arrays (``data``: ``to_data``, ``to_funsor``, ``@function``)."""
