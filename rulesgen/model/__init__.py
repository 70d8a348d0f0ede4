"""The models: the catalog as frozen dataclasses (catalog.py), the roles of the names the code reads,
the hand-made panels' specs, every generated name (conventions.py) and the output models builders make
and renderers write (output.py)."""
