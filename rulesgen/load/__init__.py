"""User input into the model: YAML with file:line, mapping readers, rulesgen.yaml into Settings, the
training jobs' metric contract, scenarios and exporter dialects, the config template, and the catalog
resolved for one configuration (resolved.py). rulesgen/catalog/ loads catalog/ beside it."""
