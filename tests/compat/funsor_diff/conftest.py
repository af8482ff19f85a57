# execute.py imports ``funsor`` (funsor 0.4.8 or the shim) and reads sys.argv at import, and
# __main__.py starts the runs: both run only in the clients venv, never under pytest.
collect_ignore = ["execute.py", "__main__.py"]
